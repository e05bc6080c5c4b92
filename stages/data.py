"""Stage `data@<task>`: write the fixed sets of `data.<task>` (test sets, and validation sets disjoint from
every test set) to data/<task>_<role>.jsonl.

    python stages/data.py <task>
"""

import time

from reasonrl.io import write_jsonl
from reasonrl.pipeline import build_data_sets, data_config, data_path
from reasonrl.runtime import stage_args, stage_setup, write_timing

t0 = time.perf_counter()
params, _, _ = stage_setup()
(task,) = stage_args("<task>")
for role, problems in build_data_sets(task, data_config(params, task)).items():
    write_jsonl(data_path(task, role), [p.to_dict() for p in problems])
write_timing(f"reports/timing/data_{task}.json", {"seconds": round(time.perf_counter() - t0, 2)})
