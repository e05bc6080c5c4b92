"""`reasonrl repro`: parallel execution of a DVC pipeline on Dask, on small synthetic DVC repos.

Each repo has two independent stages `sleep@a` and `sleep@b` (a foreach, so names contain `@`) that
sleep and copy an input, and a `join` stage that needs both. Every stage appends its start and end
times to a log outside the repo, so the tests measure overlap and order from the stages themselves.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import yaml

from reasonrl.runner import plan as P
from reasonrl.runner.parallel import stale_plan

TIMEOUT = 120
# `reasonrl repro` without the CLI's other subcommands (which import torch: ~3 s per call here).
# test_stale_plan_is_the_downstream_closure goes through the real `reasonrl.runner.cli`.
REPRO = ("import argparse, sys; from reasonrl.runner import parallel; p = argparse.ArgumentParser(); "
         "parallel.add_arguments(p); sys.exit(parallel.run(p.parse_args(sys.argv[1:])))")


def _record(log: Path, name: str, body: str) -> str:
    """A stage command that logs `name start <time> <TORCH_NUM_THREADS>` and `name end <time>`."""
    return (f'echo "{name} start $(date +%s.%N) $TORCH_NUM_THREADS" >> {log} && {body} '
            f'&& echo "{name} end $(date +%s.%N)" >> {log}')


def _stages(tmp: Path, failing: bool) -> dict:
    log, dur = tmp / "times.log", tmp / "sleep_seconds"
    stages = {
        "sleep": {"foreach": ["a", "b"], "do": {
            "cmd": _record(log, "sleep@${item}", f"sleep $(cat {dur}) && cat in_${{item}}.txt > ${{item}}.tmp "
                           "&& mv ${item}.tmp ${item}.txt"),
            "deps": ["in_${item}.txt"], "outs": ["${item}.txt"]}},
        "join": {"cmd": _record(log, "join", "cat a.txt b.txt > join.txt"),
                 "deps": ["a.txt", "b.txt"], "outs": ["join.txt"]},
    }
    if failing:  # `bad` fails while the flag file exists; `after_bad` and `final` depend on it
        flag = tmp / "fail_flag"
        stages["bad"] = {"cmd": _record(log, "bad", f"if [ -e {flag} ]; then echo boom-xyz >&2; exit 3; fi "
                                        "&& echo bad > bad.txt"), "outs": ["bad.txt"]}
        stages["after_bad"] = {"cmd": _record(log, "after_bad", "cat bad.txt > after_bad.txt"),
                               "deps": ["bad.txt"], "outs": ["after_bad.txt"]}
        stages["final"] = {"cmd": _record(log, "final", "cat join.txt after_bad.txt > final.txt"),
                           "deps": ["join.txt", "after_bad.txt"], "outs": ["final.txt"]}
    return stages


@pytest.fixture
def env(monkeypatch):
    for key, value in {"DVC_NO_ANALYTICS": "1", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                       "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}.items():
        monkeypatch.setenv(key, value)
    for key in ("TORCH_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(key, raising=False)
    return os.environ.copy()


def sh(cmd: list[str], cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT)
    assert not check or out.returncode == 0, f"{cmd} -> {out.returncode}\n{out.stdout}\n{out.stderr}"
    return out


def make_repo(tmp: Path, seconds: float, failing: bool = False, remote: Path | None = None) -> Path:
    repo = tmp / "repo"
    repo.mkdir()
    sh(["git", "init", "-q"], repo)
    sh(["dvc", "init", "-q"], repo)
    if remote:  # what `dvc remote add -d team <remote>` writes
        (repo / ".dvc" / "config").write_text(f"[core]\n    remote = team\n['remote \"team\"']\n"
                                              f"    url = {remote}\n")
    (repo / "dvc.yaml").write_text(yaml.safe_dump({"stages": _stages(tmp, failing)}, sort_keys=False))
    for item in "ab":
        (repo / f"in_{item}.txt").write_text(f"input {item}\n")
    set_sleep(tmp, seconds)
    if failing:
        (tmp / "fail_flag").touch()
    sh(["git", "add", "-A"], repo)
    sh(["git", "commit", "-q", "-m", "synthetic pipeline"], repo)
    return repo


def set_sleep(tmp: Path, seconds: float) -> None:
    (tmp / "sleep_seconds").write_text(f"{seconds}\n")


def repro(repo: Path, *args: str, cli: bool = False) -> subprocess.CompletedProcess:
    cmd = ["-m", "reasonrl.runner.cli", "repro"] if cli else ["-c", REPRO]
    return sh([sys.executable, *cmd, *args], repo, check=False)


def times(tmp: Path) -> dict[str, dict]:
    """{stage: {"start": t, "end": t, "threads": str}} from the stages' own log (last run of each)."""
    out: dict[str, dict] = {}
    if not (tmp / "times.log").exists():
        return out
    for line in (tmp / "times.log").read_text().splitlines():
        name, event, t, *threads = line.split()
        out.setdefault(name, {})[event] = float(t)
        if event == "start":
            out[name]["threads"] = threads[0] if threads else ""
    return out


