"""`reasonrl repro`: run the stale stages of a DVC pipeline in parallel on Dask.

`dvc repro` runs stages one after another (DVC's open request #755), and `dvc exp run --queue` runs whole
experiments side by side, each one such serial run. Here each stale stage (runner.plan) becomes one Dask task,
`dvc repro -s <stage>`, started in `plan.Schedule`'s order once its stale upstream stages have finished and a worker
is free. What it buys at -j 2: nearly two stages' time in one's wall clock (docs/parallel.md; docs/performance.md,
"Measurements the code cites"). Dask brings the workers, a remote cluster (--scheduler),
the stop `Event` and the event stream; what is here is what Dask does not do: the start order, stopping a stage's
process group, and two Dask defaults undone (QUIET_CLUSTER, NANNY_VARS).
Several `dvc repro -s` at once are safe: DVC holds its repo lock only for its bookkeeping (`--wait-for-lock`), and
dependents start after their upstream stages (docs/parallel.md). A stage's outcome comes from its exit status and DVC's
own files (`plan.stage_status`). A worker keeps only its zygote (runner.warm), from which each stage's process is
forked. Each stage lands in dvc.lock as it finishes, so a failed or interrupted run resumes with `reasonrl repro` or
`dvc repro`. A stage runs on tcmalloc where its worker's machine has it installed (runner.malloc).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..numerics import DEFAULT as DEFAULT_NUMERICS
from ..numerics import machine
from . import dvc_adapter, malloc
from .plan import Plan, Schedule, near_targets, read_lock_entry, run_cache_entries, stage_status, stale_plan
from .progress import DVC_OVERHEAD_S, UNCHANGED_S, UNTIMED_S, Progress, expected_seconds, fmt_duration, holding_outputs

TOPIC = "reasonrl-repro"
# When stages share the machine, helper libraries get one thread each; torch's own count comes from the
# `threads` param (stage_setup), so these variables cannot change results.
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "TORCH_NUM_THREADS")
TAIL_LINES = 25
INTERRUPT_GRACE_S = 30.0
POLL_S = 0.5  # how often a running stage checks whether the run was told to stop
# Dask's per-process resource monitor and statistical profiler, which the runner never reads: with them on,
# with them on, an idle local cluster of two workers used more CPU than with them off (docs/parallel.md; docs/
# performance.md, "Measurements the code cites"), CPU that the stages' own computation gets instead.
QUIET_CLUSTER = {"distributed.admin.system-monitor.interval": "10s", "distributed.worker.profile.enabled": False}
# Variables a Dask nanny sets in its worker's environment (distributed.nanny.pre-spawn-environ) that a stage
# must not inherit: MALLOC_TRIM_THRESHOLD_=65536 makes glibc return memory on nearly every free, and an RL
# stage spent a large share of its time in the kernel refaulting it (docs/performance.md, "The stages'
# environment under `reasonrl repro`"). A stage gets
# the value of the `reasonrl repro` process's own environment, if it has one.
NANNY_VARS = ("MALLOC_TRIM_THRESHOLD_",)
# `dvc`, with Ctrl-C handled normally even where the worker ignores SIGINT (ignoring is inherited), and
# with the faster dvc.lock update of reasonrl.runner.lockfile (same bytes, seconds less per stage).
_DVC_MAIN = ("import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
             "import reasonrl.runner.lockfile; reasonrl.runner.lockfile.install(); "
             "from reasonrl.runner.dvc_adapter import cli_main; sys.exit(cli_main(sys.argv[1:]))")
# The same, forked from a warm interpreter (reasonrl.runner.warm), whose stage command is forked from it in turn.
_WARM = "import reasonrl.runner.warm; reasonrl.runner.warm.install(); "


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("targets", nargs="*", help="stages or dvc.yaml files, as for `dvc repro` "
                        "(relative to the repository root; default: dvc.yaml)")
    parser.add_argument("-j", "--jobs", type=int, default=1,
                        help="stages run at once: the worker processes of a local Dask cluster (default: %(default)s)")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="use an existing Dask cluster (e.g. tcp://host:8786) instead of a local one; "
                        "its workers must see the repository at the same path")
    parser.add_argument("--dry", action="store_true",
                        help="list the stale stages in run order, then their expected time; run nothing")
    parser.add_argument("--repo", default=None, help="repository (default: the one containing the cwd)")
    parser.add_argument("--pull", action="store_true",
                        help="pass --pull to each `dvc repro -s`: outputs of runs found in the run-cache "
                        "(e.g. pushed by a teammate with `dvc push --run-cache`) are downloaded, not rerun")
    parser.add_argument("--log-dir", default=None,
                        help="also write each stage's full `dvc repro` output to DIR/<stage>.log")
    parser.add_argument("--cold", action="store_true",
                        help="start each stage's `dvc repro` and command in fresh interpreters, as `dvc repro` "
                        "does (default: forked from one that has imported DVC and the stages' modules)")


def run(args: argparse.Namespace, plan: Plan | None = None) -> int:  # a plan: `reasonrl exp`'s, made once
    if plan is None:  # `reasonrl exp run` checked at its own start
        dvc_adapter.check_version("repro")
    if args.jobs < 1:
        _log("error: -j must be at least 1")
        return 2
    try:
        if plan is None and not args.dry:  # before the plan's pass over DVC's stages (seconds on the real DAG)
            check_code(dvc_adapter.find_root(args.repo), remote=bool(args.scheduler))
        plan = plan or stale_plan(args.repo, args.targets)
    except dvc_adapter.dvc_error() as exc:
        _log(f"error: {exc}{near_targets(args.repo, args.targets)}")
        return 2
    if not plan.stages:
        _log("nothing to reproduce: every stage is up to date")
        return 0
    if args.dry:
        for stage in Schedule(plan.stages).order():
            upstream = plan.stages[stage]
            print(stage + (f"  (after {', '.join(upstream)})" if upstream else ""))
        _log(dry_estimate(plan, args.jobs if args.jobs > 1 and not args.scheduler else 1))
        return 0
    log_dir = str(Path(args.log_dir).resolve()) if args.log_dir else None
    _stoppable()
    # machine() reads this process's CPU capability; the stages pin theirs to the `numerics` param
    _log(f"machine  {machine()} (this process); the stages' numerics {_numerics_of(plan.root)}; "
         f"malloc {'tcmalloc' if malloc.library() else 'system'}")
    with _connect(args) as client:
        parallel = sum(client.nthreads().values()) > 1
        env = {**(dict.fromkeys(THREAD_VARS, "1") if parallel else {}),
               **{k: os.environ[k] for k in NANNY_VARS if k in os.environ}}
        return execute(client, plan, env, log_dir, ["--pull"] if args.pull else [], warm=not args.cold)


def _stoppable() -> None:
    """Make SIGINT and SIGTERM stop the run as Ctrl-C does: a shell starts a background job (`nohup … &`) with SIGINT
    ignored, and `kill` sends SIGTERM, which would end this process and leave its stages' processes running."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.default_int_handler)


