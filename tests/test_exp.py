"""`reasonrl exp run` (runner/experiment.py): dvc exp run's -S on the parallel runner, saved for `dvc exp show`.

The overrides on the real params.yaml (one line changes, the comments and the "off"/"on" keys stay); a bad -S stops
the command before anything is written or run; on the smoke pipeline's headline chain, the experiment reruns exactly
what `dvc exp run -S method=rft report_headline_hop` reruns, on `reasonrl repro -j 2`, and lands in `dvc exp show`.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from pipeline_util import ROOT, copy_repo, dropped, run, set_params, shrink, thin_repo

from reasonrl.errors import ReasonrlError
from reasonrl.runner.experiment import checked_overrides, write_overrides

GIT = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]


def exp_run(repo: Path, *args: str) -> subprocess.CompletedProcess:
    # this checkout's runner, whichever copy of reasonrl is installed: PYTHONPATH's, or where the repo is a copy of
    # this checkout, the copy's own package (the same files), which `-m` finds first in the working directory
    env = {"PYTHONPATH": str(ROOT), "DVC_NO_ANALYTICS": "1"}
    return run([sys.executable, "-m", "reasonrl.runner.cli", "exp", "run", *args], repo, check=False, env=env)


@pytest.fixture
def params_copy(tmp_path) -> Path:
    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")
    return tmp_path


def changed_lines(a: str, b: str) -> list[tuple[str, str]]:
    la, lb = a.splitlines(), b.splitlines()
    assert len(la) == len(lb)
    return [(x, y) for x, y in zip(la, lb) if x != y]


def test_an_override_changes_its_value_only(params_copy):
    before = (params_copy / "params.yaml").read_text()
    write_overrides(str(params_copy), checked_overrides(str(params_copy), ["method=rft", "rl.lr=3e-4"]))
    after = (params_copy / "params.yaml").read_text()
    (m_old, m_new), (lr_old, lr_new) = changed_lines(before, after)
    assert m_old.startswith("method: grpo ") and m_new.startswith("method: rft ")
    assert m_new.index("#") == m_old.index("#")  # the comment stays, in its column
    assert lr_new.split("#")[0].split() == ["lr:", "0.0003"] and lr_new.split("#")[1] == lr_old.split("#")[1]
    new, old = yaml.safe_load(after), yaml.safe_load(before)  # what the stages read
    assert new["method"] == "rft" and new["rl"]["lr"] == 3e-4
    assert {k: v for k, v in new.items() if k not in ("method", "rl")} == \
        {k: v for k, v in old.items() if k not in ("method", "rl")}


def test_a_value_yaml_1_1_would_misread_is_quoted_and_a_flow_mapping_keeps_its_line(params_copy):
    before = (params_copy / "params.yaml").read_text()
    sets = ["rl.kl_in=off", "headline.headline_s0.seed=7"]
    write_overrides(str(params_copy), checked_overrides(str(params_copy), sets))
    after = (params_copy / "params.yaml").read_text()
    assert len(changed_lines(before, after)) == 2
    new = yaml.safe_load(after)
    assert new["rl"]["kl_in"] == "off" and new["headline"]["headline_s0"]["seed"] == 7


def test_a_rewrite_that_pyyaml_would_read_differently_is_refused_before_writing(params_copy):
    # DVC's writer (what `dvc exp run -S` writes) unquotes the ablations' "off"/"on" keys: PyYAML's False/True
    before = (params_copy / "params.yaml").read_bytes()
    with pytest.raises(ReasonrlError, match=r"PyYAML reads at .*dynamic\.runs"):
        write_overrides(str(params_copy), checked_overrides(str(params_copy), ["rl.n_range=[4,15]"]))
    assert (params_copy / "params.yaml").read_bytes() == before


@pytest.mark.parametrize("arg, message", [
    ("rl.lrr=1", r"-S rl\.lrr=1: params\.yaml has no param 'rl\.lrr' \(did you mean 'rl\.lr'\?\)"),
    ("methd=rft", r"no param 'methd' \(did you mean 'method'\?\)"),
    ("zzzz=1", r"no param 'zzzz' \(add a new one with -S '\+zzzz=1'\)"),
    ("method", r"-S method: not an override"),
    ("method=grpo,rft", r"a sweep of 'method'"),
    ("+method=rft", r"already has 'method'"),
    ("other.yaml:a=1", r"-S other\.yaml:a=1: no params file other\.yaml"),
])
def test_a_bad_override_names_its_key(params_copy, arg, message):
    with pytest.raises(ReasonrlError, match=message):
        checked_overrides(str(params_copy), ["method=rft", arg])


def _tiny_dvc_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    run(["git", "init", "-q"], repo)
    run(["dvc", "init", "-q"], repo)
    (repo / "params.yaml").write_text("rl:\n  lr: 1.0e-4   # a comment DVC's writer keeps\n")
    (repo / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"s": {
        "cmd": f"echo ran >> {tmp_path / 'ran.log'} && echo 1 > out.txt", "params": ["rl.lr"], "outs": ["out.txt"]}}}))
    run([*GIT, "add", "-A"], repo)
    run([*GIT, "commit", "-qm", "init"], repo)
    return repo


def test_a_bad_key_fails_before_any_work(tmp_path):
    repo = _tiny_dvc_repo(tmp_path)
    before = (repo / "params.yaml").read_bytes()
    out = exp_run(repo, "-S", "rl.lrr=3e-4", "-n", "try")
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "error: -S rl.lrr=3e-4: params.yaml has no param 'rl.lrr' (did you mean 'rl.lr'?)"]
    assert (repo / "params.yaml").read_bytes() == before
    assert not (tmp_path / "ran.log").exists()  # no stage ran
    assert run(["git", "for-each-ref", "refs/exps"], repo).stdout == ""  # no experiment
    assert run(["git", "status", "--porcelain"], repo).stdout == ""


def test_a_checkout_whose_stages_would_run_other_code_is_refused_before_any_work(tmp_path):
    repo = _tiny_dvc_repo(tmp_path)
    (repo / "reasonrl").mkdir()
    (repo / "reasonrl" / "__init__.py").write_text("# another revision of the package\n")
    before = (repo / "params.yaml").read_bytes()
    # -P: the runner from PYTHONPATH (this checkout), not the fake package in the working directory
    env = {"PYTHONPATH": str(ROOT), "DVC_NO_ANALYTICS": "1"}
    out = run([sys.executable, "-P", "-m", "reasonrl.runner.cli", "exp", "run", "-S", "rl.lr=3e-4"], repo,
              check=False, env=env)
    assert out.returncode == 2
    line, = out.stderr.strip().splitlines()
    assert line.startswith(f"error: reasonrl: this environment imports the package from {ROOT / 'reasonrl'}")
    assert "their __init__.py differ" in line and line.endswith("(run `pip install -e .` in this checkout, or the "
                                                                 "command in that one)")
    assert (repo / "params.yaml").read_bytes() == before and not (tmp_path / "ran.log").exists()


def test_dry_lists_the_stale_stages_and_puts_the_params_back(tmp_path):
    repo = _tiny_dvc_repo(tmp_path)
    before = (repo / "params.yaml").read_bytes()
    out = exp_run(repo, "--dry", "-S", "rl.lr=3e-4")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["s"]
    assert (repo / "params.yaml").read_bytes() == before and not (tmp_path / "ran.log").exists()


# ------------------------------------------------------------------------------- the smoke pipeline's headline chain

# hop's headline runs (the README's experiment targets one task's headline report: the other task's runs stay put)
PARAMS = yaml.safe_load((ROOT / "params.yaml").read_text())
HEADLINES = [h for h, job in PARAMS["headline"].items() if not dropped(h) and job["task"] == "hop"]
CHAIN = {f"rl_headline@{h}" for h in HEADLINES} | {f"eval_headline@{h}" for h in HEADLINES} | {"report_headline_hop"}


@pytest.fixture(scope="module")
def headline_repo(tmp_path_factory):
    """The smoke pipeline (tests/test_pipeline.py's tiny params, seed 0 of every family) with its headline chain
    built by `reasonrl repro -j 2` and committed: hop's headline report and what it needs, under a minute on 2 cores."""
    repo = copy_repo(tmp_path_factory.mktemp("repo"))
    set_params(repo, lambda p: p.update(shrink(p)))
    thin_repo(repo)
    (repo / "dvc.lock").unlink()
    shutil.rmtree(repo / "reports")
    run([*GIT, "commit", "-qam", "tiny"], repo)
    run([sys.executable, "-m", "reasonrl.runner.cli", "repro", "-j", "2", "report_headline_hop"], repo)
    run([*GIT, "add", "-A"], repo)
    run([*GIT, "commit", "-qm", "baseline"], repo)
    return repo


@pytest.mark.slow
def test_an_experiment_runs_on_the_parallel_runner_and_lands_in_exp_show(headline_repo):
    repo, head = headline_repo, run(["git", "rev-parse", "HEAD"], headline_repo).stdout.strip()
    params_before = (repo / "params.yaml").read_text()
    out = exp_run(repo, "-S", "method=rft", "-j", "2", "-n", "rft", "report_headline_hop")
    assert out.returncode == 0, out.stderr[-3000:]
    assert set(re.findall(r"finished (\S+)\s+in .* \(ran\)", out.stderr)) == CHAIN  # as `dvc exp run` reruns them
    assert re.search(r"on tcp://\S+", out.stderr)  # on the Dask cluster's workers
    # the workspace as `dvc exp run` leaves it: HEAD at the baseline, the experiment's params and results applied
    assert run(["git", "rev-parse", "HEAD"], repo).stdout.strip() == head
    assert len(changed_lines(params_before, (repo / "params.yaml").read_text())) == 1
    assert json.loads(run(["dvc", "status", "--json", "report_headline_hop"], repo).stdout) == {}
    shown = json.loads(run(["dvc", "exp", "show", "--json"], repo, env={"DVC_NO_ANALYTICS": "1"}).stdout)
    baseline, = [b for b in shown if b["rev"] == head]
    exp, = [r for e in baseline["experiments"] or [] for r in e["revs"] if r["name"] == "rft"]
    assert exp["data"]["params"]["params.yaml"]["data"]["method"] == "rft"
    assert baseline["data"]["params"]["params.yaml"]["data"]["method"] == "grpo"
    answers = {p.relative_to(repo).as_posix() for p in (repo / "reports/headline_hop/answers").glob("*.json")}
    assert answers and answers <= set(exp["data"]["metrics"])  # with the other studies' (not built here)
    for path in answers:  # the experiment's metrics are the run's, not the baseline's
        written = {k: v for k, v in json.loads((repo / path).read_text()).items() if v is not None}  # DVC drops nulls
        assert exp["data"]["metrics"][path]["data"] == written
    # the experiment's commit holds the lock entries of the stages that ran, with the new method
    lock = yaml.safe_load(run(["git", "show", f"{exp['rev']}:dvc.lock"], repo).stdout)
    assert all(lock["stages"][s]["params"]["params.yaml"]["method"] == "rft" for s in CHAIN if s.startswith("rl_"))
    # a name taken is refused before any work
    again = exp_run(repo, "-S", "method=sft", "-n", "rft", "report_headline_hop")
    assert again.returncode == 2 and "--name rft: an experiment of this commit has that name" in again.stderr
    assert "method: rft" in (repo / "params.yaml").read_text()

