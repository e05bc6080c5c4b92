"""A design's stage-time table: what `reasonrl repro` would run, by kind and arm, from the last run's timings.

    python scripts/design_time.py [--jobs 2] [--json OUT] [targets ...]

The plan is `reasonrl repro --dry`'s (the stale stages of the targets, all by default), and each stage's
seconds are the same estimates (reasonrl.runner.progress.expected_seconds: its timing file from the run the
lock records, else its arm's median, else its kind's, plus DVC's overhead per stage). A stage never timed is
marked "new" in its arm's row. The wall estimate divides the stage time by --jobs, as `--dry` does: the
critical path is not a bound here (the longest chain, a chain base, its RL run and its pass@k, is under 20 min).
Printed as a markdown table (kind, arm, stages, new, seconds, share), one row per arm, largest first.
"""

from __future__ import annotations

import argparse
import json
import os
from collections import defaultdict
from pathlib import Path

from reasonrl.runner.plan import read_lock_entry, stale_plan
from reasonrl.runner.progress import _timed, arm, expected_seconds, fmt_duration, kind


def table(repo: str, targets: list[str]) -> tuple[list[dict], float]:
    """(rows per arm, total seconds) for the stale stages of `targets` in `repo`."""
    plan = stale_plan(repo, targets)
    seconds = expected_seconds(plan.root, plan.locks)
    rows: dict[str, dict] = defaultdict(lambda: {"stages": 0, "new": 0, "seconds": 0.0})
    for stage, (lockfile, key) in plan.locks.items():
        row = rows[arm(stage)]
        row["kind"] = kind(stage)
        row["stages"] += 1
        row["new"] += _timed(plan.root, read_lock_entry(lockfile, key)) is None
        row["seconds"] += seconds[stage]
    total = sum(r["seconds"] for r in rows.values())
    out = [{"arm": a, **r, "share": r["seconds"] / total} for a, r in rows.items()]
    return sorted(out, key=lambda r: -r["seconds"]), total


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("targets", nargs="*")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--repo", default=os.getcwd())
    args = p.parse_args()
    rows, total = table(args.repo, args.targets)
    by_kind: dict[str, float] = defaultdict(float)
    for r in rows:
        by_kind[r["kind"]] += r["seconds"]
    print("| kind | seconds | share |\n|---|---|---|")
    for k, s in sorted(by_kind.items(), key=lambda kv: -kv[1]):
        print(f"| {k} | {s:,.0f} | {s / total:.1%} |")
    print("\n| arm | stages | new | seconds | share |\n|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['arm']} | {r['stages']} | {r['new']} | {r['seconds']:,.0f} | {r['share']:.1%} |")
    n = sum(r["stages"] for r in rows)
    print(f"\n{n} stages, {fmt_duration(total)} of stage time ({total:,.0f} s); at -j {args.jobs}: about "
          f"{fmt_duration(total / args.jobs)}")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "seconds": total, "jobs": args.jobs}, indent=1) + "\n")


if __name__ == "__main__":
    main()