def check_code(root: str | Path, remote: bool = False) -> None:
    """A ConfigError naming `reasonrl` where the stages of the checkout at `root` would run another checkout's code
    (foreign_code), or cannot import the package at all; before anything of a run is written or started. `remote`
    (an existing Dask cluster, --scheduler): the workers' environments are theirs, not this one's, so nothing is
    checked here."""
    if remote:
        return
    if why := foreign_code(root):
        raise ConfigError("reasonrl", why, "run `pip install -e .` in this checkout, or the command in that one")


def foreign_code(root: str | Path, library: Path | None = None) -> str | None:
    """Why the stages of the checkout at `root` would run other code than its own, or None.

    A stage (`python stages/<x>.py`, and the warm zygotes, which start with the same import path) imports the
    `reasonrl` that this environment finds from the stages' folder: `library`, by default `stage_library(root)`.
    `pip install -e .` points it at the last checkout that ran it (a second clone's, a CI clone's), so a checkout
    of this project (one holding a `reasonrl` package) is checked against it, file by file: the same bytes, no
    complaint. A project that only uses the library holds no package of its own, and is never checked."""
    own = Path(root).resolve() / "reasonrl"
    if not (own / "__init__.py").is_file():
        return None
    library = stage_library(root) if library is None else library
    if library == own:
        return None
    ours, theirs = _sources(own), _sources(library)
    for rel in sorted(ours.keys() | theirs.keys()):
        if rel not in theirs or rel not in ours:
            differ = f"{rel.as_posix()} is only in {own if rel in ours else library}"
        elif ours[rel].read_bytes() != theirs[rel].read_bytes():
            differ = f"their {rel.as_posix()} differ"
        else:
            continue
        return (f"this environment imports the package from {library}, not this checkout's ({own}), and {differ}: "
                "the stages would run that code")
    return None


