"""How good `reasonrl repro`'s time left is: replay a run's logs through reasonrl/runner/progress.py and compare what
it said with the time that was in fact left. Two versions side by side: this checkout's and the one at REV.

    python scripts/eta_replay.py --against REV LOG [LOG ...]     (the logs of one run, in order)

The logs' parts are laid end to end on one clock, each from its first event to its last start or finish (the
gaps between them dropped); a stage stopped in one part and rerun in a later one counts once, where it finished.
Three situations, each with a lock holding the timing files a real run would find (`seconds` = the runner's
seconds from the log):
- a fresh build: no timing file at all;
- resumed after part k: the stages finished in parts 1..k timed, the rest never run;
- a design grown from 3 to 5 seeds: every stage timed except the seeds s3 and s4, which are the whole plan.
Printed: the time left said at the start against the time that was left, and the median and mean of
|said - left| / left at each finish (the last ten minutes left out: any error is large against them). For
the grown design, the predicted stage seconds of the new seeds against what they took. Only stages that
finished are replayed (a FAILED or skipped one, which a real run counts too, is left out).
"""

from __future__ import annotations

import argparse
import io
import json
import re
import statistics
import subprocess
import sys
import tempfile
import types
from pathlib import Path

import yaml

EVENT = re.compile(r"^\[(\d\d):(\d\d):(\d\d)\] (start|finished)\s+(\S+)\s+(?:in ([\d.]+)s \((\w+)\))?")
LAST_S = 600.0  # finishes with less left than this are not scored


def module(name: str, source: str) -> types.ModuleType:
    """progress.py's source as a module of its own, its relative imports (`from .lockfile ...`) from the
    installed reasonrl's runner (an older revision's progress.py, from before the runner was a package, imports
    the same names from there)."""
    mod = types.ModuleType(name)
    mod.__package__ = "reasonrl.runner"
    exec(compile(source, f"<{name}>", "exec"), mod.__dict__)
    return mod


def parts_of(logs: list[str]) -> list[list[tuple]]:
    """Each log's (seconds on the common clock, "start" | "finished", stage, seconds, status) events, of the
    stages that finished in that log."""
    parts, offset = [], 0.0
    for log in logs:
        events, base, prev = [], None, None
        for line in Path(log).read_text().splitlines():
            if not (m := EVENT.match(line)):
                continue
            t = int(m[1]) * 3600 + int(m[2]) * 60 + int(m[3])
            base = t if base is None else base
            while prev is not None and t < prev - 43200:  # past midnight (not two threads' lines a second apart)
                t += 86400
            prev = t
            events.append((t - base, m[4], m[5], float(m[6]) if m[6] else None, m[7]))
        if not events:
            continue
        done = {e[2] for e in events if e[1] == "finished"}
        parts.append([(t + offset, *rest) for t, *rest in events if rest[1] in done])
        offset += events[-1][0] + 1
    return parts


def lock_with(root: Path, timed: dict[str, float]) -> str:
    """A dvc.lock under root whose stages are `timed`, each with a timing file of those seconds."""
    (root / "reports/timing").mkdir(parents=True)
    stages = {}
    for stage, seconds in timed.items():
        path = f"reports/timing/{stage.replace('@', '_')}.json"
        (root / path).write_text(json.dumps({"seconds": seconds}))
        stages[stage] = {"cmd": "x", "outs": [{"path": path, "md5": "0"}]}
    (root / "dvc.lock").write_text(yaml.safe_dump({"schema": "2.0", "stages": stages}))
    return str(root / "dvc.lock")


def expected(mod, timed: dict[str, float], plan: list[str]) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as d:
        lock = lock_with(Path(d), timed)
        return mod.expected_seconds(d, {stage: (lock, stage) for stage in plan})


