"""`reasonrl repro`: run the stale stages of a DVC pipeline in parallel on Dask.

`dvc repro` runs stages one after another. Here DVC's own planner (the Python API) says which stages
are stale and in which order; each stale stage becomes one Dask task, `dvc repro -s <stage>`, submitted
as soon as the tasks of its stale upstream stages have finished, and run by whichever worker is free.
Several `dvc repro -s` processes at once are safe: DVC releases the repo lock while a stage's command
runs (so `--wait-for-lock` only waits for the short bookkeeping phases) and holds per-output read/write
locks, which never conflict because dependents start only after their upstream stages are done. Each
stage's result lands in `dvc.lock` as soon as it finishes, so a failed or interrupted run resumes from
there with `reasonrl repro` or `dvc repro`.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

TOPIC = "reasonrl-repro"
# When stages share the machine, helper libraries get one thread each; torch's own count comes from the
# `threads` param (stage_setup), so these variables cannot change results.
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "TORCH_NUM_THREADS")
TAIL_LINES = 25
INTERRUPT_GRACE_S = 30.0

# Worker-side state: the `dvc repro` processes this worker runs, per run id, and the runs told to stop.
_RUNNING: dict[tuple[str, str], subprocess.Popen] = {}
_STOPPED: set[str] = set()
_LOCK = threading.Lock()
# `dvc`, with Ctrl-C handled normally even where the worker ignores SIGINT (ignoring is inherited).
_DVC_MAIN = ("import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
             "from dvc.cli import main; sys.exit(main(sys.argv[1:]))")


class StageFailed(Exception):
    """`dvc repro -s <stage>` exited non-zero (raised on the worker; its dependents are skipped)."""

    def __init__(self, stage: str, returncode: int, tail: str):
        super().__init__(stage, returncode, tail)
        self.stage, self.returncode, self.tail = stage, returncode, tail

    def __str__(self) -> str:
        return f"stage {self.stage!r} failed (exit {self.returncode})"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("targets", nargs="*", help="stages or dvc.yaml files, as for `dvc repro` "
                        "(relative to the repository root; default: dvc.yaml)")
    parser.add_argument("-j", "--jobs", type=int, default=1,
                        help="stages run at once on a local Dask cluster of this many worker processes")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="use an existing Dask cluster (e.g. tcp://host:8786) instead of a local one; "
                        "its workers must see the repository at the same path")
    parser.add_argument("--dry", action="store_true", help="print the stale stages in order; run nothing")
    parser.add_argument("--repo", default=None, help="repository (default: the one containing the cwd)")
    parser.add_argument("--pull", action="store_true",
                        help="pass --pull to each `dvc repro -s`: outputs of runs found in the run-cache "
                        "(e.g. pushed by a teammate with `dvc push --run-cache`) are downloaded, not rerun")
    parser.add_argument("--log-dir", default=None,
                        help="also write each stage's full `dvc repro` output to DIR/<stage>.log")


def run(args: argparse.Namespace) -> int:
    from dvc.exceptions import DvcException

    if args.jobs < 1:
        _log("error: -j must be at least 1")
        return 2
    try:
        root, plan = stale_plan(args.repo, args.targets)
    except DvcException as exc:
        _log(f"error: {exc}")
        return 2
    if not plan:
        _log("nothing to reproduce: every stage is up to date")
        return 0
    if args.dry:
        for stage, upstream in plan.items():
            print(stage + (f"  (after {', '.join(upstream)})" if upstream else ""))
        return 0
    log_dir = str(Path(args.log_dir).resolve()) if args.log_dir else None
    with _connect(args) as client:
        parallel = sum(client.nthreads().values()) > 1
        env = dict.fromkeys(THREAD_VARS, "1") if parallel else {}
        return execute(client, root, plan, env, log_dir, ["--pull"] if args.pull else [])


def stale_plan(repo: str | None, targets: list[str]) -> tuple[str, dict[str, list[str]]]:
    """(repo root, {stale stage: its stale upstream stages}) in an order where upstream comes first.

    A stage is stale if DVC says it changed, or if any upstream stage is stale: before the upstream
    reruns, `dvc status` cannot see that the downstream stage's inputs are about to change.
    """
    from dvc.dvcfile import PROJECT_FILE
    from dvc.repo import Repo
    from dvc.repo.reproduce import collect_stages, get_active_graph, plan_repro

    root = Repo.find_root(repo)
    with contextlib.chdir(root), Repo(root) as dvc_repo, dvc_repo.lock:
        graph = get_active_graph(dvc_repo.index.graph)  # edges: stage -> upstream stage
        order = plan_repro(graph, collect_stages(dvc_repo, targets or [PROJECT_FILE]))
        stale: dict[Any, list[Any]] = {}
        for stage in order:
            upstream = [s for s in graph.successors(stage) if s in stale]
            if upstream or stage.changed():
                stale[stage] = upstream
        return root, {s.addressing: [u.addressing for u in ups] for s, ups in stale.items()}


@contextlib.contextmanager
def _connect(args: argparse.Namespace) -> Iterator[Any]:
    from distributed import Client, LocalCluster

    if args.scheduler:
        with Client(args.scheduler) as client:
            yield client
        return
    # Workers ignore the terminal's Ctrl-C (the disposition is inherited); this process handles it and
    # stops the stages itself, so no worker dies while its `dvc repro` child still runs.
    with _sigint_ignored():
        cluster = LocalCluster(n_workers=args.jobs, threads_per_worker=1, processes=True,
                               dashboard_address=None, memory_limit=0)
    with cluster, Client(cluster) as client:
        yield client


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def execute(client: Any, root: str, plan: dict[str, list[str]], env: dict[str, str],
            log_dir: str | None = None, dvc_args: list[str] | None = None) -> int:
    """Submit each stage as soon as its upstream stages have finished; report; return the exit code.

    Stages go to Dask without data dependencies between their tasks: Dask places a task on the worker
    that holds its inputs, which pinned every stage after a long one to that worker while others idled.
    """
    from distributed import as_completed

    run_id = uuid.uuid4().hex[:8]
    reporter = _Reporter()
    client.subscribe_topic(f"{TOPIC}-{run_id}", reporter.on_event)  # per run: a cluster may be shared
    t0 = time.monotonic()
    waiting = {stage: set(upstream) for stage, upstream in plan.items()}
    dependents: dict[str, list[str]] = collections.defaultdict(list)
    for stage, upstream in plan.items():
        for up in upstream:
            dependents[up].append(stage)
    futures: dict[str, Any] = {}
    outcomes: dict[str, dict] = {}

    def submit(stage: str) -> Any:
        futures[stage] = client.submit(run_stage, run_id, stage, root, env, log_dir, dvc_args or [],
                                       key=f"{stage}-{run_id}", pure=False)
        return futures[stage]

    def settle(outcome: dict) -> None:
        outcomes[outcome["stage"]] = outcome
        reporter.report(outcome)

    finished = as_completed()
    stage_of: dict[str, str] = {}
    try:  # from the first submission on: a Ctrl-C at any point stops what has started
        for stage in [s for s, ups in waiting.items() if not ups]:
            finished.add(submit(stage))
            stage_of[futures[stage].key] = stage
        for fut in finished:
            stage = stage_of[fut.key]
            settle(_outcome(stage, fut))
            if outcomes[stage]["status"] == "FAILED":
                for down in _downstream(stage, dependents):
                    if down not in outcomes:
                        settle({"stage": down, "status": "skipped", "reason": f"upstream {stage} failed"})
                continue
            for down in dependents[stage]:
                waiting[down].discard(stage)
                if not waiting[down] and down not in outcomes:
                    finished.add(submit(down))
                    stage_of[futures[down].key] = down
    except KeyboardInterrupt:
        reporter.stopping = True
        _stop(client, run_id, list(futures.values()))
        return 130
    _summary(plan, outcomes, time.monotonic() - t0)
    return 0 if all(o["status"] not in ("FAILED", "skipped") for o in outcomes.values()) else 1


def _downstream(stage: str, dependents: dict[str, list[str]]) -> list[str]:
    """Every stage that (transitively) depends on `stage`, each once."""
    seen: dict[str, None] = {}
    todo = list(dependents[stage])
    while todo:
        down = todo.pop()
        if down not in seen:
            seen[down] = None
            todo.extend(dependents[down])
    return list(seen)


def _outcome(stage: str, fut: Any) -> dict:
    if fut.status == "finished":
        return fut.result()
    exc = fut.exception()
    if isinstance(exc, StageFailed):
        return {"stage": stage, "status": "FAILED", "returncode": exc.returncode, "tail": exc.tail}
    return {"stage": stage, "status": "FAILED", "returncode": None, "tail": f"{type(exc).__name__}: {exc}"}


def _stop(client: Any, run_id: str, futures: list) -> None:
    from distributed import wait

    _log("interrupted: stopping the running stages (DVC records nothing for a stage that did not finish)")
    client.run(_signal_run, run_id, signal.SIGINT)
    try:
        not_done = wait(futures, timeout=INTERRUPT_GRACE_S).not_done
    except (KeyboardInterrupt, TimeoutError):
        not_done = True
    if not_done:
        client.run(_signal_run, run_id, signal.SIGKILL)
    _log("stopped; `reasonrl repro` resumes from the stages recorded in dvc.lock")


# ---- worker side ------------------------------------------------------------------------------------


def run_stage(run_id: str, stage: str, root: str, env: dict[str, str], log_dir: str | None,
              dvc_args: list[str]) -> dict:
    """Run `dvc repro -s <stage>` in `root` (a Dask task, submitted once its upstream stages are done)."""
    _quiet_worker_log()
    worker = _worker_address()
    _event(run_id, {"stage": stage, "status": "start", "worker": worker})
    start = time.monotonic()
    cmd = [sys.executable, "-c", _DVC_MAIN, "--wait-for-lock", "repro", "-s", stage, *dvc_args]
    returncode, status, tail = _run_dvc(run_id, stage, cmd, root, env, log_dir)
    seconds = time.monotonic() - start
    if returncode != 0:
        _event(run_id, {"stage": stage, "status": "FAILED", "returncode": returncode, "tail": tail})
        raise StageFailed(stage, returncode, tail)
    outcome = {"stage": stage, "status": status, "seconds": seconds, "worker": worker}
    _event(run_id, outcome)
    return outcome


def _run_dvc(run_id: str, stage: str, cmd: list[str], root: str, env: dict[str, str],
             log_dir: str | None) -> tuple[int, str, str]:
    tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
    status = "done"
    with _LOCK:  # registering under the lock: an interrupt either sees this process or prevents it
        if run_id in _STOPPED:
            return -signal.SIGINT, "interrupted", "interrupted before it started"
        proc = subprocess.Popen(cmd, cwd=root, env={**os.environ, **env}, text=True, errors="replace",
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        _RUNNING[(run_id, stage)] = proc
    try:
        with proc, _stage_log(log_dir, stage) as log:
            for line in proc.stdout:
                tail.append(line.rstrip("\n"))
                log.write(line)
                status = _status(line, status)
    finally:
        with _LOCK:
            _RUNNING.pop((run_id, stage), None)
    return proc.returncode, status, "\n".join(tail)


def _status(line: str, status: str) -> str:
    # What `dvc repro -s` did, from its log lines (informational only).
    if line.startswith("Running stage"):
        return "ran"
    if "is cached - skipping run" in line:
        return "restored"
    if line.startswith("Pulling data for"):
        return "pulled"
    if "didn't change, skipping" in line:
        return "unchanged"
    return status


def _stage_log(log_dir: str | None, stage: str) -> Any:
    if not log_dir:
        return open(os.devnull, "w")
    os.makedirs(log_dir, exist_ok=True)
    safe = "".join(c if c.isalnum() or c in "@-_." else "_" for c in stage)
    return open(os.path.join(log_dir, f"{safe}.log"), "w")


def _signal_run(run_id: str, sig: int) -> int:
    """On a worker: stop run `run_id`'s stages. The signal goes to each stage's whole process group:
    `dvc` ignores SIGINT while the command runs, the command gets it, and DVC records nothing."""
    with _LOCK:
        _STOPPED.add(run_id)
        procs = [p for (rid, _), p in _RUNNING.items() if rid == run_id]
    for proc in procs:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
    return len(procs)


class _NoStageFailures(logging.Filter):
    # The client reports a failed stage with its log tail; the worker's log need not repeat it.
    def filter(self, record: logging.LogRecord) -> bool:
        return not (str(record.msg).startswith("Compute Failed") and "StageFailed(" in str(record.args))


def _quiet_worker_log() -> None:
    log = logging.getLogger("distributed.worker")
    if not any(isinstance(f, _NoStageFailures) for f in log.filters):
        log.addFilter(_NoStageFailures())


def _worker_address() -> str:
    from distributed import get_worker

    with contextlib.suppress(ValueError):
        return get_worker().address
    return "local"


def _event(run_id: str, msg: dict) -> None:
    from distributed import get_worker

    with contextlib.suppress(ValueError):
        get_worker().log_event(f"{TOPIC}-{run_id}", msg)


# ---- reporting ---------------------------------------------------------------------------------------


def _log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class _Reporter:
    """Prints each start and outcome line once: from the worker's event (sent before its task ends, so
    lines come in the order things happened), or from the client if the event is late or lost."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._done: set[str] = set()
        self.stopping = False

    def on_event(self, event: tuple[float, dict]) -> None:
        _, msg = event
        if msg["status"] == "start":
            _log(f"start    {msg['stage']}  on {msg['worker']}")
        else:
            self.report(msg)

    def report(self, outcome: dict) -> None:
        with self._lock:
            if outcome["stage"] in self._done:
                return
            self._done.add(outcome["stage"])
        if self.stopping and outcome["status"] == "FAILED":
            _log(f"stopped  {outcome['stage']}")
        else:
            _log_outcome(outcome)


def _log_outcome(o: dict) -> None:
    if o["status"] == "skipped":
        _log(f"skipped  {o['stage']}  ({o['reason']})")
    elif o["status"] == "FAILED":
        _log(f"FAILED   {o['stage']}  (exit {o['returncode']}); last lines of its log:\n"
             + _indent(o["tail"]))
    else:
        _log(f"finished {o['stage']}  in {o['seconds']:.1f}s ({o['status']})")


def _indent(text: str) -> str:
    return "\n".join("    | " + line for line in text.splitlines())


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
    failed = [s for s in plan if outcomes[s]["status"] == "FAILED"]
    if failed:
        lines.append(f"failed: {', '.join(failed)}; finished stages are in dvc.lock, so after a fix "
                     "`reasonrl repro` (or `dvc repro`) resumes from there")
    _log("summary\n" + "\n".join(lines))
