"""Smoke `dvc repro` of the whole DAG on tiny params, then incremental-rebuild checks."""

import json

import pytest
import yaml

from pipeline_util import ROOT, copy_repo, rerun_after, run, set_params, shrink, stages_that_would_run

pytestmark = pytest.mark.slow


def all_stages() -> set[str]:
    dvc = yaml.safe_load((ROOT / "dvc.yaml").read_text())
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    names = set()
    for name, stage in dvc["stages"].items():
        if "foreach" in stage:
            group = stage["foreach"]
            keys = params[group[2:-1]] if isinstance(group, str) else group
            names |= {f"{name}@{k}" for k in keys}
        else:
            names.add(name)
    return names


@pytest.fixture(scope="module")
def tiny_repo(tmp_path_factory):
    repo = copy_repo(tmp_path_factory.mktemp("repo"))
    set_params(repo, lambda p: p.update(shrink(p)))
    run(["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qam", "tiny"], repo)
    run(["dvc", "repro"], repo)
    return repo


def test_smoke_repro_builds_everything(tiny_repo):
    assert stages_that_would_run(tiny_repo) == set()
    status = run(["dvc", "status", "--json"], tiny_repo).stdout
    assert json.loads(status) == {}
    lock = yaml.safe_load((tiny_repo / "dvc.lock").read_text())
    assert set(lock["stages"]) == all_stages()
    m = json.loads((tiny_repo / "reports/metrics/base_cot_L2.json").read_text())
    assert 0 <= m["n8"]["acc"] <= 1 and set(m["n12"]["by_k"]) == {"3", "4", "5", "6"}


def test_changing_one_mixed_base_reruns_only_it(tiny_repo):
    def update(p):
        p["mixed"]["think2"]["stage2"]["steps"] = 4

    assert rerun_after(tiny_repo, update) == {"mixed@think2"}


def test_changing_an_eval_set_reruns_data_and_every_model_evaluated_on_it(tiny_repo):
    def update(p):
        p["data"]["sets"]["n8"]["count"] = 3

    rerun = rerun_after(tiny_repo, update)
    assert {"data", "base@cot_L2", "base@direct_L2", "mixed@think2", "mixed@noskill"} <= rerun
