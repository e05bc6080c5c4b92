"""Stage `data`: write the fixed test sets (`data.sets`) and the validation sets (`data.validation`,
disjoint from every test set) to data/<name>.jsonl."""

import time

from reasonrl.io import write_jsonl
from reasonrl.pipeline import DataConfig, build_data_sets, section, stage_setup, write_timing

t0 = time.perf_counter()
params, _, _ = stage_setup()
cfg = section(params, "data", DataConfig)
for name, problems in build_data_sets(cfg).items():
    write_jsonl(f"data/{name}.jsonl", [p.to_dict() for p in problems])
write_timing("reports/timing/data.json", {"seconds": round(time.perf_counter() - t0, 2)})
