"""Stage `exact`: the four demonstrations of the exact toy (reasonrl.studies.exact). Reads params section
`exact`, writes reports/exact/results.json and reports/metrics/exact.json."""

import sys
from dataclasses import asdict

import torch
from tqdm import tqdm

from reasonrl.config import load_params
from reasonrl.io import write_json
from reasonrl.studies import exact

cfg = exact.load_config(load_params("params.yaml"))
torch.set_num_threads(1)  # bit-for-bit reproducible, and the other core stays free
with tqdm(file=sys.stderr, bar_format="{elapsed} {desc}") as bar:
    results = exact.run(cfg, progress=bar.set_description_str)
write_json(exact.RESULTS, asdict(results))
write_json(exact.METRICS, exact.headline_metrics(results))
print(f"exact: {results.seconds:.1f} s -> {exact.RESULTS}, {exact.METRICS}", file=sys.stderr)
