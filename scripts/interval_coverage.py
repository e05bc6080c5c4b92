"""Coverage of reasonrl.stats' 95% intervals on simulated studies (docs/studies.md, "Intervals"), and of run 2's
estimands (reasonrl.estimands; docs/studies.md, "Run 2's estimands and gatekeeping").

    python scripts/interval_coverage.py [--datasets 2000]
    python scripts/interval_coverage.py --estimands [--datasets 4000] [--out docs/coverage/estimands.json]

Without --estimands: one row per design of reasonrl.coverage.Design: runs per arm, run-offset sd, interaction sd,
paired or not, the true difference and the share of datasets whose interval covers it.

--estimands: one row per design of reasonrl.coverage.ThreeLevel (bases, RL seeds and problems; cross-base with 2 RL
seeds per base, or one base with its RL seeds as units; 3, 5 and 10 units; bases near 0, mid and near 1; no effect
or a large one) and scale (the log error ratio, the raw gain): the truth, the 95% interval's coverage, the one-sided
bounds' misses in each tail at 2.5% (and at 5%), the misses without the problem term, and the exact sign test's
one-sided rejections at 2.5%. With --out, the rows are also written there as JSON (tests/test_estimands.py reads
the committed file)."""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from dataclasses import asdict
from pathlib import Path

from tqdm import tqdm

from reasonrl.coverage import Design, ThreeLevel, coverage, estimand_coverage

STARTS = {"near 0": -3.5, "mid": 0.0, "near 1": 3.5}  # mean logit of a base
EFFECTS = ((0.0, 0.0), (3.0, 0.5))  # (RL's logit shift, its per-problem sd): none, or large and uneven over problems


def estimand_designs() -> list[tuple[str, ThreeLevel]]:
    """(start label, design) for every row of --estimands, in order."""
    out = []
    for single, units, (label, start), (effect, inter) in itertools.product(
            (False, True), (3, 5, 10), STARTS.items(), EFFECTS):
        out.append((label, ThreeLevel(units=units, seeds=2, start=start, effect=effect, interaction_sd=inter,
                                      single=single)))
    return out


def run_estimands(datasets: int, out: Path | None) -> None:
    rows = []
    print("| unit | units | start | base / RL pass@1 | effect (logit) | scale | truth | coverage | miss low | "
          "miss high | at 5%: low, high | no problem term: low, high | sign test: up, down |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for i, (label, d) in enumerate(tqdm(estimand_designs(), desc="designs")):
        seed = 1000 + i
        res = estimand_coverage(d, datasets, seed=seed)
        acc = (d.accuracy(), d.accuracy(rl=True))
        for scale, r in res.items():
            rows.append({"design": asdict(d), "start_label": label, "seed": seed, "datasets": datasets,
                         "scale": scale, "base_pass1": acc[0], "rl_pass1": acc[1], **r})
            print(f"| {'RL seed' if d.single else 'base'} | {d.units} | {label} | {acc[0]:.3f} / {acc[1]:.3f} | "
                  f"{d.effect:g} | {scale} | {r['truth']:+.3f} | {r['coverage']:.3f} | {r['miss_low']:.3f} | "
                  f"{r['miss_high']:.3f} | {r['miss_low_5']:.3f}, {r['miss_high_5']:.3f} | "
                  f"{r['nopt_miss_low']:.3f}, {r['nopt_miss_high']:.3f} | {r['sign_up']:.3f}, {r['sign_down']:.3f} |",
                  flush=True)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"command": "python " + " ".join(sys.argv), "rows": rows}, indent=1) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", type=int, default=None, help="per design (default 2000; --estimands 4000)")
    ap.add_argument("--estimands", action="store_true", help="run 2's estimands (reasonrl.estimands)")
    ap.add_argument("--out", type=Path, default=None, help="--estimands: write the rows here as JSON")
    args = ap.parse_args()
    if args.estimands:
        run_estimands(args.datasets or 4000, args.out)
        return
    rows = list(itertools.product((True, False), (3, 5, 10), (0.0, 0.5), (0.5, 0.1), (0.0, 1.0)))
    print("| design | runs | effect (logit) | run sd | interaction sd | truth | coverage |")
    print("|---|---|---|---|---|---|---|")
    for paired, runs, effect, run_sd, inter in tqdm(rows, desc="designs"):
        d = Design(runs=runs, effect=effect, run_sd=run_sd, shared_sd=run_sd, interaction_sd=inter, paired=paired)
        cov = coverage(d, args.datasets or 2000, seed=runs)
        print(f"| {'paired' if paired else 'unpaired'} | {runs} | {effect} | {run_sd} | {inter} | "
              f"{d.truth():+.4f} | {cov:.3f} |", flush=True)


if __name__ == "__main__":
    main()
