"""Smoke build of the whole DAG on tiny params (`reasonrl repro -j 2`: `dvc repro -s` per stage on Dask),
then incremental-rebuild checks."""

import functools
import json

import pytest
import yaml
from pipeline_util import ROOT, copy_repo, rerun_after, run, set_params, shrink, stages_that_would_run, stale_after

pytestmark = pytest.mark.slow


def all_stages() -> set[str]:
    dvc = yaml.safe_load((ROOT / "dvc.yaml").read_text())
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    names = set()
    for name, stage in dvc["stages"].items():
        if "foreach" in stage:
            group = stage["foreach"]
            keys = functools.reduce(dict.get, group[2:-1].split("."), params) if isinstance(group, str) else group
            names |= {f"{name}@{k}" for k in keys}
        else:
            names.add(name)
    return names


@pytest.fixture(scope="module")
def tiny_repo(tmp_path_factory):
    repo = copy_repo(tmp_path_factory.mktemp("repo"))
    set_params(repo, lambda p: p.update(shrink(p)))
    run(["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qam", "tiny"], repo)
    run(["reasonrl", "repro", "-j", "2"], repo)  # the parallel runner: half the wall clock of dvc repro
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

    direct, closure = stale_after(tiny_repo, update)
    assert direct == {"mixed@think2"}
    # the base, and the zero study's run from it, its eval, the study's report and the index
    assert closure == {"mixed@think2", "rl@zero_think2", "eval@zero_think2", "report_zero", "report_index"}


def test_changing_an_eval_set_reruns_data_and_every_model_evaluated_on_it(tiny_repo):
    def update(p):
        p["data"]["sets"]["n8"]["count"] = 3

    direct, closure = stale_after(tiny_repo, update)
    assert direct == {"data"}
    assert {"base@cot_L2", "base@direct_L2", "mixed@think2", "mixed@noskill", "passk@base"} <= closure
    assert not closure & {"exact", "report_exact"}  # the exact toy reads no evaluation set


def test_smoke_verifiers_beat_chance_and_bases_are_evaluated(tiny_repo):
    for name in ("orm", "prm_full"):
        m = json.loads((tiny_repo / f"reports/metrics/verifier_{name}.json").read_text())
        assert m["kind"] == name and m["auc"] > 0.5, m
    m = json.loads((tiny_repo / "reports/metrics/eval_base_cot_L2.json").read_text())
    assert set(m["failure_mix"]) == {"correct", "overshoot", "early", "lookup", "miscopy", "malformed"}
    assert list(m["pass_at_k"]) == ["1", "2", "4"]  # passk_N shrinks to 4: larger k are skipped
    csv = (tiny_repo / "reports/eval/passk_base_direct_L2.csv").read_text().splitlines()
    assert csv[0] == "k,pass_at_k,random_baseline" and len(csv) == 4


def test_changing_the_orm_reruns_only_it_and_what_uses_it(tiny_repo):
    def update(p):
        p["verifiers"]["orm"]["seed"] = 1

    direct, closure = stale_after(tiny_repo, update)
    assert direct == {"verifier@orm"}
    assert closure == {"verifier@orm", "rl_orm@hack_orm", "rl_orm@hack_orm_guard", "eval_orm@hack_orm",
                       "eval_orm@hack_orm_guard", "report_hacking", "report_index"}


def test_smoke_studies_write_every_figure_the_index_lists(tiny_repo):
    index = (tiny_repo / "reports/index.md").read_text()
    for study in ("methods", "passk", "zero", "hacking", "ablations"):
        manifest = json.loads((tiny_repo / f"reports/{study}/manifest.json").read_text())
        assert json.loads((tiny_repo / f"reports/metrics/{study}.json").read_text())
        for fig in manifest["figures"]:
            assert (tiny_repo / "reports" / fig["file"]).stat().st_size > 0 and f"]({fig['file']})" in index
    m = json.loads((tiny_repo / "reports/metrics/passk_GRPO.json").read_text())
    assert set(m["sets"]) == {"n8", "n12", "n16"} and list(m["sets"]["n12"]["pass_at_k"]) == ["1", "2", "4"]


def test_changing_one_study_run_reruns_it_its_eval_its_report_and_the_index(tiny_repo):
    def update(p):
        p["runs_orm"]["hack_orm"]["beta"] = 0.1

    direct, closure = stale_after(tiny_repo, update)
    assert direct == {"rl_orm@hack_orm"}
    assert closure == {"rl_orm@hack_orm", "eval_orm@hack_orm", "report_hacking", "report_index"}


def test_dvc_plots_show_renders_the_step_wise_curves(tiny_repo, tmp_path):
    out = run(["dvc", "plots", "show", "--json"], tiny_repo)  # exits 0 even when a plot fails to load
    shown = json.loads(out.stdout)
    assert not shown.get("errors") and "failed" not in out.stderr, shown.get("errors")
    assert {"methods_true_reward", "hacking_proxy_vs_true", "zero_think_rate", "ablations_zero_variance",
            "ablations_wrong_length", "passk_n12", "reports/rl/grpo_s0.csv"} <= set(shown["data"])
    run(["dvc", "plots", "show", "-o", str(tmp_path / "plots")], tiny_repo)
    assert (tmp_path / "plots/index.html").stat().st_size > 0


def test_changing_the_headline_method_reruns_exactly_the_headline_chain(tiny_repo):
    def update(p):
        p["method"] = "rft"

    assert stale_after(tiny_repo, update) == ({"rl_headline"}, {"rl_headline", "eval_headline"})
    # and a real `dvc repro` reruns exactly that chain, not the data or the base it reads (the only test
    # here that runs stages again)
    assert rerun_after(tiny_repo, update, targets=("eval_headline",)) == {"rl_headline", "eval_headline"}
