"""The wall-clock table of a `reasonrl repro` run from its log: summed stage seconds per stage kind, and
the run's wall clock (first start to last finish, per segment).

    python scripts/wallclock.py /tmp/full.log [more logs of the same build, e.g. a resumed part]

Reads the `[hh:mm:ss] finished <stage>  in <s>s (ran)` lines that `reasonrl repro` prints; prints markdown.
A run resumed in the same log is one segment per runner start (its `machine` line); a segment ends at its last
line, or at a `# stopped <ISO time>` line written when it was stopped (killed or paused for good), so the
hours between segments do not count and the work a stop threw away does.
"""

import re
import sys
from collections import defaultdict
from datetime import datetime, timedelta

LINE = re.compile(r"^\[(\d\d:\d\d:\d\d)\] (start|finished|machine) +(\S+)(?:.* in ([0-9.]+)s \(ran\))?")
STOPPED = re.compile(r"^# stopped \d{4}-\d\d-\d\dT(\d\d:\d\d:\d\d)")


def _after(clock: str, last: datetime | None) -> datetime:
    """The time `clock` (hh:mm:ss) at or after `last`: past midnight when it reads more than 12 h earlier; a stop
    noted a little before the last logged line (a clock read by hand) is taken as that line."""
    t = datetime.strptime(clock, "%H:%M:%S")
    if last is None:
        return t
    t = t.replace(year=last.year, month=last.month, day=last.day)
    if t < last - timedelta(hours=12):
        t += timedelta(days=1)
    return max(t, last)


def timeline(paths: list[str]) -> tuple[list[tuple[str, float]], float]:
    """([(stage, seconds) of every `finished ... (ran)` line], the wall clock summed over the logs' segments:
    each segment's first line to its last, or to its `# stopped` line). A stage that ran in two parts counts
    twice: both took their time."""
    ran, wall = [], 0.0
    for path in paths:
        first = last = None
        for line in open(path):
            m, stop = LINE.match(line), STOPPED.match(line)
            if not (m or stop):
                continue
            if (stop or m.group(2) == "machine") and first is not None:  # a stop, or a resumed runner: a new segment
                end = _after(stop.group(1), last) if stop else last
                wall += (end - first).total_seconds()
                first = last = None
            if stop:
                continue
            t = _after(m.group(1), last)
            first, last = first or t, t
            if m.group(2) == "finished" and m.group(4):
                ran.append((m.group(3), float(m.group(4))))
        if first is not None:
            wall += (last - first).total_seconds()
    return ran, wall


def main(paths: list[str]) -> None:
    kinds, stage_total = defaultdict(list), 0.0
    ran, wall = timeline(paths)
    for stage, seconds in ran:
        kinds[stage.split("@")[0]].append(seconds)
    print("| stage kind | stages | summed stage seconds | mean per stage |")
    print("|---|---|---|---|")
    for kind, secs in sorted(kinds.items(), key=lambda kv: -sum(kv[1])):
        stage_total += sum(secs)
        print(f"| `{kind}` | {len(secs)} | {sum(secs):,.0f} | {sum(secs) / len(secs):,.0f} |")
    n = sum(map(len, kinds.values()))
    print(f"| all | {n} | {stage_total:,.0f} | |")
    print(f"\nwall clock {wall:,.0f} s ({wall / 60:.1f} min); "
          f"summed stage time / wall clock = {stage_total / wall:.2f}x")


if __name__ == "__main__":
    main(sys.argv[1:])