# the package's folder as `python stages/<x>.py` finds it: the script's folder first on the path (none under
# PYTHONSAFEPATH, where `-c` puts no folder first either), then PYTHONPATH's and the installed ones
_FIND = ("import importlib.util, sys\n"
         "if not sys.flags.safe_path: sys.path[0] = sys.argv[1]\n"
         "spec = importlib.util.find_spec('reasonrl')\n"
         "print(spec.submodule_search_locations[0] if spec else '')")


def stage_library(root: str | Path) -> Path:
    """The `reasonrl` package a stage of the checkout at `root` imports, found by a fresh interpreter of the
    `python` the stages' commands name, in this process's environment (a few tens of ms: nothing is imported); a
    ConfigError where it finds none."""
    python = shutil.which("python") or sys.executable
    out = subprocess.run([python, "-c", _FIND, str(Path(root) / "stages")], cwd=root, capture_output=True,
                         text=True, check=True, timeout=60).stdout.strip()  # as warm.py's probe of that python
    if not out:
        raise ConfigError("reasonrl", f"the stages' `python` ({python}) cannot import the package",
                          "run `pip install -e .` in this checkout")
    return Path(out).resolve()


def _sources(package: Path) -> dict[Path, Path]:
    return {p.relative_to(package): p for p in package.rglob("*.py")}


def _numerics_of(repo: str | Path) -> str:
    """The `numerics` setting the stages will pin (each stage pins it itself, from params)."""
    from ..config import load_params

    params = Path(repo) / "params.yaml"
    return str(load_params(params).get("numerics", DEFAULT_NUMERICS)) if params.exists() else DEFAULT_NUMERICS


# ---- running -------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _connect(args: argparse.Namespace) -> Iterator[Any]:
    import dask
    from distributed import Client, LocalCluster

    if args.scheduler:
        try:
            client = Client(args.scheduler)
        except (OSError, ValueError) as exc:  # refused or unreachable (after Dask's connect timeout), or no address
            raise ConfigError("--scheduler", str(exc), "start a Dask scheduler there, or drop --scheduler") from None
        with client:
            yield client
        return
    # Workers ignore the terminal's Ctrl-C (the disposition is inherited); this process handles it and
    # tells the stages to stop, so no worker dies while its `dvc repro` child still runs.
    old, environ = signal.signal(signal.SIGINT, signal.SIG_IGN), dict(os.environ)
    try:
        with dask.config.set(QUIET_CLUSTER):  # the workers' nannies pass the config on
            cluster = LocalCluster(n_workers=args.jobs, threads_per_worker=1, processes=True,
                                   dashboard_address=None, memory_limit=0)
    finally:
        signal.signal(signal.SIGINT, old)
        # starting the nannies leaves their NANNY_VARS in this process's environment too
        os.environ.clear()
        os.environ.update(environ)
    with cluster, Client(cluster) as client:
        yield client


