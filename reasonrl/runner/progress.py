"""Progress of `reasonrl repro`: stages done / total, the ones running, and the time left.

The time left comes from what each stage took last time: the `seconds` of its timing file
(`reports/timing/<name>.json`, an out of the stage, found through its dvc.lock entry), plus DVC's own
bookkeeping per stage. A stage never run before counts as the median of the timed stages in the lock (up to
date or not) of its arm (the name without its seed: `rl@grpo_s3` -> `rl@grpo`), else of its arm's nearest
sibling (the timed arm of its kind whose name shares the longest start with its own, at least SIBLING_CHARS
characters after the `@`: a new `passk@cGRPO_ver` takes `passk@cGRPO_edge`'s, a chain pass@k stage, not the
kind's median, which hop's many cheaper ones set), else of its kind (the name before `@`), else of all of them:
the two tasks' runs of one kind, or a zero-study run and a test-bed run, take very different times. As stages
finish, or run past their estimates, the estimates of the others of
their arm scale by how long those took against their estimates; an arm with no such evidence yet scales by
its kind's: a changed param that makes every RL run twice as long starts to show in the time left once the
first one overruns, and fully when it finishes.
On a terminal one tqdm line updates in place; elsewhere (a log file, CI) each finished stage is a plain
line with the same count and estimate.

What it buys over tqdm's own time left (stages left times the mean time per stage so far), replayed on the
test-bed run's eight logs (scripts/eta_replay.py, docs/runlogs/eta_replay_rate.txt): an estimate before any stage
finishes, which tqdm cannot give (`--dry`, and a run's start), and a smaller error once the lock has timing files.
Where nothing of the run's kinds was timed yet, tqdm's rate did better. The errors: docs/performance.md,
"Measurements the code cites".
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import yaml
from tqdm import tqdm

from . import dvc_adapter

TIMING_DIR = "reports/timing/"
# DVC's lock, hashing and process start per stage (docs/performance.md, "Measurements the code cites")
DVC_OVERHEAD_S = 5.0
REDRAW_S = 5.0  # a terminal's line is redrawn this often between events
UNKNOWN_S = 60.0  # a stage's estimate when no stage of its dvc.lock files has a timing file
# a stage that ran before without a timing file among its outs (the code stamps, the reports, `plots`): the mean of
# the 29 such stages in the confirmatory run's and run 2's logs, 0.5-12.8 s; as an unseen stage it took the lock's
# median, 72 s on run 1's, and a fresh clone's `--dry report_headline` read 15 min too long on 13 of them
UNTIMED_S = 4.0
# a stage DVC finds unchanged costs its check only: 0.4-0.5 s in the runs' logs (`finished ... (unchanged)`)
UNCHANGED_S = 0.5
SIBLING_CHARS = 4  # a new arm's nearest sibling shares at least this start after `@` (`chainver` and `chainedge`: 5)


def expected_seconds(root: str, locks: dict[str, tuple[str, str]]) -> dict[str, float]:
    """{stage: its expected seconds}: its timing file's `seconds` from the last run, plus DVC_OVERHEAD_S;
    UNTIMED_S for a stage whose dvc.lock entry has no timing file among its outs; for the others, the median of
    the stages in the same dvc.lock files (the plan's and the up-to-date ones) of their arm, else of their kind,
    else of all of them. Each dvc.lock is read once."""
    from .lockfile import parse_kept

    dvc_error = dvc_adapter.dvc_error()

    entries: dict[str, dict] = {}
    for lockfile in {path for path, _ in locks.values()}:
        try:  # the parse the plan's DVC pass just kept, far cheaper than a YAML load of a large lock
            entries[lockfile] = (parse_kept(Path(lockfile).read_text(), lockfile) or {}).get("stages") or {}
        except (OSError, AttributeError, dvc_error):  # unreadable, not YAML, not a mapping: the run says why
            entries[lockfile] = {}
    known = {(lockfile, key): seconds for lockfile, stages in entries.items() for key, entry in stages.items()
             if (seconds := _timed(root, entry)) is not None}
    untimed = {(lockfile, key) for lockfile, stages in entries.items() for key, entry in stages.items()
               if _timing_out(entry) is None}
    fallback = statistics.median(known.values()) if known else UNKNOWN_S
    groups: dict[tuple[str, str], list[float]] = {}  # per dvc.lock: two dvc.yaml files may reuse a name
    for (lockfile, key), seconds in known.items():  # a new seed or arm learns from the up-to-date stages too
        for group in {arm(key), kind(key)}:
            groups.setdefault((lockfile, group), []).append(seconds)
    medians = {group: statistics.median(v) for group, v in groups.items()}

    def unseen(lockfile: str, key: str) -> float:
        near = sibling(arm(key), [g for lf, g in medians if lf == lockfile])
        return medians[lockfile, near] if near else medians.get((lockfile, kind(key)), fallback)

    def expected(lockfile: str, key: str) -> float:
        if (lockfile, key) in known:
            return known[lockfile, key]
        return UNTIMED_S if (lockfile, key) in untimed else unseen(lockfile, key)

    return {stage: expected(lockfile, key) + DVC_OVERHEAD_S for stage, (lockfile, key) in locks.items()}


def holding_outputs(plan) -> set[str]:
    """The stale stages of `plan` (a plan.Plan) that will come out unchanged if every stage reproduces the bytes its
    dvc.lock records, as on the CPU kind that made them: a fresh clone's committed evaluations, stale only because
    the models they read are not built yet. A stage reproduces when each dep the lock records is a file present
    with the lock's md5 or, where the stage has stale upstream stages, missing (theirs to rebuild), its params
    equal the lock's, and every stale upstream stage reproduces; it holds when, besides, each of its outs is a
    file present with the lock's md5. A directory (dep or out) is not hashed here, so its stage does not count."""
    from .lockfile import parse_kept

    entries: dict[str, dict] = {}
    params: dict[str, object] = {}

    def entry(lockfile: str, key: str) -> dict:
        if lockfile not in entries:
            try:
                entries[lockfile] = (parse_kept(Path(lockfile).read_text(), lockfile) or {}).get("stages") or {}
            except (OSError, AttributeError, dvc_adapter.dvc_error()):
                entries[lockfile] = {}
        return entries[lockfile].get(key) or {}

    def params_match(recorded: dict) -> bool:
        for name, values in (recorded or {}).items():
            if name not in params:
                try:
                    params[name] = yaml.safe_load((Path(plan.root) / name).read_text())
                except (OSError, yaml.YAMLError):
                    params[name] = None
            if any(_lookup(params[name], key) != value for key, value in (values or {}).items()):
                return False
        return True

    reproduces, held = set(), set()
    for stage, upstream in plan.stages.items():  # upstream first
        e = entry(*plan.locks[stage])
        deps_ok = all(_holds(plan.root, dep) or (upstream and _missing(plan.root, dep)) for dep in e.get("deps") or [])
        if e and deps_ok and params_match(e.get("params")) and all(u in reproduces for u in upstream):
            reproduces.add(stage)
            if e.get("outs") and all(_holds(plan.root, out) for out in e["outs"]):
                held.add(stage)
    return held


_ABSENT = object()


def _lookup(data, key: str):
    """A params file's value at a dotted key (`studies.headline`), or _ABSENT."""
    for part in key.split("."):
        if not isinstance(data, dict) or part not in data:
            return _ABSENT
        data = data[part]
    return data


def _missing(root: str, item: dict) -> bool:
    return isinstance(item, dict) and not (Path(root) / str(item.get("path", ""))).exists()


def _holds(root: str, item: dict) -> bool:
    """Whether a lock's dep or out (a file's entry: path, md5, no `nfiles`) is present with that md5."""
    if not isinstance(item, dict) or "nfiles" in item or not item.get("md5") or str(item["md5"]).endswith(".dir"):
        return False
    path = Path(root) / str(item.get("path", ""))
    try:
        return path.is_file() and hashlib.md5(path.read_bytes()).hexdigest() == item["md5"]
    except OSError:
        return False


def sibling(name: str, arms: list[str]) -> str | None:
    """`name` itself if it is among the timed `arms`, else the arm of its kind whose name shares the longest start
    with it, at least SIBLING_CHARS characters after the `@` (ties: the first in sorted order); None if none does."""
    if name in arms:
        return name
    if "@" not in name:
        return None
    head, _, own = name.rpartition("@")
    best, shared = None, SIBLING_CHARS - 1
    for other in sorted(arms):
        other_head, at, rest = other.rpartition("@")
        if not at or other_head != head:
            continue
        n = len(os.path.commonprefix([own, rest]))
        if n > shared:
            best, shared = other, n
    return best


def _timing_out(entry: dict | None) -> str | None:
    """The path of the timing file among a dvc.lock entry's outs, if it has one."""
    for out in (entry.get("outs") or [] if isinstance(entry, dict) else []):
        path = str(out.get("path", "") if isinstance(out, dict) else "")
        if path.startswith(TIMING_DIR) and path.endswith(".json"):
            return path
    return None


def _timed(root: str, entry: dict | None) -> float | None:
    """The `seconds` of the timing file among a dvc.lock entry's outs, if it has one that reads."""
    if (path := _timing_out(entry)) is None:
        return None
    try:
        return float(json.loads((Path(root) / path).read_text())["seconds"])
    except (OSError, KeyError, TypeError, ValueError):
        return None


def kind(stage: str) -> str:
    """A foreach stage's group (`eval@grpo_s0` -> `eval`), or the stage's own name; a stage of another
    dvc.yaml keeps its file (`sub/dvc.yaml:eval@x` -> `sub/dvc.yaml:eval`)."""
    path, name = _split(stage)
    return path + name.split("@", 1)[0]


def arm(stage: str) -> str:
    """The stage without its seed (`rl@grpo_s3` -> `rl@grpo`): the seeds of an arm do the same work. Never a
    kind's name unless it is the stage's own (a kind has no `@`)."""
    path, name = _split(stage)
    return path + (re.sub(r"_s\d+$", "", name) if "@" in name else name)


def _split(stage: str) -> tuple[str, str]:
    """(`sub/dvc.yaml:`, `rl@x_s0`) from `sub/dvc.yaml:rl@x_s0`; ("", name) for the root dvc.yaml's."""
    path, sep, name = stage.rpartition(":")
    return path + sep, name


def _width(file) -> dict:
    """tqdm's size options: follow the terminal, or 120 x 20 where it reports 0 x 0 (a fresh pty, some CI
    runners): tqdm would read the 0 and draw nothing."""
    try:
        known = os.get_terminal_size(file.fileno()).columns > 0
    except (OSError, ValueError, AttributeError):
        known = False
    return {"dynamic_ncols": True} if known else {"ncols": 120, "nrows": 20}


def fmt_duration(seconds: float) -> str:
    """'45 s', '12 min', '2 h 05 min'."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"


class Progress:
    """Counts finished stages and estimates the time left: (expected seconds of the stages not started,
    plus what the running ones still have to go) / workers. Thread-safe: start and finish come from the
    Dask event thread as well as the main one."""

    def __init__(self, expected: dict[str, float], workers: int, file=None, clock=time.monotonic):
        self.expected, self.workers, self.clock = expected, max(1, workers), clock
        self.file = file if file is not None else sys.stderr
        self.running: dict[str, float] = {}
        self.finished: set[str] = set()
        self.taken: dict[str, list[float]] = {}  # arm or kind -> [seconds taken, seconds expected] of those that ran
        self._lock = threading.Lock()
        self.bar = (tqdm(total=len(expected), file=self.file, unit="stage", bar_format="{n_fmt}/{total_fmt} stages "
                         "|{bar:20}| {desc}", **_width(self.file)) if self.file.isatty() else None)
        self._closed = threading.Event()
        self._redrawer: threading.Thread | None = None  # from the first start on: the caller closes after that
        self._refresh()

    def left(self) -> float:
        """Seconds left, at this moment."""
        now = self.clock()
        pending = sum(self.estimate(stage) for stage in self.expected
                      if stage not in self.finished and stage not in self.running)
        busy = sum(max(0.0, self.estimate(stage) - (now - t0)) for stage, t0 in self.running.items())
        return (pending + busy) / self.workers

    def estimate(self, stage: str) -> float:
        """Its expected seconds, scaled by what its arm's stages took against their estimates, or its kind's
        while its arm has no evidence: the finished ones, and the running ones already past theirs (a new kind
        of pass@k stage three times as long as the old ones must not wait until it finishes to show)."""
        scale = self._scale(arm, stage)
        return self.expected.get(stage, 0.0) * (scale if scale is not None else self._scale(kind, stage) or 1.0)

    def _scale(self, group: Callable[[str], str], stage: str) -> float | None:
        """Seconds taken over seconds expected by the other stages of `stage`'s group, or None when none
        finished with seconds or runs past its estimate."""
        taken, expected = self.taken.get(group(stage), (0.0, 0.0))
        scale = taken / expected if taken and expected else 1.0
        now = self.clock()
        for other, t0 in self.running.items():  # a running stage's time so far is a lower bound: only raise
            if other != stage and group(other) == group(stage) and now - t0 > self.expected.get(other, 0.0) * scale:
                taken, expected = taken + now - t0, expected + self.expected[other]
        return max(scale, taken / expected if taken else 1.0) if expected else None

    def status(self, left: float | None = None) -> str:
        """The bar's description; `left`: the time left when the caller has it already."""
        running = ", ".join(self.running) or "none"
        return f"running: {running}; about {fmt_duration(self.left() if left is None else left)} left"

    def count(self) -> str:
        return f"{len(self.finished)}/{len(self.expected)}"

    def start(self, stage: str) -> None:
        with self._lock:
            if stage not in self.finished:  # a late start event must not leave it running for ever
                self.running.setdefault(stage, self.clock())
            if self.bar is not None and self._redrawer is None and not self._closed.is_set():
                # the time left runs down, and a long stage overruns, between events too
                self._redrawer = threading.Thread(target=self._redraw, daemon=True, name="progress-redraw")
                self._redrawer.start()
            self._refresh()

    def finish(self, stage: str, seconds: float | None = None) -> str:
        """Mark a stage finished (ran, restored, failed or skipped); `seconds` when it ran (what it took
        teaches its arm's and its kind's estimates). Returns the count and estimate for a plain line."""
        with self._lock:
            self.running.pop(stage, None)
            new = stage not in self.finished
            if new:
                self.finished.add(stage)
                if seconds is not None and stage in self.expected:
                    for group in {arm(stage), kind(stage)}:
                        taken = self.taken.setdefault(group, [0.0, 0.0])
                        taken[0] += seconds
                        taken[1] += self.expected[stage]
            left = self.left()  # once per event: it walks every stage
            if self.bar is not None:
                self.bar.set_description_str(self.status(left), refresh=False)  # before update() may draw it
                self.bar.update(int(new))
                self.bar.refresh()
            return f"[{self.count()}, about {fmt_duration(left)} left]"

    def write(self, line: str) -> None:
        """A log line that does not break the bar."""
        with self._lock:
            if self.bar is not None:
                self.bar.write(line, file=self.file)
            else:
                print(line, file=self.file, flush=True)

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            if self.bar is not None:
                self.bar.close()
        if self._redrawer is not None:
            self._redrawer.join(REDRAW_S + 1.0)

    def _refresh(self) -> None:
        if self.bar is not None:
            self.bar.set_description_str(self.status(), refresh=True)

    def _redraw(self) -> None:
        while not self._closed.wait(REDRAW_S):
            with self._lock:  # a bar closed meanwhile draws nothing (tqdm disables it)
                self._refresh()
