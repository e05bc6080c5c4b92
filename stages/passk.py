"""Stage `passk@<label>`: pass@k (N samples per problem), random-guess baseline, distinct answers and
entropy of model passk.models.<label> on each set of passk.sets or of its own `sets` (data/<its task>_<set>.jsonl;
every problem, or passk.eval.problems of each set: the first of each cell, passk_eval.subset), from its draw's
generator seed ->
reports/passk/data/<label>.json and the plot data reports/passk/curve_<label>.csv."""

import time

from reasonrl.checkpoint import load_checkpoint
from reasonrl.config import check, from_dict
from reasonrl.io import write_json, write_text
from reasonrl.pipeline import data_path, read_problems
from reasonrl.runtime import stage_args, stage_setup, write_timing
from reasonrl.studies import passk_data_path
from reasonrl.studies.passk_eval import READS, Config, curve_csv, measure
from reasonrl.tokens import check_sets_fit

t0 = time.perf_counter()
params, device, _ = stage_setup()
(label,) = stage_args("<label>")
section = params.get("passk") or {}
cfg = from_dict(Config, {k: section[k] for k in READS if k in section}, "passk")
entry = cfg.models[label]
model, _ = load_checkpoint(f"models/{entry.model}.pt", device)
check(model.cfg.task == entry.task, f"passk.models.{label}.task", f"models/{entry.model}.pt is a "
      f"{model.cfg.task!r} model, not {entry.task!r}", "name the checkpoint's own task (dvc.yaml reads its sets by it)")
names, eval_cfg = cfg.plan(label)
sets = {s: read_problems(data_path(entry.task, s)) for s in names}
check_sets_fit(model.cfg.max_len, f"models/{entry.model}.pt", sets)
result = measure(model, sets, eval_cfg)
write_json(passk_data_path(label), {"model": entry.model, "task": entry.task, "draw": entry.draw, **result})
write_text(f"reports/passk/curve_{label}.csv", curve_csv(result))
write_timing(f"reports/timing/passk_{label}.json", {"seconds": round(time.perf_counter() - t0, 2)})
