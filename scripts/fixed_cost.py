"""The per-stage fixed cost of a `reasonrl repro` run, from its log and the stages' timing files: the
runner's seconds for a stage minus the seconds the stage timed itself (its `reports/timing/*.json`, found
through the stage's dvc.lock entry). What is left is process start, imports, loading and writing, and
DVC's checks and lock update: the cost every stage pays whatever its work.

    python scripts/fixed_cost.py LOG [LOG ...]      (run in the workspace the logs built)

Prints one markdown row per log and stage kind: stages, median and mean fixed seconds, their sum.
A stage that ran again since the log was written has a newer timing file: run it before that.
"""

import json
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import yaml

FINISHED = re.compile(r"^\[\d\d:\d\d:\d\d\] finished (\S+)\s+in ([0-9.]+)s \(ran\)")
TIMING_DIR = "reports/timing/"


def timing_files(lock: Path) -> dict[str, str]:
    """{stage: its timing file} from dvc.lock's outs."""
    stages = (yaml.load(lock.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}).get("stages", {})
    return {name: o["path"] for name, entry in stages.items() for o in entry.get("outs") or []
            if str(o.get("path", "")).startswith(TIMING_DIR)}


def fixed_seconds(log: Path, files: dict[str, str], root: Path) -> dict[str, list[float]]:
    """{stage kind: [runner seconds - the stage's own seconds]} of the stages the log saw run."""
    out = defaultdict(list)
    for line in log.read_text().splitlines():
        m = FINISHED.match(line)
        if m and m.group(1) in files:
            own = json.loads((root / files[m.group(1)]).read_text())["seconds"]
            out[m.group(1).split("@")[0]].append(float(m.group(2)) - float(own))
    return out


def main(logs: list[str]) -> None:
    root = Path(".")
    files = timing_files(root / "dvc.lock")
    print("| log | stage kind | stages | median fixed s | mean fixed s | summed fixed s |")
    print("|---|---|---:|---:|---:|---:|")
    for log in logs:
        by_kind = fixed_seconds(Path(log), files, root)
        rows = [*sorted(by_kind.items()), ("all", [x for xs in by_kind.values() for x in xs])]
        for kind, xs in rows:
            if xs:
                print(f"| {Path(log).name} | `{kind}` | {len(xs)} | {statistics.median(xs):.1f} | "
                      f"{statistics.mean(xs):.1f} | {sum(xs):,.0f} |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