def replay(mod, parts: list[list[tuple]], k: int) -> tuple[float, float, list[float]]:
    """Resume at part k (1: a fresh build): (said at the start, left at the start, relative errors)."""
    timed = {e[2]: e[3] for p in parts[:k - 1] for e in p if e[1] == "finished" and e[4] == "ran"}
    events = [e for p in parts[k - 1:] for e in p]
    end, now = events[-1][0], [events[0][0]]
    prog = mod.Progress(expected(mod, timed, sorted({e[2] for e in events})), workers=2, file=io.StringIO(),
                        clock=lambda: now[0])
    said, errors = prog.left(), []
    for t, kind, stage, seconds, status in events:
        now[0] = t
        if kind == "start":
            prog.start(stage)
            continue
        prog.finish(stage, seconds if status == "ran" else None)
        if end - t > LAST_S:  # and so never 0
            errors.append(abs(prog.left() - (end - t)) / (end - t))
    return said, end - events[0][0], errors


def rate_replay(parts: list[list[tuple]], k: int) -> list[float]:
    """The baseline a plain progress bar gives (tqdm's time left with smoothing=0: stages left times the mean
    time per stage finished so far), resumed at part k and scored as `replay` scores: the relative errors."""
    events = [e for p in parts[k - 1:] for e in p]
    end, t0, total = events[-1][0], events[0][0], len({e[2] for e in events})
    done, errors = 0, []
    for t, kind, *_ in events:
        if kind == "finished":
            done += 1
            if end - t > LAST_S and t > t0:
                errors.append(abs((total - done) * (t - t0) / done - (end - t)) / (end - t))
    return errors


def spread(errors: list[float]) -> str:
    return (f"median {statistics.median(errors):.2f}, mean {statistics.mean(errors):.2f}" if errors
            else "none scored")


def revision_source(here: Path, rev: str) -> str:
    """progress.py's source at `rev`: in reasonrl/runner/ since the runner became a package, in reasonrl/ before."""
    for path in ("reasonrl/runner/progress.py", "reasonrl/progress.py"):
        shown = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=here, capture_output=True, text=True)
        if shown.returncode == 0:
            return shown.stdout
    raise SystemExit(f"error: {rev} has no reasonrl/runner/progress.py nor reasonrl/progress.py")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--against", required=True, help="the git revision whose reasonrl/runner/progress.py to compare")
    ap.add_argument("logs", nargs="+")
    args = ap.parse_args()
    here = Path(__file__).resolve().parents[1]
    versions = {args.against: module("progress_then", revision_source(here, args.against)),
                "this checkout": module("progress_now", (here / "reasonrl/runner/progress.py").read_text())}
    parts = parts_of(args.logs)
    ran = {e[2]: e[3] for p in parts for e in p if e[1] == "finished" and e[4] == "ran"}
    print(f"{len(parts)} parts, {len(ran)} stages that ran")
    for k in range(1, len(parts) + 1):
        for name, mod in versions.items():
            said, left, errors = replay(mod, parts, k)
            print(f"{'a fresh build' if k == 1 else f'resumed after part {k - 1}'}, {name}: said "
                  f"{said / 3600:.2f} h of {left / 3600:.2f} h; |error| at {len(errors)} finishes: {spread(errors)}")
        errors = rate_replay(parts, k)
        print(f"{'a fresh build' if k == 1 else f'resumed after part {k - 1}'}, tqdm's rate: said nothing "
              f"before the first finish; |error| at {len(errors)} finishes: {spread(errors)}")
    grown = [s for s in ran if re.search(r"_s[34]$", s)]
    timed = {s: seconds for s, seconds in ran.items() if s not in grown}
    for name, mod in versions.items():
        exp = expected(mod, timed, grown)
        errors = [abs(exp[s] - mod.DVC_OVERHEAD_S - ran[s]) / ran[s] for s in grown if ran[s] > 0]
        print(f"grown to 5 seeds, {name}: {len(grown)} new stages, said {sum(exp.values()) / 3600:.2f} h "
              f"({mod.DVC_OVERHEAD_S:.0f} s each of it for DVC) of {sum(ran[s] for s in grown) / 3600:.2f} h; "
              f"per stage |error| {spread(errors)}")


if __name__ == "__main__":
    sys.exit(main())