def started(tmp: Path) -> list[str]:
    log = tmp / "times.log"
    return [ln.split()[0] for ln in log.read_text().splitlines() if " start " in ln] if log.exists() else []


def overlap(t: dict, a: str, b: str) -> float:
    return min(t[a]["end"], t[b]["end"]) - max(t[a]["start"], t[b]["start"])


def dvc_status(repo: Path) -> dict:
    return json.loads(sh(["dvc", "status", "--json"], repo).stdout)


def locked_stages(repo: Path) -> set[str]:
    path = repo / "dvc.lock"
    return set(yaml.safe_load(path.read_text())["stages"]) if path.exists() else set()


def check_parallel_run(tmp: Path, repo: Path, out: subprocess.CompletedProcess, seconds: float) -> float:
    assert out.returncode == 0, out.stderr
    t = times(tmp)
    ab = overlap(t, "sleep@a", "sleep@b")
    print(f"overlap of sleep@a and sleep@b: {ab:.2f}s of {seconds}s each")
    # one after the other, the overlap is <= 0; any positive overlap is concurrency (a threshold of a fraction of
    # `seconds` failed when the machine was loaded and the stages' start-up staggered them by over a second)
    assert ab > 0, f"independent stages did not run concurrently: {t}"
    assert t["join"]["start"] >= max(t["sleep@a"]["end"], t["sleep@b"]["end"])
    assert {v["threads"] for v in t.values()} == {"1"}  # TORCH_NUM_THREADS=1 with 2 workers
    assert dvc_status(repo) == {}
    assert locked_stages(repo) == {"sleep@a", "sleep@b", "join"}
    for line in ("start    sleep@a", "finished sleep@b", "finished join", "summary", "3 ran"):
        assert line in out.stderr
    import torch  # the log names the machine and torch build the bytes came from

    assert f"CPUs; torch {torch.__version__}, CPU capability {torch.backends.cpu.get_cpu_capability()}" in out.stderr
    assert "(this process); the stages' numerics avx2; malloc " in out.stderr  # whose capability is whose
    return ab


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # from dvc internals, in this process
def test_stale_plan_is_the_downstream_closure(tmp_path, env):
    repo = make_repo(tmp_path, seconds=0)
    plan = stale_plan(str(repo), []).stages
    assert plan == {"sleep@a": [], "sleep@b": [], "join": ["sleep@a", "sleep@b"]}
    sh(["dvc", "repro"], repo)
    assert stale_plan(str(repo), []).stages == {}
    nothing = repro(repo, "-j", "2")
    assert nothing.returncode == 0 and "nothing to reproduce" in nothing.stderr
    (repo / "in_a.txt").write_text("changed\n")
    # `dvc status` sees only sleep@a; join is stale too, because its input is about to change
    assert set(dvc_status(repo)) == {"sleep@a"}
    assert stale_plan(str(repo), []).stages == {"sleep@a": [], "join": ["sleep@a"]}
    assert stale_plan(str(repo), ["sleep@b"]).stages == {}
    dry = repro(repo, "--dry", cli=True)
    assert dry.returncode == 0 and dry.stdout.splitlines() == ["sleep@a", "join  (after sleep@a)"]
    # both ran before and write no timing file: 2 x (UNTIMED_S + 5) s; sleep@a's own input changed, so neither
    # is counted as coming out unchanged
    assert "2 stale stages: about 18 s of stage time, from the stages' last timing files" in dry.stderr
    assert "stages: about 18 s of stage time, 9 s at -j 2, from the stages'" in repro(repo, "--dry", "-j", "2").stderr
    assert set(dvc_status(repo)) == {"sleep@a"}  # --dry ran nothing


