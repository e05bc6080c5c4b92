"""Smoke build of the whole DAG on tiny params (`reasonrl repro -j 2`: `dvc repro -s` per stage on Dask),
then incremental-rebuild checks. The smoke DAG is thin: seed 0 of every run family (pipeline_util.thin),
which still covers every stage kind (one headline run, one seed per study arm)."""

import functools
import json
import re
import shlex
import shutil
import sys

import pytest
import yaml
from pipeline_util import (
    KEEP_SEEDS,
    ROOT,
    copy_repo,
    doc_example_task,
    dropped,
    run,
    set_params,
    shrink,
    stages_that_would_run,
    stale_after,
    thin_repo,
)

pytestmark = pytest.mark.slow

# What a changed hop study run feeds beyond its own chain: every report that reads the folders reports/rl/hop
# and reports/eval/hop (cheap: seconds each), the study plots' data and the index.
# and run 2's primaries, which read the zero, hacking and ablations studies' answer folders
READERS = {"report_methods", "report_zero", "report_hacking", "report_ablations", "plots", "report_index",
           "report_primaries"}
# The reports that read chain runs: chain's headline report, the passk study that pools both tasks, the index
# that quotes them, run 2's primaries that read the passk data
CHAIN_READERS = {"report_headline_chain", "report_passk", "report_index", "report_primaries"}
# every headline run the smoke DAG keeps, and what a changed `method` reruns: their chains,
# each task's headline report and the index that lists them
HEADLINES = [h for h in yaml.safe_load((ROOT / "params.yaml").read_text())["headline"] if not dropped(h)]
HEADLINE_CHAINS = ({f"rl_headline@{h}" for h in HEADLINES} | {f"eval_headline@{h}" for h in HEADLINES}
                   | {"report_headline_hop", "report_headline_chain", "report_index"})
SEEDS = tuple(range(KEEP_SEEDS))  # the seeds of every run family in the smoke DAG


def all_stages(repo) -> set[str]:
    dvc = yaml.safe_load((repo / "dvc.yaml").read_text())
    params = yaml.safe_load((repo / "params.yaml").read_text())
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
    thin_repo(repo)  # seed 0 of every run family, two stability variants: 45 RL runs instead of 219, 152 stages
    # Built from nothing: without the committed full run's dvc.lock (~245 stages, 29,000 lines), which
    # DVC reads and rewrites around every stage (seconds each), and without the reports it lists.
    (repo / "dvc.lock").unlink()
    shutil.rmtree(repo / "reports")
    run(["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qam", "tiny"], repo)
    run(["reasonrl", "repro", "-j", "2"], repo)  # the parallel runner: half the wall clock of dvc repro
    return repo


def test_smoke_repro_builds_everything(tiny_repo):
    assert stages_that_would_run(tiny_repo) == set()
    status = run(["dvc", "status", "--json"], tiny_repo).stdout
    assert json.loads(status) == {}
    lock = yaml.safe_load((tiny_repo / "dvc.lock").read_text())
    assert all_stages(tiny_repo) <= set(lock["stages"])  # the committed lock may still name stages since renamed
    assert {s.split("@")[0] for s in all_stages(tiny_repo)} == {s.split("@")[0] for s in all_stages(ROOT)}
    m = json.loads((tiny_repo / "reports/metrics/base_cot.json").read_text())
    assert 0 <= m["in"]["acc"] <= 1 and set(m["in"]["by_k"]) == {"3", "4", "5", "6"}
    assert set(json.loads((tiny_repo / "reports/metrics/base_chain_s0.json").read_text())["edge"]["by_k"]) == {"7"}


def test_changing_one_mixed_phase_2_reruns_only_it_and_what_reads_it(tiny_repo):
    def update(p):
        p["mixed"]["phase2"]["think2"]["train"]["steps"] = 4

    direct, closure = stale_after(tiny_repo, update)
    assert direct == {"mixed@think2"}
    # not the shared phase 1, not the other phase-2 bases
    # the zero runs, the reward controls' too, have no eval@ stage: the zero study reads only their training records
    runs = {f"zero_think2_s{i}" for i in SEEDS}  # run 2 cut the reward controls (docs/studies.md, the cut list)
    assert closure == {"mixed@think2"} | {f"rl_noeval@{r}" for r in runs} | READERS


