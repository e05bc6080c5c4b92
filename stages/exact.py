"""Stage `exact`: the enumerable toy — gradient estimators, training to the analytic optimum, β sweep,
KL placement. Reads params section `exact`, writes reports/exact/results.json and
reports/metrics/exact.json."""

from __future__ import annotations

import argparse
import sys

import torch
from tqdm import tqdm

from reasonrl.config import from_dict, load_params
from reasonrl.exact import ExactConfig, headline_metrics, run_all
from reasonrl.io import write_json


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--params", default="params.yaml", help="params file (default: params.yaml)")
    parser.add_argument("--out", default="reports/exact/results.json")
    parser.add_argument("--metrics", default="reports/metrics/exact.json")
    parser.add_argument("--timing", default="reports/timing/exact.json")
    args = parser.parse_args(argv)
    cfg = from_dict(ExactConfig, load_params(args.params).get("exact"), "exact")
    # One thread: results are bit-for-bit reproducible and the stage leaves the other core free.
    torch.set_num_threads(1)
    with tqdm(file=sys.stderr, bar_format="{elapsed} {desc}") as bar:
        results = run_all(cfg, progress=bar.set_description_str)
    write_json(args.out, results)
    write_json(args.metrics, headline_metrics(results))
    write_json(args.timing, {"seconds": results["seconds"]})
    print(f"exact: {results['seconds']:.1f} s -> {args.out}, {args.metrics}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