# ----------------------------------------------------------------------------- the schedule, by hand

# a1 -> a2 -> report_a (the longest chain); b -> report_b (b alone completes a report);
# c1, c2 -> join_c (join_c: nothing depends on it, so it is a result too)
DAG = {"a1": [], "c1": [], "c2": [], "b": [], "a2": ["a1"], "report_a": ["a2"], "report_b": ["b"],
       "join_c": ["c1", "c2"]}
DEEPEST_FIRST = ["b", "report_b", "a1", "a2", "report_a", "c1", "c2", "join_c"]


def test_schedule_starts_reports_then_the_critical_path():
    s = P.Schedule(DAG)
    assert s.depth == {"a1": 3, "a2": 2, "report_a": 1, "b": 2, "report_b": 1, "c1": 2, "c2": 2, "join_c": 1}
    assert s.order() == DEEPEST_FIRST
    # with two workers: what is started as each stage finishes (the earliest-started finishes first)
    s, started, running = P.Schedule(DAG), [], []
    while s.ready or running:
        while s.ready and len(running) < 2:
            running.append(s.pop())
            started.append(running[-1])
        s.done(running.pop(0))
    assert started == ["b", "a1", "report_b", "a2", "c1", "report_a", "c2", "join_c"]


def test_schedule_skips_everything_behind_a_failure():
    s = P.Schedule(DAG)
    assert sorted(s.failed("a1")) == ["a2", "report_a"] and s.failed("report_b") == []
    chain = P.Schedule({"x": [], "y": ["x"], "z": ["y"], "w": ["x", "z"]})
    assert sorted(chain.failed("x")) == ["w", "y", "z"]
    assert chain.order() == ["x", "y", "z", "w"]


# ----------------------------------------------------------------------------- what DVC says and writes

def test_stage_status_from_the_lock_entry_and_the_run_cache(tmp_path):
    runs = tmp_path / "runs"
    # a long command with quotes: YAML folds and escapes it, so its text is not in the entry's file
    cmd = 'echo "a \'quoted\' start" >> log && ' + " && ".join(f"step{i} --flag={i}" for i in range(20))
    entry = {"cmd": cmd, "deps": [{"path": "in", "md5": "1"}], "outs": [{"path": "out", "md5": "2" * 32}]}
    old = {**entry, "deps": [{"path": "in", "md5": "0"}]}

    def record(name: str, value: dict) -> str:
        path = runs / name[:2] / name / "v"
        path.parent.mkdir(parents=True)
        path.write_text(yaml.safe_dump(value))
        return str(path)

    other = record("aa", old)
    before = P.run_cache_entries(str(runs))
    assert before == {other}
    assert P.stage_status(entry, entry, before, str(runs)) == "unchanged"
    assert P.stage_status(old, entry, before, str(runs)) == "ran"  # no entry at all: it was not cacheable
    new = record("bb", entry)  # written during the stage: it ran
    assert P.stage_status(old, entry, before, str(runs)) == "ran"
    assert P.stage_status(old, entry, before | {new}, str(runs)) == "restored"  # it was there before
    assert P.stage_status(None, entry, before | {new}, str(runs)) == "restored"


