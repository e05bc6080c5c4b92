"""The fixed cost of a stage started warm (forked from a zygote, `reasonrl repro`'s default) and cold
(`--cold`: fresh interpreters, as `dvc repro`), side by side on the same stages of this workspace.

    python benchmarks/warm_start.py data@hop data@chain report_exact --reps 3   (in a clone you can rebuild in)

Each rep runs cold and warm one after the other (the order swaps every rep): the stages' outputs are
removed, `reasonrl repro -j 1 [--cold] <stages>` rebuilds them in one run, and a stage's fixed cost is
the runner's seconds for it minus the seconds it timed itself (its reports/timing file), as in
scripts/fixed_cost.py. A warm run's first stage also waits for the worker's zygote to import its modules
(once per worker and run), so medians are printed. Each rebuild must give back the outputs dvc.lock
records (checked: the script stops otherwise), so the workspace ends as it began, timing files aside.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

import yaml

FINISHED = re.compile(r"finished (\S+)\s+in ([0-9.]+)s \((\w+)\)")


def lock_outs(stage: str) -> list[dict]:
    entry = yaml.load(Path("dvc.lock").read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return entry["stages"][stage]["outs"]


def md5(path: str) -> str:
    return hashlib.md5(Path(path).read_bytes()).hexdigest()


def rebuild(stages: list[str], cold: bool) -> dict[str, float]:
    """Remove the stages' outputs, rebuild them in one run, check the bytes; {stage: fixed seconds}."""
    outs = {stage: lock_outs(stage) for stage in stages}
    for o in (o for os_ in outs.values() for o in os_):
        Path(o["path"]).unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "reasonrl.runner.cli", "repro", "-j", "1", *(["--cold"] if cold else []), *stages]
    run = subprocess.run(cmd, capture_output=True, text=True)
    # "unchanged" too: a stage that ran and wrote a timing file equal to the last one (seconds are rounded)
    # leaves its dvc.lock entry as it was; its outputs were removed, so it did run
    ran = {m.group(1): float(m.group(2)) for m in FINISHED.finditer(run.stderr) if m.group(3) in ("ran", "unchanged")}
    if run.returncode != 0 or not set(stages) <= set(ran):
        sys.exit(f"not every stage ran:\n{run.stderr[-3000:]}")
    fixed = {}
    for stage in stages:
        for o in outs[stage]:
            if o["path"].startswith("reports/timing/"):
                fixed[stage] = ran[stage] - float(json.loads(Path(o["path"]).read_text())["seconds"])
            elif md5(o["path"]) != o["md5"]:
                sys.exit(f"{o['path']}: md5 {md5(o['path'])}, dvc.lock records {o['md5']}")
        if stage not in fixed:
            sys.exit(f"{stage} writes no timing file")
    return fixed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stages", nargs="+")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    fixed: dict[tuple[str, str], list[float]] = {}
    for rep in range(args.reps):
        for cold in ((True, False) if rep % 2 == 0 else (False, True)):
            mode = "cold" if cold else "warm"
            for stage, secs in rebuild(args.stages, cold).items():
                fixed.setdefault((stage, mode), []).append(secs)
            print(f"rep {rep + 1} {mode}: " + ", ".join(f"{s} {fixed[s, mode][-1]:.2f} s" for s in args.stages),
                  flush=True)
    print("\n| stage | cold: fixed s (median) | warm: fixed s (median) | saved |")
    print("|---|---:|---:|---:|")
    for stage in args.stages:
        c, w = statistics.median(fixed[stage, "cold"]), statistics.median(fixed[stage, "warm"])
        print(f"| `{stage}` | {c:.2f} | {w:.2f} | {c - w:.2f} |")
    c, w = ([x for (_, m), xs in fixed.items() if m == mode for x in xs] for mode in ("cold", "warm"))
    print(f"| all | {statistics.median(c):.2f} | {statistics.median(w):.2f} | "
          f"{statistics.median(c) - statistics.median(w):.2f} |")


if __name__ == "__main__":
    main()