def test_changing_the_shared_mixed_phase_1_reruns_every_base_built_on_it(tiny_repo):
    def update(p):
        p["mixed"]["phase1"]["skill"]["train"]["lr"] = 2e-3

    direct, closure = stale_after(tiny_repo, update)
    assert direct == {"mixed_p1@skill"}
    built_on = {"think0", "think2", "think10"}
    runs = {f"zero_{b}_s{i}" for b in (*built_on, "think0_hot") for i in SEEDS}  # the hot control starts at think0
    assert closure == ({"mixed_p1@skill"} | {f"mixed@{b}" for b in built_on} | {f"rl_noeval@{r}" for r in runs}
                       | READERS)
    assert "base@direct" not in closure and "rl_noeval@zero_noskill_s0" not in closure


def test_changing_an_eval_set_reruns_data_and_every_model_evaluated_on_it(tiny_repo):
    def update(p):
        p["data"]["hop"]["in"]["count"] = 3

    direct, closure = stale_after(tiny_repo, update)
    assert direct == {"data@hop"}
    assert {"base@cot", "base@direct", "mixed_p1@skill", "mixed@think2", "passk@base_s0", "eval_base@cot",
            "eval@grpo_s0", "eval_headline@headline_s0"} <= closure
    assert not closure & {"exact", "report_exact", "data@chain", "base@chain_s0", "eval_base@chain_s0"}


def test_changing_a_second_task_param_reruns_nothing_of_hop_world(tiny_repo):
    def update(p):
        p["data"]["chain"]["edge"]["seed"] = 22
        p["bases"]["chain_s0"]["train"]["lr"] = 2e-3

    direct, closure = stale_after(tiny_repo, update)
    assert direct == {"data@chain", "base@chain_s0"}
    # the chain base's own chain: its evaluation, verifiers, headline run, edge-study runs and their pass@k (and the
    # code stamps that hold chain's data sets, through which the runs, evaluations and pass@k read them);
    # the reports of the studies that hold chain arms (headline, passk) and the index. No hop-world data, base,
    # run, evaluation or report reruns: the hop studies read reports/rl/hop and reports/eval/hop only
    chain = {"rl_noeval@chainedge_edge_s0", "rl_noeval@chainver_edge_s0"} | {
        f"passk@{m}" for m in ("cbase_s0", "cbase_draw2_s0", "cGRPO_edge_s0", "cGRPO_ver_s0")}
    chain |= {f"code_{script}@chain" for script in ("base", "rl", "eval", "passk")}
    assert closure == chain | {"data@chain", "base@chain_s0", "eval_base@chain_s0", "verifier@chain_orm",
                               "verifier@chain_prm", "rl_headline@headline_chain_s0",
                               "eval_headline@headline_chain_s0"} | CHAIN_READERS


def stage_tasks(repo) -> dict[str, str]:
    """stage -> the task its item names (the key of a stage per task, data@ or a code stamp, is its task), for
    every foreach stage."""
    dvc = yaml.safe_load((repo / "dvc.yaml").read_text())["stages"]
    params = yaml.safe_load((repo / "params.yaml").read_text())
    out = {}
    for stage in all_stages(repo):
        group, _, key = stage.partition("@")
        if key:
            item = functools.reduce(dict.get, dvc[group]["foreach"][2:-1].split("."), params)[key]
            out[stage] = key if dvc[group]["foreach"] == "${data}" else item["task"]
    return out


def test_adding_a_task_plans_only_its_own_stages(tiny_repo):
    """docs/extending.md's example task, added as the doc says (its module, data and a base) to a scratch copy:
    `reasonrl repro --dry` plans its code stamps, its data, its base and that base's evaluation, which writes
    under reports/eval/<its name>/; no existing stage, of any task or study, is stale."""
    name, source, sections = doc_example_task()
    module = tiny_repo / f"reasonrl/tasks/{name}.py"
    module.write_text(source)
    try:
        set_params(tiny_repo, lambda p: [p[group].update(entries) for group, entries in shrink(sections).items()])
        out = run(["reasonrl", "repro", "--dry"], tiny_repo).stdout
        planned = {line.split()[0] for line in out.splitlines() if line.strip()}
    finally:
        module.unlink()
        run(["git", "checkout", "params.yaml"], tiny_repo)
    stamps = {f"code_{script}@{name}" for script in ("task", "data", "base", "verifier", "rl", "eval", "passk")}
    assert planned == {f"data@{name}", f"base@{name}", f"eval_base@{name}"} | stamps