def test_the_runner_stops_on_sigint_and_sigterm_whatever_it_inherited():
    from reasonrl.runner import parallel

    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a shell's background job starts it
        parallel._stoppable()
        assert all(signal.getsignal(sig) is signal.default_int_handler for sig in saved)
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def test_read_lock_entry(tmp_path):
    lock = tmp_path / "dvc.lock"
    assert P.read_lock_entry(str(lock), "s@a") is None
    lock.write_text("schema: '2.0'\nstages:\n  s@a:\n    cmd: echo\n")
    assert P.read_lock_entry(str(lock), "s@a") == {"cmd": "echo"}
    assert P.read_lock_entry(str(lock), "s@b") is None
    lock.write_text("stages: [unclosed\n")
    assert P.read_lock_entry(str(lock), "s@a") is None


def test_a_restored_entry_is_recognised_as_dvc_reads_it(tmp_path):
    # DVC writes a learning rate 3e-06 unquoted: YAML 1.2 (DVC's reader) says a number, YAML 1.1 a string;
    # the lock entry and the run-cache entry must be read alike or a restore reads as a run
    from dvc.utils.serialize._yaml import _dump

    entry = {"cmd": "python stages/rl.py runs a", "params": {"params.yaml": {"runs.a": {"lr": 3e-06}}},
             "outs": [{"path": "out", "md5": "2" * 32}]}
    (tmp_path / ".dvc" / "tmp").mkdir(parents=True)
    with open(tmp_path / "dvc.lock", "w") as f:
        _dump({"schema": "2.0", "stages": {"rl@a": entry}}, f)
    assert "lr: 3e-06" in (tmp_path / "dvc.lock").read_text()
    read = P.read_lock_entry(str(tmp_path / "dvc.lock"), "rl@a")
    assert read == entry and P.read_lock_entry(str(tmp_path / "dvc.lock"), "rl@a") == entry  # the kept parse
    cached = tmp_path / "runs" / "aa" / "aa" / "v"
    cached.parent.mkdir(parents=True)
    with open(cached, "w") as f:
        _dump(entry, f)
    assert P.stage_status(None, read, {str(cached)}, str(tmp_path / "runs")) == "restored"


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # from dvc internals, in this process
def test_dvc_python_api_is_what_the_planner_expects(tmp_path, env):
    """Fails when DVC changes what `_dvc_stages` reads (Repo.index.graph, repo.stage.collect, Stage.changed,
    Stage.frozen, Stage.dvcfile, repo.stage_cache) or the run-cache's file format."""
    repo = make_repo(tmp_path, seconds=0)
    sub = repo / "sub"
    sub.mkdir()
    (sub / "dvc.yaml").write_text(yaml.safe_dump({"stages": {
        "frozen": {"cmd": "cat ../join.txt > f.txt", "deps": ["../join.txt"], "outs": ["f.txt"], "frozen": True},
        "last": {"cmd": "cat f.txt > last.txt", "deps": ["f.txt"], "outs": ["last.txt"]}}}))
    root, run_cache, stages = P._dvc_stages(str(repo), ["sub/dvc.yaml:last"])
    assert (root, run_cache) == (str(repo), str(repo / ".dvc" / "cache" / "runs"))
    # upstream first; a frozen stage's upstream is not needed, and it has none
    assert stages == [("sub/dvc.yaml:frozen", [], True, str(sub / "dvc.yaml")),
                      ("sub/dvc.yaml:last", ["sub/dvc.yaml:frozen"], True, str(sub / "dvc.yaml"))]
    _, _, stages = P._dvc_stages(str(repo), [])
    assert [(s, ups, changed) for s, ups, changed, _ in stages] == [
        ("sleep@a", [], True), ("sleep@b", [], True), ("join", ["sleep@a", "sleep@b"], True)]
    sh(["dvc", "repro", "join"], repo)
    assert [changed for *_, changed, _ in P._dvc_stages(str(repo), [])[2]] == [False] * 3
    plan = stale_plan(str(repo), ["sub/dvc.yaml"])
    assert plan.locks == {"sub/dvc.yaml:frozen": (str(sub / "dvc.lock"), "frozen"),
                          "sub/dvc.yaml:last": (str(sub / "dvc.lock"), "last")}
    # a run-cache entry holds exactly the stage's dvc.lock entry
    entry = P.read_lock_entry(str(repo / "dvc.lock"), "sleep@a")
    assert entry["cmd"] and any(yaml.safe_load(Path(p).read_text()) == entry
                                for p in P.run_cache_entries(run_cache))