def execute(client: Any, plan: Plan, env: dict[str, str], log_dir: str | None = None,
            dvc_args: list[str] | None = None, warm: bool = False) -> int:
    """Start stages as `Schedule` picks them, one per free worker thread; report; return the exit code.

    Only as many tasks as there are worker threads are in Dask at once, so the schedule, not Dask's
    queue, decides the order; and Dask's tasks have no data dependencies, so a task may run on any worker.
    """
    from distributed import Event, as_completed, wait

    run_id = uuid.uuid4().hex[:8]
    progress = Progress(expected_seconds(plan.root, plan.locks), sum(client.nthreads().values()))
    reporter = _Reporter(progress)
    client.subscribe_topic(f"{TOPIC}-{run_id}", reporter.on_event)  # per run: a cluster may be shared
    stop = Event(f"{TOPIC}-stop-{run_id}", client=client)
    t0 = time.monotonic()
    schedule, running, outcomes = Schedule(plan.stages), {}, {}
    finished = as_completed()

    def settle(outcome: dict) -> None:
        outcomes[outcome["stage"]] = outcome
        reporter.report(outcome)

    def start_ready() -> None:
        while schedule.ready and len(running) < max(1, sum(client.nthreads().values())):
            stage = schedule.pop()
            fut = client.submit(run_stage, run_id, stage, plan.root, plan.locks[stage], plan.run_cache, env,
                                log_dir, dvc_args or [], warm, key=f"{stage}-{run_id}", pure=False)
            running[fut.key] = stage
            finished.add(fut)

    try:  # from the first submission on: a Ctrl-C at any point stops what has started
        start_ready()
        for fut in finished:
            stage = running.pop(fut.key)
            settle(_outcome(stage, fut))
            if outcomes[stage]["status"] == "FAILED":
                for down in schedule.failed(stage):
                    if down not in outcomes:
                        settle({"stage": down, "status": "skipped", "reason": f"upstream {stage} failed"})
            else:
                schedule.done(stage)
            start_ready()
    except KeyboardInterrupt:
        reporter.stopping = True
        _log("interrupted: stopping the running stages (DVC records nothing for a stage that did not finish)")
        stop.set()
        with contextlib.suppress(KeyboardInterrupt, TimeoutError):
            wait(list(finished.futures), timeout=INTERRUPT_GRACE_S + 10)
        _log("stopped; `reasonrl repro` resumes from the stages recorded in dvc.lock")
        return 130
    finally:
        progress.close()
    _summary(plan.stages, outcomes, time.monotonic() - t0)
    return 0 if all(o["status"] not in ("FAILED", "skipped") for o in outcomes.values()) else 1


def _outcome(stage: str, fut: Any) -> dict:
    if fut.status == "finished":
        return fut.result()
    exc = fut.exception()  # the task itself failed (a lost worker, ...), not the stage
    return {"stage": stage, "status": "FAILED", "returncode": None, "tail": f"{type(exc).__name__}: {exc}"}


# ---- worker side: one stage --------------------------------------------------------------------------


def run_stage(run_id: str, stage: str, root: str, lock: tuple[str, str], run_cache: str, env: dict[str, str],
              log_dir: str | None, dvc_args: list[str], warm: bool = False) -> dict:
    """Run `dvc repro -s <stage>` in `root` (a Dask task; `warm`: forked from this worker's zygote) and say
    what happened: ran, restored (from the run-cache), unchanged, or FAILED (with the exit status and the
    log's last lines)."""
    from distributed import Event

    worker = _worker_address()
    stop = Event(f"{TOPIC}-stop-{run_id}")
    if stop.is_set():
        return {"stage": stage, "status": "FAILED", "returncode": None, "tail": "interrupted before it started"}
    _event(run_id, {"stage": stage, "status": "start", "worker": worker})
    lock_before, runs_before = read_lock_entry(*lock), run_cache_entries(run_cache)
    start = time.monotonic()
    argv = ["--wait-for-lock", "repro", "-s", stage, *dvc_args]
    returncode, tail = _run_dvc(argv, root, env, _log_path(log_dir, stage), stop, warm)
    if returncode != 0:
        outcome = {"stage": stage, "status": "FAILED", "returncode": returncode, "tail": tail}
    else:
        status = stage_status(lock_before, read_lock_entry(*lock), runs_before, run_cache)
        outcome = {"stage": stage, "status": status, "seconds": time.monotonic() - start, "worker": worker}
    _event(run_id, outcome)
    return outcome