def test_a_comment_in_a_task_module_reruns_its_stages_and_the_reports_of_its_runs(tiny_repo):
    """A comment added to the chain task's module: its stamp (the only stage that names the module), then every
    stage of the chain task, its code stamps included, then the reports that read chain runs (headline, passk, the
    index); no stage that reads only hop runs."""
    module = tiny_repo / "reasonrl/tasks/chain.py"
    try:
        direct, closure = stale_after(tiny_repo, lambda p: module.write_text(module.read_text() + "# edited\n"))
    finally:
        run(["git", "checkout", "reasonrl/tasks/chain.py"], tiny_repo)
    chain = {stage for stage, task in stage_tasks(tiny_repo).items() if task == "chain"}
    assert {"data@chain", "base@chain_s0", "verifier@chain_orm", "passk@cbase_s0"} <= chain
    assert direct == {"code_task@chain"}
    assert closure == chain | CHAIN_READERS  # every stage of the chain task, and no hop stage


def test_smoke_verifiers_beat_chance_and_bases_are_evaluated(tiny_repo):
    for name in ("orm", "prm_full"):
        m = json.loads((tiny_repo / f"reports/metrics/verifier_{name}.json").read_text())
        assert m["kind"] == name and m["auc"] > 0.5, m
    m = json.loads((tiny_repo / "reports/eval/hop/base_cot.json").read_text())
    assert set(m) == {"N", "in", "edge", "far"} and m["N"] == 4
    for name in ("in", "edge", "far"):
        assert set(m[name]["failure_mix"]) == {"correct", "overshoot", "early", "lookup", "miscopy", "malformed"}
        assert list(m[name]["pass_at_k"]) == ["1", "2", "4"]  # passk_N shrinks to 4: larger k are skipped
        assert 0 <= m[name]["sampled_acc"] <= 1
    csv = (tiny_repo / "reports/eval/hop/passk_base_direct.csv").read_text().splitlines()
    for stage in ("base_cot", "mixed_p1_skill", "rl_grpo_s0", "eval_rl_grpo_s0", "passk_GRPO_edge_s0", "plots"):
        assert set(json.loads((tiny_repo / f"reports/timing/{stage}.json").read_text())) >= {"seconds"}, stage
    assert "seconds" not in (tiny_repo / "reports/metrics/base_cot.json").read_text()
    assert csv[0] == "set,k,pass_at_k,pass_at_k_answer,random_baseline" and len(csv) == 1 + 3 * 3
    outcomes = (tiny_repo / "reports/eval/hop/outcomes_base_cot.csv").read_text().splitlines()
    # in: 2 ns x 4 ks, edge: 2 ns x 1 k, far: 1 n x 2 ks, count 2 each
    assert outcomes[0].split(",")[-2:] == ["sampled", "sampled_answer"] and len(outcomes) == 1 + 2 * (8 + 2 + 2)
    chain = json.loads((tiny_repo / "reports/eval/chain/base_chain_s0.json").read_text())
    assert set(chain["edge"]["failure_mix"]) == {"correct", "overshoot", "early", "lookup", "arith", "miscopy",
                                                  "malformed"}


def test_changing_the_orm_reruns_only_it_and_what_uses_it(tiny_repo):
    def update(p):
        p["verifiers"]["orm"]["seed"] = 1

    direct, closure = stale_after(tiny_repo, update)
    assert direct == {"verifier@orm"}
    runs = {f"{r}_s{i}" for r in ("orm", "ormguard") for i in SEEDS}
    assert closure == {"verifier@orm"} | {f"rl_orm@{r}" for r in runs} | {f"eval_orm@{r}" for r in runs} | READERS


def test_smoke_studies_write_every_figure_the_details_pages_list(tiny_repo):
    index = (tiny_repo / "reports/index.md").read_text()
    for study in ("headline_hop", "headline_chain", "methods", "passk", "zero", "hacking", "ablations"):
        manifest = json.loads((tiny_repo / f"reports/{study}/manifest.json").read_text())
        assert json.loads((tiny_repo / f"reports/metrics/{study}.json").read_text())
        details = (tiny_repo / f"reports/{study}/details.md").read_text()
        assert f"[Details]({study}/details.md)" in index
        for fig in manifest["figures"]:
            assert (tiny_repo / "reports" / fig["file"]).stat().st_size > 0 and f"[{fig['file']}](" in details
    m = json.loads((tiny_repo / "reports/passk/data/GRPO_edge_s0.json").read_text())
    sets = yaml.safe_load((tiny_repo / "params.yaml").read_text())["passk"]["sets"]
    assert set(m["sets"]) == set(sets) and {"edge", "far", "in"} <= set(sets)
    assert list(m["sets"]["edge"]["pass_at_k"]) == ["1", "2", "4"]