def test_the_planner_skips_dvcs_rwlock_only_where_no_path_is_held_for_writing(tmp_path, env, monkeypatch):
    import json

    import dvc.rwlock as rwlock
    from dvc.exceptions import DvcException

    repo = make_repo(tmp_path, seconds=0)
    edits, original = [], rwlock._edit_rwlock
    monkeypatch.setattr(rwlock, "_edit_rwlock", lambda *a: edits.append(a) or original(*a))
    expected = {"sleep@a": [], "sleep@b": [], "join": ["sleep@a", "sleep@b"]}
    assert stale_plan(str(repo), []).stages == expected and edits == []  # no rwlock file yet
    lockfile_ = repo / ".dvc" / "tmp" / "rwlock"
    other = {"pid": os.getppid(), "cmd": "dvc repro elsewhere"}  # a live process, not this one
    lockfile_.write_text(json.dumps({"read": {str(repo / "in_a.txt"): [other]}, "write": {}}))
    assert stale_plan(str(repo), []).stages == expected and edits == []  # read entries refuse no read
    lockfile_.write_text(json.dumps({"read": {}, "write": {str(tmp_path / "elsewhere.txt"): other}}))
    assert stale_plan(str(repo), []).stages == expected and len(edits) == 12  # DVC's: four edits a stage
    lockfile_.write_text(json.dumps({"read": {}, "write": {str(repo / "in_a.txt"): other}}))
    with pytest.raises(DvcException, match="in_a.txt"):  # DVC's own refusal
        stale_plan(str(repo), [])
    for odd in ("{not json", '{"write": null}'):  # unreadable, or off DVC's schema: DVC says what is wrong
        lockfile_.write_text(odd)
        with pytest.raises(DvcException, match="rwlock|RWLock"):
            stale_plan(str(repo), [])
    assert rwlock.rwlock.__module__ == "dvc.rwlock"  # put back after each pass


@pytest.mark.slow
def test_local_cluster_runs_independent_stages_concurrently(tmp_path, env):
    repo = make_repo(tmp_path, seconds=3)
    check_parallel_run(tmp_path, repo, repro(repo, "-j", "2"), seconds=3)


@pytest.mark.slow
def test_stages_after_a_quick_one_spread_over_the_idle_workers(tmp_path, env):
    # `root` is quick; its two dependents are slow. Had their tasks depended on root's task, Dask would
    # have put both on the worker holding root's result, one after the other, while the other idled.
    log = tmp_path / "times.log"
    stages = {"root": {"cmd": _record(log, "root", "echo r > root.txt"), "outs": ["root.txt"]},
              "fan": {"foreach": ["a", "b"], "do": {
                  "cmd": _record(log, "fan@${item}", "sleep 3 && cat root.txt > fan_${item}.txt"),
                  "deps": ["root.txt"], "outs": ["fan_${item}.txt"]}}}
    repo = tmp_path / "repo"
    repo.mkdir()
    sh(["git", "init", "-q"], repo)
    sh(["dvc", "init", "-q"], repo)
    (repo / "dvc.yaml").write_text(yaml.safe_dump({"stages": stages}, sort_keys=False))
    out = repro(repo, "-j", "2")
    assert out.returncode == 0, out.stderr
    t = times(tmp_path)
    assert overlap(t, "fan@a", "fan@b") > 0, t  # one after the other on one worker: <= 0 (see check_parallel_run)
    assert min(t["fan@a"]["start"], t["fan@b"]["start"]) >= t["root"]["end"]