def _run_dvc(argv: list[str], root: str, env: dict[str, str], log_path: str, stop: Any,
             warm: bool = False) -> tuple[int, str]:
    """Run `python -c _DVC_MAIN *argv` in its own process group, keeping its output's last lines; stop it
    when `stop` is set: SIGINT to the group (`dvc` ignores it while the command runs; the command gets it,
    and DVC records nothing), SIGKILL after INTERRUPT_GRACE_S."""
    tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
    environ = malloc.environ(stage_environ(os.environ, env))  # tcmalloc, where this worker has it installed
    with open(log_path, "w") as log, _launch(argv, root, environ, warm) as proc:

        def read() -> None:
            for line in proc.stdout:
                tail.append(line.rstrip("\n"))
                log.write(line)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        while True:  # waiting on the process, not on `stop`: the stage is seen to end at once, not at the next poll
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(POLL_S)
                break
            if stop.is_set():
                for sig, grace in ((signal.SIGINT, INTERRUPT_GRACE_S), (signal.SIGKILL, None)):
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, sig)
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        proc.wait(grace)
                        break
                break
        reader.join(INTERRUPT_GRACE_S)
        if reader.is_alive():  # a process the stage left behind holds its output: it goes with the stage's group
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            reader.join(INTERRUPT_GRACE_S)
    return proc.returncode, "\n".join(tail)


def _launch(argv: list[str], root: str, environ: dict[str, str], warm: bool) -> Any:
    """The `dvc repro` process: a fork of this thread's zygote when `warm` and one can start it
    (reasonrl.runner.zygotes), else a fresh interpreter."""
    if warm:
        from .zygotes import forked

        proc = forked(_WARM + _DVC_MAIN, argv, root, environ)
        if proc is not None:
            return proc
    return subprocess.Popen([sys.executable, "-c", _DVC_MAIN, *argv], cwd=root, env=environ, text=True,
                            errors="replace", stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)


def stage_environ(worker: Mapping[str, str], env: dict[str, str]) -> dict[str, str]:
    """The environment of a stage's `dvc repro`: the worker's without what its nanny added, plus `env`."""
    return {**{k: v for k, v in worker.items() if k not in NANNY_VARS}, **env}


def _log_path(log_dir: str | None, stage: str) -> str:
    if not log_dir:
        return os.devnull
    os.makedirs(log_dir, exist_ok=True)
    return os.path.join(log_dir, "".join(c if c.isalnum() or c in "@-_." else "_" for c in stage) + ".log")


# ---- reporting ---------------------------------------------------------------------------------------


def _worker_address() -> str:
    from distributed import get_worker

    with contextlib.suppress(ValueError):
        return get_worker().address
    return "local"


def _event(run_id: str, msg: dict) -> None:
    from distributed import get_worker

    with contextlib.suppress(ValueError):
        get_worker().log_event(f"{TOPIC}-{run_id}", msg)


def _log(msg: str, progress: Progress | None = None) -> None:
    line = f"[{time.strftime('%H:%M:%S')}] {msg}"
    if progress is not None:
        progress.write(line)
    else:
        print(line, file=sys.stderr, flush=True)