def test_changing_one_study_run_reruns_it_its_eval_its_report_and_the_index(tiny_repo):
    def update(p):
        p["runs_orm"]["orm_s0"]["beta"] = 0.1

    direct, closure = stale_after(tiny_repo, update)
    # report_primaries reads every runs* section (a run's `init` puts its RL model under a base), cheap to rerun
    assert direct == {"rl_orm@orm_s0", "report_primaries"}
    assert closure == {"rl_orm@orm_s0", "eval_orm@orm_s0"} | READERS


def test_dvc_plots_show_renders_the_step_wise_curves(tiny_repo, tmp_path):
    out = run(["dvc", "plots", "show", "--json"], tiny_repo)  # exits 0 even when a plot fails to load
    shown = json.loads(out.stdout)
    assert not shown.get("errors") and "failed" not in out.stderr, shown.get("errors")
    assert set(shown["data"]) == {"methods_accuracy", "zero_think_rate", "hacking_proxy_reward",
                                  "hacking_true_reward", "ablations_zero_variance", "ablations_wrong_length",
                                  "passk_edge"}
    # one colour per arm (its seeds share it), one line per run: every run of the study is in the data
    methods = shown["data"]["methods_accuracy"][0]["content"]
    assert methods["encoding"]["color"]["field"] == "arm" and methods["encoding"]["detail"]["field"] == "run"
    assert "_s[0-9]+$" in json.dumps(methods["transform"])  # arm = the run without its seed suffix
    runs = {row["run"] for row in methods["data"]["values"]}
    assert runs == {f"{m}_s{i}" for m in ("sft", "rft", "grpo") for i in SEEDS}
    run(["dvc", "plots", "show", "-o", str(tmp_path / "plots")], tiny_repo)
    assert (tmp_path / "plots/index.html").stat().st_size > 0


def test_metrics_show_is_the_study_answers_with_few_plain_keys(tiny_repo):
    shown = json.loads(run(["dvc", "metrics", "show", "--json"], tiny_repo).stdout)
    files = shown[""]["data"]  # "" is the workspace
    assert files and all(re.fullmatch(r"reports/[a-z_]+/answers/[a-z0-9_]+\.json", f) for f in files), list(files)
    keys = {k for f in files.values() for k in flatten(f["data"])}
    assert len(keys) <= 40 and all(re.fullmatch(r"[a-z0-9_.]+", k) for k in keys), keys


def flatten(d: dict, prefix: str = "") -> list[str]:
    return [k for key, v in d.items()
            for k in (flatten(v, f"{prefix}{key}.") if isinstance(v, dict) else [f"{prefix}{key}"])]


def test_changing_the_headline_method_reruns_exactly_the_headline_chain(tiny_repo):
    def update(p):
        p["method"] = "rft"

    # and the planner's closure is DVC's own --force-downstream list
    assert stale_after(tiny_repo, update, against_dvc=True) == ({f"rl_headline@{h}" for h in HEADLINES},
                                                                 HEADLINE_CHAINS)
    # what a real rebuild reruns is checked by the README's `reasonrl exp run -S method=rft` below


def test_readme_exp_show_fits_160_columns_and_shows_the_change(tiny_repo):
    """The README's experiment commands on the smoke DAG (last here: it leaves an experiment behind)."""
    readme = (ROOT / "README.md").read_text()
    cmd = re.search(r"^    (dvc exp show --only-changed .*)$", readme, re.M).group(1)
    out = run(["reasonrl", "exp", "run", "-j", "2", "-S", "method=rft"], tiny_repo)  # the README's, all targets
    assert set(re.findall(r"finished (\S+)\s+in ", out.stderr)) == HEADLINE_CHAINS
    table = run(shlex.split(cmd), tiny_repo, env={"COLUMNS": "160"}).stdout
    assert max(len(line) for line in table.splitlines()) <= 160, table
    assert "method" in table and "rft" in table and "grpo" in table and "…" not in table, table
    if list((tiny_repo / "reports/headline_hop/answers").glob("*.json")):
        assert ":effect" in table, table


def test_a_stuck_command_is_interrupted_and_fails_with_what_it_printed(tmp_path):
    code = ("import signal, sys, time; print('started', flush=True)\n"
            "signal.signal(signal.SIGINT, lambda *_: (print('stopped', flush=True), sys.exit(130)))\n"
            "time.sleep(60)")
    with pytest.raises(AssertionError, match=r"(?s)still ran after 5 s:\nstarted\nstopped\n.*processes when"):
        run([sys.executable, "-c", code], tmp_path, timeout=5)
