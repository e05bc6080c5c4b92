"""`reasonrl repro`'s scheduling logic in-process (issue #17, items 5 and the `_downstream` mutation).

tests/test_parallel.py runs the real thing in subprocesses (slow, and invisible to coverage). Here the
Dask cluster is an in-process one (threads), and each stage's `dvc repro -s` is replaced by a tiny
Python command (the module-level `_DVC_MAIN`) that prints what DVC would and exits with the stage's
planned return code, so the plan, the submission order, the skipping of dependents and the report are
the real code's.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest
import yaml

from reasonrl import parallel

pytest.importorskip("distributed")

# `python -c FAKE --wait-for-lock repro -s <stage>`: the stage is the last argument
FAKE = ("import sys; s = sys.argv[-1]; print('Running stage ' + repr(s)); "
        "print('boom in ' + s) if s.startswith('bad') else None; sys.exit(3 if s.startswith('bad') else 0)")


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


def test_downstream_is_transitive_and_lists_each_once():
    dependents = {"a": ["b", "c"], "b": ["d"], "c": ["d"], "d": ["e"], "e": [], "x": []}
    assert sorted(parallel._downstream("a", dependents)) == ["b", "c", "d", "e"]
    assert len(parallel._downstream("a", dependents)) == 4
    assert parallel._downstream("d", dependents) == ["e"]
    assert parallel._downstream("x", dependents) == []


def test_status_reads_dvc_lines():
    assert parallel._status("Running stage 'a':", "done") == "ran"
    assert parallel._status("Stage 'a' is cached - skipping run, checking out outputs", "done") == "restored"
    assert parallel._status("Pulling data for stage 'a'", "done") == "pulled"
    assert parallel._status("Stage 'a' didn't change, skipping", "done") == "unchanged"
    assert parallel._status("anything else", "ran") == "ran"


def test_a_failing_stage_skips_exactly_its_dependents(cluster, monkeypatch, tmp_path, capsys):
    from distributed import Client

    monkeypatch.setattr(parallel, "_DVC_MAIN", FAKE)
    plan = {"a": [], "bad": [], "after_bad": ["bad"], "b": ["a"], "final": ["after_bad", "b"]}
    with Client(cluster) as client:
        rc = parallel.execute(client, str(tmp_path), plan, {}, log_dir=str(tmp_path / "logs"))
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
    plan = {"a": [], "b": ["a"], "c": ["b"]}
    with Client(cluster) as client:
        assert parallel.execute(client, str(tmp_path), plan, {}) == 0
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


def test_stage_failed_names_the_stage():
    err = parallel.StageFailed("x@1", 3, "tail")
    assert str(err) == "stage 'x@1' failed (exit 3)" and err.tail == "tail"