class _Reporter:
    """Reports each start and outcome once: from the worker's event (sent before its task ends, so lines
    come in the order things happened), or from the client if the event is late or lost. On a terminal
    the progress line updates in place and only failures are printed above it; elsewhere every start and
    finish is a plain line, each finish with the count and the time left."""

    def __init__(self, progress: Progress) -> None:
        self._lock = threading.Lock()
        self._done: set[str] = set()
        self.stopping, self.progress = False, progress

    def on_event(self, event: tuple[float, dict]) -> None:
        _, msg = event
        if msg["status"] == "start":
            self.progress.start(msg["stage"])
            if self.progress.bar is None:
                _log(f"start    {msg['stage']}  on {msg['worker']}")
        else:
            self.report(msg)

    def report(self, outcome: dict) -> None:
        with self._lock:
            if outcome["stage"] in self._done:
                return
            self._done.add(outcome["stage"])
        counted = self.progress.finish(outcome["stage"], outcome["seconds"] if outcome["status"] == "ran" else None)
        if self.stopping and outcome["status"] == "FAILED":
            _log(f"stopped  {outcome['stage']}", self.progress)
        elif self.progress.bar is None or outcome["status"] in ("FAILED", "skipped"):
            _log(_outcome_line(outcome) + ("" if outcome["status"] == "FAILED" else f"  {counted}"), self.progress)


def _outcome_line(o: dict) -> str:
    if o["status"] == "skipped":
        return f"skipped  {o['stage']}  ({o['reason']})"
    if o["status"] == "FAILED":
        return (f"FAILED   {o['stage']}  (exit {o['returncode']}); last lines of its log:\n"
                + "\n".join("    | " + line for line in o["tail"].splitlines()))
    return f"finished {o['stage']}  in {o['seconds']:.1f}s ({o['status']})"


def dry_estimate(plan: Plan, jobs: int) -> str:
    """`--dry`'s closing line: the plan's stage time (and at -j jobs), estimated as a run's start does, and the
    same where the stages that hold their committed outputs come out unchanged (progress.holding_outputs)."""
    expected, n = expected_seconds(plan.root, plan.locks), len(plan.stages)  # as a run starts
    held = holding_outputs(plan)
    seconds = sum(expected.values())

    on = f", {fmt_duration(seconds / jobs)} at -j {jobs}" if jobs > 1 else ""
    line = f"{n} stale stage{'s' * (n != 1)}: about {fmt_duration(seconds)} of stage time{on}"
    if held:
        quick = sum(UNCHANGED_S + DVC_OVERHEAD_S if stage in held else t for stage, t in expected.items())
        which = ("the stage that holds its committed outputs comes" if len(held) == 1 else
                 f"the {len(held)} stages that hold their committed outputs come")
        line += (f" ({fmt_duration(quick / jobs)}{f' at -j {jobs}' if jobs > 1 else ''} where {which} out unchanged: "
                 "their upstream rebuilt to the lock's bytes, as on the CPU kind that made them)")
    return line + (f", from the stages' last timing files (a median, or {UNTIMED_S:g} s, where one has none), as a "
                   "run first estimates its time left")


def _summary(plan: dict[str, list[str]], outcomes: dict[str, dict], wall: float) -> None:
    width = max(len(s) for s in plan)
    lines = [f"{'stage':<{width}}  {'status':<9}  {'seconds':>8}"]
    for stage in plan:
        o = outcomes[stage]
        secs = f"{o['seconds']:8.1f}" if "seconds" in o else f"{'-':>8}"
        lines.append(f"{stage:<{width}}  {o['status']:<9}  {secs}")
    busy = sum(o.get("seconds", 0.0) for o in outcomes.values())
    counts = collections.Counter(o["status"] for o in outcomes.values())
    lines.append(", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
                 + f"; wall {wall:.1f}s, stage time {busy:.1f}s ({busy / max(wall, 1e-9):.2f}x)")
    if counts["unchanged"]:
        lines.append("unchanged: DVC found the stage's inputs with the bytes its outputs in dvc.lock were built from, "
                     "so those outputs stand as they are")
    if failed := [s for s in plan if outcomes[s]["status"] == "FAILED"]:
        lines.append(f"failed: {', '.join(failed)}; finished stages are in dvc.lock, so after a fix "
                     "`reasonrl repro` (or `dvc repro`) resumes from there")
    _log("summary\n" + "\n".join(lines))
