"""Stage `exact`: the four demonstrations of the exact toy (reasonrl.studies.exact). Reads params section
`exact`, writes reports/exact/results.json, reports/metrics/exact.json and its timing."""

import sys
import time
from dataclasses import asdict

from tqdm import tqdm

from reasonrl.io import write_json
from reasonrl.runtime import stage_setup, write_timing
from reasonrl.studies import exact

params, _, _ = stage_setup()
cfg = exact.load_config(params)
t0 = time.perf_counter()
with tqdm(file=sys.stderr, bar_format="{elapsed} {desc}") as bar:
    results = exact.run(cfg, progress=bar.set_description_str)
seconds = time.perf_counter() - t0  # in reports/timing only: results.json stays the same bytes on a rerun
write_json(exact.RESULTS, asdict(results))
write_json(exact.METRICS, exact.headline_metrics(results))
write_timing("reports/timing/exact.json", {"seconds": round(seconds, 2)})
print(f"exact: {seconds:.1f} s -> {exact.RESULTS}, {exact.METRICS}", file=sys.stderr)
