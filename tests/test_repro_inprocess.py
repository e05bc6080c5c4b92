"""`reasonrl repro`'s scheduling logic in-process (issue #17, items 5 and the transitive-skip mutation).

tests/test_parallel.py runs the real thing in subprocesses (slow, and invisible to coverage). Here the
Dask cluster is an in-process one (threads), and each stage's `dvc repro -s` is replaced by a tiny
Python command (the module-level `_DVC_MAIN`) that prints what DVC would, writes what DVC writes when
the stage is meant to (its dvc.lock entry, a run-cache entry) and exits with the stage's planned return
code, so the plan, the submission order, the skipping of dependents, the outcome read from DVC's files
and the report are the real code's.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from pipeline_util import alive

from reasonrl.runner import parallel
from reasonrl.runner.plan import Plan, Schedule, near_targets

pytest.importorskip("distributed")

# `python -c FAKE --wait-for-lock repro -s <stage>`, run in the plan's root: the stage is the last argument.
# bad*: fails (exit 3). new*: records a new dvc.lock entry and a run-cache entry, as a stage DVC ran does.
# cached*: records the dvc.lock entry that the run-cache already holds, as a restored stage does. Anything
# else writes nothing (no dvc.lock entry before or after: counted as ran; see test_outcome_from_dvc_files).
FAKE = """
import sys, yaml
from pathlib import Path
s = sys.argv[-1]
print('Running stage ' + repr(s))
if s.startswith('bad'):
    print('boom in ' + s)
    sys.exit(3)
if s.startswith(('new', 'cached')):
    lock = Path('dvc.lock')
    data = yaml.safe_load(lock.read_text()) if lock.exists() else {'schema': '2.0', 'stages': {}}
    entry = {'cmd': 'make ' + s, 'outs': [{'path': s + '.txt', 'md5': ('1' if s.startswith('new') else '2') * 32}]}
    data['stages'][s] = entry
    lock.write_text(yaml.safe_dump(data))
    if s.startswith('new'):
        run = Path('runs') / ('n_' + s) / 'v'
        run.parent.mkdir(parents=True)
        run.write_text(yaml.safe_dump(entry))
