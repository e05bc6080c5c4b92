"""Coverage of reasonrl.stats' 95% intervals on simulated studies (docs/studies.md, "Intervals").

    python scripts/interval_coverage.py [--datasets 2000]

Prints one row per design: runs per arm, run-offset sd, interaction sd, paired or not, the true
difference and the share of datasets whose interval covers it."""

from __future__ import annotations

import argparse
import itertools

from tqdm import tqdm

from reasonrl.coverage import Design, coverage


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", type=int, default=2000)
    args = ap.parse_args()
    rows = list(itertools.product((True, False), (3, 5, 10), (0.0, 0.5), (0.5, 0.1), (0.0, 1.0)))
    print("| design | runs | effect (logit) | run sd | interaction sd | truth | coverage |")
    print("|---|---|---|---|---|---|---|")
    for paired, runs, effect, run_sd, inter in tqdm(rows, desc="designs"):
        d = Design(runs=runs, effect=effect, run_sd=run_sd, shared_sd=run_sd, interaction_sd=inter, paired=paired)
        cov = coverage(d, args.datasets, seed=runs)
        print(f"| {'paired' if paired else 'unpaired'} | {runs} | {effect} | {run_sd} | {inter} | "
              f"{d.truth():+.4f} | {cov:.3f} |", flush=True)


if __name__ == "__main__":
    main()