@pytest.mark.slow
def test_failing_stage_stops_only_its_dependents(tmp_path, env):
    repo = make_repo(tmp_path, seconds=0, failing=True)
    out = repro(repo, "-j", "2")
    assert out.returncode == 1
    assert "FAILED   bad" in out.stderr and "boom-xyz" in out.stderr and "failed: bad" in out.stderr
    assert "skipped  after_bad  (upstream bad failed)" in out.stderr
    assert "skipped  final  (upstream bad failed)" in out.stderr
    assert set(started(tmp_path)) == {"sleep@a", "sleep@b", "join", "bad"}
    assert locked_stages(repo) == {"sleep@a", "sleep@b", "join"}  # dvc.lock is valid and kept them
    assert set(dvc_status(repo)) == {"bad", "after_bad", "final"}

    (tmp_path / "fail_flag").unlink()  # the fix; plain `dvc repro` resumes from dvc.lock
    (tmp_path / "times.log").unlink()
    sh(["dvc", "repro"], repo)
    assert started(tmp_path) == ["bad", "after_bad", "final"]
    assert dvc_status(repo) == {}


@pytest.fixture
def dask_cluster(tmp_path, env):
    """A real `dask scheduler` and `dask worker` (2 single-threaded processes) on 127.0.0.1."""
    sched_file = tmp_path / "scheduler.json"
    procs = [subprocess.Popen(["dask", "scheduler", "--host", "127.0.0.1", "--port", "0",
                               "--no-dashboard", "--scheduler-file", str(sched_file)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        procs.append(subprocess.Popen(["dask", "worker", "--scheduler-file", str(sched_file),
                                       "--nworkers", "2", "--nthreads", "1", "--no-dashboard",
                                       "--memory-limit", "0"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        from distributed import Client

        with Client(scheduler_file=str(sched_file), timeout=60) as client:
            client.wait_for_workers(2, timeout=60)
            yield client.scheduler.address
    finally:
        for proc in reversed(procs):
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


@pytest.mark.slow
def test_external_scheduler_and_workers(tmp_path, dask_cluster):
    repo = make_repo(tmp_path, seconds=3)
    out = repro(repo, "--scheduler", dask_cluster)
    check_parallel_run(tmp_path, repo, out, seconds=3)
    assert "tcp://127.0.0.1:" in out.stderr  # start lines name the worker


@pytest.mark.slow
def test_run_cache_roundtrip_through_a_local_remote(tmp_path, env):
    repo = make_repo(tmp_path, seconds=0, remote=tmp_path / "remote")
    sh(["dvc", "repro"], repo)
    sh(["git", "add", "-A"], repo)
    sh(["git", "commit", "-q", "-m", "results"], repo)
    sh(["dvc", "push", "--run-cache"], repo)  # run records, and the outputs now in the workspace
    # Then a result that is not committed: only the run-cache (pushed) knows it.
    (repo / "in_a.txt").write_text("teammate's input\n")
    sh(["dvc", "repro"], repo)
    sh(["dvc", "push", "--run-cache"], repo)

    clone = tmp_path / "clone"  # a fresh clone, with its own empty cache
    sh(["git", "clone", "-q", str(repo), str(clone)], tmp_path)
    (tmp_path / "times.log").unlink()
    sh(["dvc", "pull", "--run-cache"], clone)
    assert "Data and pipelines are up to date" in sh(["dvc", "repro"], clone).stdout
    assert started(tmp_path) == []
    # `dvc pull --run-cache` fetched the run records but not their outputs: `--pull` fetches those
    (clone / "in_a.txt").write_text("teammate's input\n")
    out = repro(clone, "-j", "2", "--pull")
    assert out.returncode == 0, out.stderr
    assert "finished sleep@a" in out.stderr and "finished join" in out.stderr
    assert "2 restored" in out.stderr
    assert started(tmp_path) == []  # nothing reran: outputs came from the run-cache
    assert (clone / "a.txt").read_text() == "teammate's input\n"
    assert dvc_status(clone) == {}


@pytest.mark.slow
def test_ctrl_c_stops_workers_and_commits_nothing(tmp_path, env):
    repo = make_repo(tmp_path, seconds=60)
    cmd = [sys.executable, "-c", REPRO, "-j", "2"]
    # started as a shell's background job (`nohup reasonrl repro … &`) starts it: with SIGINT ignored
    proc = subprocess.Popen(cmd, cwd=repo, start_new_session=True, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    deadline = time.monotonic() + 60
    while set(started(tmp_path)) != {"sleep@a", "sleep@b"} and time.monotonic() < deadline:
        time.sleep(0.2)
    assert set(started(tmp_path)) == {"sleep@a", "sleep@b"}
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole process group
    _, err = proc.communicate(timeout=90)  # a 30 s grace for the stages, then closing the cluster, on a busy CI
    assert proc.returncode == 130, err
    assert "stopped  sleep@a" in err and "stopped  sleep@b" in err
    left = [p.info for p in psutil.process_iter(["cmdline", "status"])
            if p.info["status"] != psutil.STATUS_ZOMBIE and str(tmp_path) in " ".join(p.info["cmdline"] or [])]
    assert left == []  # no stage command survives
    assert not any((repo / f).exists() for f in ("a.txt", "b.txt", "join.txt"))
    assert locked_stages(repo) == set()
    assert set(dvc_status(repo)) == {"sleep@a", "sleep@b", "join"}


@pytest.mark.slow
def test_one_worker_starts_stages_deepest_first(tmp_path, env):
    log = tmp_path / "times.log"
    stages = {}
    for stage, ups in DAG.items():
        deps = [f"{u}.txt" for u in ups]
        stages[stage] = {"cmd": _record(log, stage, f"echo {stage} > {stage}.txt"), "outs": [f"{stage}.txt"],
                         **({"deps": deps} if deps else {})}
    repo = tmp_path / "repo"
    repo.mkdir()
    sh(["git", "init", "-q"], repo)
    sh(["dvc", "init", "-q"], repo)
    (repo / "dvc.yaml").write_text(yaml.safe_dump({"stages": stages}, sort_keys=False))
    dry = repro(repo, "--dry")
    assert [line.split()[0] for line in dry.stdout.splitlines()] == DEEPEST_FIRST
    out = repro(repo, "-j", "1")
    assert out.returncode == 0, out.stderr
    assert started(tmp_path) == DEEPEST_FIRST
    assert "8 ran" in out.stderr


def test_a_scheduler_it_cannot_reach_is_one_error_line(monkeypatch):
    import argparse

    import dask
    import distributed  # noqa: F401  (its defaults join dask's config on import)

    from reasonrl.errors import ConfigError
    from reasonrl.runner.parallel import _connect

    # Dask retries a refused connection for this long (30 s by default); dask.config.set would be undone
    # under the failed Client's own config change
    monkeypatch.setitem(dask.config.config["distributed"]["comm"]["timeouts"], "connect", "1s")
    for address, what in (("nowhere", "missing port"), ("tcp://127.0.0.1:1", "Timed out")):  # 1: nothing listens
        with pytest.raises(ConfigError) as e, _connect(argparse.Namespace(scheduler=address)):
            pass
        assert e.value.where == "--scheduler" and what in e.value.what and "drop --scheduler" in e.value.fix


def test_dry_into_a_closed_pipe_ends_without_a_traceback(tmp_path, env):
    repo = make_repo(tmp_path, 0.1)
    proc = subprocess.Popen([sys.executable, "-m", "reasonrl.runner.cli", "repro", "--dry"], cwd=repo,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()  # the reader has gone before the plan is printed (as `| head` goes after 10 lines)
    err = proc.stderr.read()
    assert proc.wait(timeout=TIMEOUT) == 1
    assert "Traceback" not in err and "Exception ignored" not in err, err


def _package(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / "reasonrl" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "reasonrl" / rel).write_text(text)
    return root / "reasonrl"


def test_a_checkout_whose_stages_would_import_another_checkouts_code_is_refused(tmp_path):
    from reasonrl.errors import ConfigError
    from reasonrl.runner.parallel import check_code, foreign_code, stage_library

    files = {"__init__.py": "", "rl/algorithm.py": "STEP = 1\n"}
    installed = _package(tmp_path / "other", files)
    here = tmp_path / "here"
    assert foreign_code(here, installed) is None  # no package of its own: a project that uses the library
    _package(here, files)
    assert foreign_code(here, installed) is None  # another copy, the same bytes: the stages run this code
    assert foreign_code(here, here / "reasonrl") is None  # the installed package is this checkout's
    (here / "reasonrl" / "rl" / "algorithm.py").write_text("STEP = 2\n")
    why = foreign_code(here, installed)
    assert f"imports the package from {installed}, not this checkout's ({here / 'reasonrl'})" in why
    assert why.endswith("their rl/algorithm.py differ: the stages would run that code")
    (here / "reasonrl" / "rl" / "algorithm.py").write_text("STEP = 1\n")
    (installed / "rl" / "extra.py").write_text("")  # a module only one of them has
    assert f"and rl/extra.py is only in {installed}: " in foreign_code(here, installed)
    with pytest.raises(ConfigError, match="this environment imports the package from"):
        check_code(here)  # against the package this environment's stages import
    check_code(here, remote=True)  # an existing cluster's workers: their environments, not checked from here
    root = Path(__file__).resolve().parents[1]
    assert foreign_code(root) is None  # the project against the package its stages import
    assert stage_library(here) == stage_library(root)  # from any folder: the installed one (or PYTHONPATH's)


def test_the_runner_refuses_before_any_stage_runs(tmp_path, env, monkeypatch):
    import argparse

    from reasonrl.errors import ConfigError
    from reasonrl.runner import parallel

    repo = make_repo(tmp_path, seconds=0)
    _package(repo, {"__init__.py": "# not the installed package\n"})
    ran = []
    monkeypatch.setattr(parallel, "execute", lambda *a, **k: ran.append(a) or 0)
    p = argparse.ArgumentParser()
    parallel.add_arguments(p)
    with pytest.raises(ConfigError, match=r"reasonrl: this environment imports the package from .*__init__.py "
                                          r"differ: .*\(run `pip install -e .` in this checkout"):
        parallel.run(p.parse_args(["--repo", str(repo)]))
    assert ran == []
    assert parallel.run(p.parse_args(["--repo", str(repo), "--dry"])) == 0  # a dry run runs no stage code


def test_the_package_a_stage_imports_is_found_as_a_stage_finds_it(tmp_path, monkeypatch):
    import stat

    from reasonrl.errors import ConfigError
    from reasonrl.runner.parallel import stage_library

    here = tmp_path / "here"
    _package(here, {"__init__.py": ""})  # not on a stage's path: its folder is stages/, not the checkout's
    other = _package(tmp_path / "other", {"__init__.py": ""})
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "other"))
    assert stage_library(here) == other
    monkeypatch.setenv("PYTHONSAFEPATH", "1")  # -c puts no folder first: PYTHONPATH's entry is the path's first
    assert stage_library(here) == other
    monkeypatch.delenv("PYTHONSAFEPATH")
    monkeypatch.delenv("PYTHONPATH")
    bare = tmp_path / "bin" / "python"  # a `python` without site-packages: it finds no reasonrl
    bare.parent.mkdir()
    bare.write_text(f'#!/bin/sh\nexec {sys.executable} -S "$@"\n')
    bare.chmod(bare.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bare.parent}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(ConfigError, match=rf"reasonrl: the stages' `python` \({bare}\) cannot import the package"):
        stage_library(here)


def test_the_summary_says_what_unchanged_means_when_a_stage_was(capsys):
    from reasonrl.runner.parallel import _summary

    plan = {"base@a": [], "eval@a": ["base@a"]}
    _summary(plan, {"base@a": {"status": "ran", "seconds": 2.0}, "eval@a": {"status": "unchanged", "seconds": 0.5}},
             2.5)
    err = capsys.readouterr().err
    assert "1 ran, 1 unchanged; wall 2.5s, stage time 2.5s (1.00x)" in err
    assert "unchanged: DVC found the stage's inputs with the bytes its outputs in dvc.lock were built from" in err
    _summary(plan, {"base@a": {"status": "ran", "seconds": 2.0}, "eval@a": {"status": "ran", "seconds": 0.5}}, 2.5)
    assert "unchanged:" not in capsys.readouterr().err
