"""Stage `passk@<label>`: pass@k (N samples per problem), random-guess baseline, distinct answers and
entropy of model passk.models.<label> on each set of passk.sets (data/<passk.task>_<set>.jsonl) ->
reports/passk/data/<label>.json and the plot data reports/passk/curve_<label>.csv."""

import time

from reasonrl.config import check, from_dict
from reasonrl.io import write_json, write_text
from reasonrl.model import load_checkpoint
from reasonrl.pipeline import data_path, read_problems, stage_args, stage_setup, write_timing
from reasonrl.studies import passk_data_path
from reasonrl.studies.passk_eval import READS, Config, curve_csv, measure

t0 = time.perf_counter()
params, device, _ = stage_setup()
(label,) = stage_args("<label>")
section = params.get("passk") or {}
cfg = from_dict(Config, {k: section[k] for k in READS if k in section}, "passk")
model, _ = load_checkpoint(f"models/{cfg.models[label]}.pt", device)
check(model.cfg.task == cfg.task, f"passk.models.{label}", f"models/{cfg.models[label]}.pt is a {model.cfg.task!r} "
      f"model; passk.task is {cfg.task!r}", "every model of one pass@k study reads the same sets")
result = measure(model, {s: read_problems(data_path(cfg.task, s)) for s in cfg.sets}, cfg.eval)
write_json(passk_data_path(label), {"model": cfg.models[label], **result})
write_text(f"reports/passk/curve_{label}.csv", curve_csv(result))
write_timing(f"reports/timing/passk_{label}.json", {"seconds": round(time.perf_counter() - t0, 2)})