"""


def plan_of(root, stages: dict[str, list[str]]) -> Plan:
    """A plan in `root` (lock file root/dvc.lock, run-cache root/runs), as `stale_plan` would give it."""
    return Plan(str(root), str(root / "runs"), stages, {s: (str(root / "dvc.lock"), s) for s in stages})


@pytest.fixture(scope="module")
def cluster():
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as c:
        yield c


def _args(**kw) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    parallel.add_arguments(p)
    a = p.parse_args([])
    for k, v in kw.items():
        setattr(a, k, v)
    return a


def test_failed_skips_transitively_and_lists_each_once():
    sched = Schedule({"a": [], "x": [], "b": ["a"], "c": ["a"], "d": ["b", "c"], "e": ["d"]})
    assert sorted(sched.failed("a")) == ["b", "c", "d", "e"]
    assert len(sched.failed("a")) == 4  # d is reached through b and through c, listed once
    assert sched.failed("d") == ["e"]
    assert sched.failed("x") == []


def test_outcome_from_dvc_files(cluster, monkeypatch, tmp_path, capsys):
    """ran, restored or unchanged, from the stage's dvc.lock entry and the run-cache (never DVC's log text)."""
    from distributed import Client

    monkeypatch.setattr(parallel, "_DVC_MAIN", FAKE)
    same = {"cmd": "make same", "outs": [{"path": "same.txt", "md5": "3" * 32}]}
    restored = {"cmd": "make cached", "outs": [{"path": "cached.txt", "md5": "2" * 32}]}
    (tmp_path / "dvc.lock").write_text(yaml.safe_dump({"schema": "2.0", "stages": {"same": same}}))
    (tmp_path / "runs/c_cached").mkdir(parents=True)
    (tmp_path / "runs/c_cached/v").write_text(yaml.safe_dump(restored))
    plan = plan_of(tmp_path, {"same": [], "new": [], "cached": ["new"]})
    with Client(cluster) as client:
        assert parallel.execute(client, plan, {}) == 0
    err = capsys.readouterr().err
    assert "finished same " in err and "(unchanged)" in err.split("finished same ")[1].splitlines()[0]
    assert "(ran)" in err.split("finished new ")[1].splitlines()[0]
    assert "(restored)" in err.split("finished cached ")[1].splitlines()[0]
    assert "1 ran, 1 restored, 1 unchanged" in err[err.index("summary"):]


def test_a_failing_stage_skips_exactly_its_dependents(cluster, monkeypatch, tmp_path, capsys):
    from distributed import Client

    monkeypatch.setattr(parallel, "_DVC_MAIN", FAKE)
    plan = plan_of(tmp_path, {"a": [], "bad": [], "after_bad": ["bad"], "b": ["a"], "final": ["after_bad", "b"]})
    with Client(cluster) as client:
        rc = parallel.execute(client, plan, {}, log_dir=str(tmp_path / "logs"))
    err = capsys.readouterr().err
    assert rc == 1
    assert "FAILED   bad  (exit 3)" in err and "    | boom in bad" in err
    # after_bad directly, final through after_bad: both skipped, never run
    assert "skipped  after_bad  (upstream bad failed)" in err and "skipped  final  (upstream bad failed)" in err
    assert "finished a " in err and "finished b " in err
    assert (tmp_path / "logs/a.log").read_text() == "Running stage 'a'\n"
    assert not (tmp_path / "logs/final.log").exists()
    summary = err[err.index("summary"):]
    assert "1 FAILED, 2 ran, 2 skipped" in summary and "failed: bad" in summary


def test_all_stages_finish_in_dependency_order(cluster, monkeypatch, tmp_path, capsys):
    from distributed import Client

    monkeypatch.setattr(parallel, "_DVC_MAIN", FAKE)
    plan = plan_of(tmp_path, {"a": [], "b": ["a"], "c": ["b"]})
    with Client(cluster) as client:
        assert parallel.execute(client, plan, {}) == 0
    err = capsys.readouterr().err
    assert err.index("finished a ") < err.index("finished b ") < err.index("finished c ")
    assert "3 ran" in err


def _dvc_repo(tmp_path):
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([sys.executable, "-m", "dvc", "init", "-q"], cwd=tmp_path, check=True)
    stages = {"one": {"cmd": "echo 1 > one.txt", "outs": ["one.txt"]},
              "two": {"cmd": "cat one.txt > two.txt", "deps": ["one.txt"], "outs": ["two.txt"]},
              "solo": {"cmd": "echo s > solo.txt", "outs": ["solo.txt"]}}
    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump({"stages": stages}))
    return tmp_path


def test_run_plans_from_dvc_and_runs_on_a_given_scheduler(cluster, monkeypatch, tmp_path, capsys):
    repo = _dvc_repo(tmp_path)
    assert parallel.run(_args(repo=str(repo), dry=True)) == 0
    lines = capsys.readouterr().out.splitlines()
    assert sorted(lines) == ["one", "solo", "two  (after one)"]
    assert lines.index("one") < lines.index("two  (after one)")
    assert parallel.run(_args(repo=str(repo), targets=["two"], dry=True)) == 0
    assert capsys.readouterr().out.splitlines() == ["one", "two  (after one)"]

    monkeypatch.setattr(parallel, "_DVC_MAIN", FAKE)
    assert parallel.run(_args(repo=str(repo), scheduler=cluster.scheduler_address)) == 0
    assert "3 ran" in capsys.readouterr().err


def test_run_rejects_bad_arguments(tmp_path, capsys):
    assert parallel.run(_args(jobs=0)) == 2
    assert "-j must be at least 1" in capsys.readouterr().err
    assert parallel.run(_args(repo=str(tmp_path))) == 2  # not a DVC repository
    assert "error:" in capsys.readouterr().err


def test_a_target_that_names_no_stage_points_to_the_closest_names(tmp_path, capsys):
    repo = _dvc_repo(tmp_path)
    assert parallel.run(_args(repo=str(repo), targets=["twoo"], dry=True)) == 2
    err = capsys.readouterr().err
    assert "error: Stage 'twoo' not found" in err and err.rstrip().endswith("(did you mean two?)")
    assert parallel.run(_args(repo=str(repo), targets=["zzz"], dry=True)) == 2  # nothing close: DVC's line alone
    assert "did you mean" not in capsys.readouterr().err
    # this repository's old single headline report names both of its successors, and nothing spelled alike
    here = str(Path(__file__).resolve().parents[1])
    both = " (did you mean report_headline_hop or report_headline_chain?)"
    assert near_targets(here, ["report_headline"]) == near_targets(here, ["dvc.yaml:report_headlin"]) == both
    assert near_targets(here, ["report_hacking", "rl_headlin@headline_s0"]) == " (did you mean rl_headline?)"
    assert near_targets(str(tmp_path / "nowhere"), ["report_headline"]) == ""


def test_a_task_that_fails_outside_its_stage_is_reported_as_failed(capsys):
    """A lost worker or an error in the task itself (not the stage's exit status): FAILED, no exit code."""
    lost = SimpleNamespace(status="error", exception=lambda: RuntimeError("worker lost"))
    outcome = parallel._outcome("x@1", lost)
    assert outcome == {"stage": "x@1", "status": "FAILED", "returncode": None, "tail": "RuntimeError: worker lost"}
    done = SimpleNamespace(status="finished", result=lambda: {"stage": "x@1", "status": "ran"})
    assert parallel._outcome("x@1", done) == {"stage": "x@1", "status": "ran"}
    parallel._log(parallel._outcome_line(outcome))
    assert "FAILED   x@1  (exit None)" in capsys.readouterr().err


def test_local_cluster_runs_without_dask_monitoring():
    """The local cluster's workers (separate processes) run with the profiler off and a slow resource monitor."""
    import dask

    with parallel._connect(_args(jobs=1)) as client:
        got = client.run(lambda: (dask.config.get("distributed.worker.profile.enabled"),
                                  dask.config.get("distributed.admin.system-monitor.interval")))
    assert list(got.values()) == [(False, "10s")]


def test_stages_do_not_inherit_the_nannys_malloc_setting(monkeypatch):
    """A Dask nanny sets MALLOC_TRIM_THRESHOLD_=65536 in its worker; a stage's environment drops it (or takes
    the runner's own value) and keeps everything else."""
    worker = {"PATH": "/bin", "MALLOC_TRIM_THRESHOLD_": "65536", "OMP_NUM_THREADS": "1"}
    assert parallel.stage_environ(worker, {"TORCH_NUM_THREADS": "1"}) == {
        "PATH": "/bin", "OMP_NUM_THREADS": "1", "TORCH_NUM_THREADS": "1"}
    assert parallel.stage_environ(worker, {"MALLOC_TRIM_THRESHOLD_": "0"})["MALLOC_TRIM_THRESHOLD_"] == "0"
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    with parallel._connect(_args(jobs=1)) as client:
        got = client.run(lambda: (os.environ.get("MALLOC_TRIM_THRESHOLD_"),
                                  "MALLOC_TRIM_THRESHOLD_" in parallel.stage_environ(os.environ, {})))
        assert "MALLOC_TRIM_THRESHOLD_" not in os.environ  # starting the cluster left the runner's environment alone
    assert list(got.values()) == [("65536", False)]  # the nanny sets it; the stage would not see it


@pytest.mark.timeout(60)  # unbounded, the read would wait for the `sleep`
def test_a_process_a_stage_left_holding_its_output_is_stopped_with_the_stage(tmp_path, monkeypatch):
    """The stage's output is read to its end; a process it left running (here a `sleep` in the background)
    keeps that end from coming, so after the grace it is killed with the stage's process group."""
    monkeypatch.setattr(parallel, "INTERRUPT_GRACE_S", 1.0)
    pidfile = tmp_path / "sleep.pid"
    monkeypatch.setattr(parallel, "_launch", lambda *a: subprocess.Popen(
        ["sh", "-c", f"sleep 300 & echo $! > {pidfile}; echo done"], stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, start_new_session=True))
    stop = SimpleNamespace(is_set=lambda: False)
    assert parallel._run_dvc([], str(tmp_path), {}, os.devnull, stop) == (0, "done")
    pid = int(pidfile.read_text())
    for _ in range(50):
        if not alive(pid):
            break
        time.sleep(0.1)
    assert not alive(pid)
