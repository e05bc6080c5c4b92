"""What `reasonrl repro`'s start order buys: the whole DAG list-scheduled on N workers from each stage's last timing
file, by `Schedule` (a stage that completes a report first, then the critical path) and by DVC's own order (the
ready stage that `dvc repro` would reach first). Nothing runs: each stage takes what `reasonrl repro` expects of it
(its timing file plus DVC's overhead, progress.expected_seconds), so the figures are the schedules' own.

    python benchmarks/schedule.py [-j 2] [--repo .]

Prints the makespan and when each result (a report, or a stage nothing waits for) finishes under each order.
"""

from __future__ import annotations

import argparse
import heapq
import sys
from pathlib import Path

from reasonrl.runner import dvc_adapter
from reasonrl.runner.plan import Schedule
from reasonrl.runner.progress import expected_seconds, fmt_duration


class DvcOrder(Schedule):
    """The ready stage that comes first in `dvc repro`'s order."""

    def pop(self) -> str:
        stage = min(self.ready, key=self.index.__getitem__)
        self.ready.remove(stage)
        return stage


def simulate(order: Schedule, seconds: dict[str, float], workers: int) -> dict[str, float]:
    """{stage: when it finishes} with `workers` stages at a time, each started as `order` picks."""
    clock, running, finished = 0.0, [], {}
    while order.ready or running:
        while order.ready and len(running) < workers:
            stage = order.pop()
            heapq.heappush(running, (clock + seconds[stage], stage))
        clock, stage = heapq.heappop(running)
        finished[stage] = clock
        order.done(stage)
    return finished


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--repo", default=".")
    args = ap.parse_args()
    root = str(Path(args.repo).resolve())
    plan = dvc_adapter.pipeline_order(root)  # as plan._dvc_stages, without asking which stages changed
    seconds = expected_seconds(root, {stage: (str(Path(root, "dvc.lock")), stage) for stage in plan})
    print(f"{len(plan)} stages, {fmt_duration(sum(seconds.values()))} of stage time, -j {args.jobs}")
    for name, kind in (("Schedule (reports first, then the critical path)", Schedule), ("DVC's order", DvcOrder)):
        order = kind(plan)
        reports = [s for s in plan if order.is_report(s)]
        done = simulate(order, seconds, args.jobs)
        at = ", ".join(f"{s} {done[s] / 3600:.2f} h" for s in sorted(reports, key=done.__getitem__))
        print(f"{name}: makespan {fmt_duration(max(done.values()))}; results at {at}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
