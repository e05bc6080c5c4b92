"""Stage `data`: write the fixed evaluation sets of `data.sets` to data/<name>.jsonl."""

import time

from reasonrl.io import write_json, write_jsonl
from reasonrl.pipeline import DataConfig, build_eval_set, section, stage_setup

t0 = time.perf_counter()
params, _ = stage_setup()
cfg = section(params, "data", DataConfig)
for name, set_cfg in cfg.sets.items():
    write_jsonl(f"data/{name}.jsonl", [p.to_dict() for p in build_eval_set(set_cfg)])
write_json("reports/timing/data.json", {"seconds": round(time.perf_counter() - t0, 2)})
