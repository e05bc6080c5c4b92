"""`reasonrl train` and the stage scripts, run in-process on tiny params (issue #17, item 5).

The slow smoke test (tests/test_pipeline.py) runs the same scripts through DVC in subprocesses, where
coverage does not see them. Here each script runs with `runpy` in a temporary working directory holding
a shrunken params.yaml, in dependency order, and its outputs are read back.
"""

from __future__ import annotations

import csv
import json
import math
import runpy
import sys
from pathlib import Path

import pytest
import torch
import yaml
from pipeline_util import shrink

from reasonrl.checkpoint import load_checkpoint, save_checkpoint
from reasonrl.model import ModelConfig, TinyReasoner
from reasonrl.runner import cli
from reasonrl.verifiers import load_verifier

ROOT = Path(__file__).resolve().parents[1]
TINY_MODEL = {"d_model": 32, "n_heads": 2, "n_layers": 1, "max_len": 96, "tied_head": True}


def tiny_params() -> dict:
    p = shrink(yaml.safe_load((ROOT / "params.yaml").read_text()))
    p["device"] = "cpu"
    p["bases"] = {"cot": {**p["bases"]["cot"], "model": TINY_MODEL},
                  "chain_s0": {**p["bases"]["chain_s0"], "model": {**TINY_MODEL, "max_len": 160}}}
    # phase 1 from fresh (tiny) weights; phase 2 continues it (init), so it takes its model from there
    p["mixed"] = {"phase1": {"skill": {**p["mixed"]["phase1"]["skill"], "model": TINY_MODEL}},
                  "phase2": {"think2": p["mixed"]["phase2"]["think2"]}}
    p["headline"] = {"headline_s0": p["headline"]["headline_s0"]}
    p["runs_orm"]["orm_s0"]["init"] = "base_cot"  # the one tiny hop base (run 2's ORM runs start from cot_s6)
    p["verifiers"] = {"orm": {**p["verifiers"]["orm"], "problems": 8, "samples": 2, "steps": 2, "batch_size": 4}}
    p["rl"]["lr"] = 1e-3
    p["passk"]["models"] = {"base": {"task": "hop", "model": "base_cot"},
                            "GRPO": {"task": "hop", "model": "rl_grpo_s0"},
                            "base_draw2": {"task": "hop", "model": "base_cot", "draw": 2, "sets": ["in"]}}
    p["passk"]["arms"] = {"base": ["base"], "GRPO": ["GRPO"]}  # the report's key: the passk@ stages ignore it
    p["passk"]["pairs"] = []
    p["passk"]["bases"] = ["base"]
    p["passk"]["sets"] = ["in"]
    p["passk"]["eval"]["problems"] = 8  # one of each of the 8 cells of `in` (2 each): the subset path runs in CI
    return p


def stage(script: str, *args: str) -> None:
    """Run stages/<script> as `python stages/<script> args...` would, in the current directory."""
    argv, hook = sys.argv, sys.excepthook
    sys.argv = [str(ROOT / "stages" / script), *args]
    try:
        runpy.run_path(sys.argv[0], run_name="__main__")
    finally:
        sys.argv, sys.excepthook = argv, hook


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A tiny pipeline run in-process: data, a base, a mixed base (both phases), a verifier, RL runs,
    evaluations; each stage with the arguments dvc.yaml gives it."""
    work = tmp_path_factory.mktemp("work")
    (work / "params.yaml").write_text(yaml.safe_dump(tiny_params(), sort_keys=False))
    mp = pytest.MonkeyPatch()
    mp.chdir(work)
    try:
        stage("data.py", "hop")
        stage("data.py", "chain")
        stage("base.py", "bases.cot", "base_cot")
        stage("base.py", "bases.chain_s0", "base_chain_s0")
        stage("base.py", "mixed.phase1.skill", "mixed_p1_skill")
        stage("base.py", "mixed.phase2.think2", "mixed_think2")
        stage("verifier.py", "orm")
        stage("rl.py", "runs", "grpo_s0")
        stage("rl.py", "runs_noeval", "zero_think2_s0")
        stage("rl.py", "runs_orm", "orm_s0")
        stage("rl.py", "headline", "headline_s0")
        stage("eval.py", "base_cot", "reports/eval/hop")
        stage("eval.py", "base_chain_s0", "reports/eval/chain")
        stage("eval.py", "rl_grpo_s0", "reports/eval/hop")
        stage("eval.py", "rl_headline_s0", "reports/headline/eval")
        stage("passk.py", "base")
        stage("passk.py", "GRPO")
        stage("passk.py", "base_draw2")
        yield work
    finally:
        mp.undo()


def test_data_stage_writes_every_set(workdir):
    cells = {"in": 8, "edge": 2, "far": 2, "think": 7, "val_in": 8, "val_edge": 2, "val_far": 2}  # ns x ks
    for task in ("hop", "chain"):
        for role, n_cells in cells.items():
            rows = [json.loads(line) for line in (workdir / f"data/{task}_{role}.jsonl").read_text().splitlines()]
            assert len(rows) == 2 * n_cells and {r["task"] for r in rows} == {task}  # count 2 per cell


def test_base_and_mixed_stages(workdir):
    model, meta = load_checkpoint(workdir / "models/base_cot.pt")
    assert model.cfg.d_model == 32 and meta["kind"] == "base" and meta["name"] == "base_cot"
    assert meta["params"]["trace"] == 1.0 and meta["params"]["init"] is None
    assert set(meta["summary"]) == {"final_loss", "loss_curve"}  # no wall clock: same bytes on a rerun
    metrics = json.loads((workdir / "reports/metrics/base_cot.json").read_text())
    assert set(metrics) == {"in", "edge", "final_loss"}
    assert set(metrics["in"]) == {"acc", "by_k", "acc_answer", "by_k_answer"}
    assert set(metrics["in"]["by_k"]) == {"3", "4", "5", "6"} == set(metrics["in"]["by_k_answer"])
    chain, meta = load_checkpoint(workdir / "models/base_chain_s0.pt")
    assert (chain.cfg.task, chain.cfg.vocab_size, model.cfg.task, model.cfg.vocab_size) == ("chain", 36, "hop", 33)
    assert meta["params"]["task"] == "chain"
    timing = json.loads((workdir / "reports/timing/base_cot.json").read_text())
    assert set(timing) == {"seconds", "steps_per_second", "machine", "numerics"}
    assert timing["numerics"]["aten"] == "AVX2" and "torch" in timing["machine"]  # the pinned default ran
    # phase 2 continues phase 1: the same (tiny) model, its own trace share
    p1, meta1 = load_checkpoint(workdir / "models/mixed_p1_skill.pt")
    p2, meta2 = load_checkpoint(workdir / "models/mixed_think2.pt")
    assert (meta1["name"], meta2["name"]) == ("mixed_p1_skill", "mixed_think2")
    assert meta2["params"]["init"] == "mixed_p1_skill" and meta2["params"]["trace"] == 0.02
    assert p1.cfg == p2.cfg and p2.cfg.d_model == 32
    for stem in ("mixed_p1_skill", "mixed_think2"):
        assert (workdir / f"reports/metrics/{stem}.json").exists()
        assert (workdir / f"reports/timing/{stem}.json").exists()


def test_verifier_stage(workdir):
    verifier = load_verifier(workdir / "models/verifier_orm.pt")
    assert verifier is not None
    metrics = json.loads((workdir / "reports/metrics/verifier_orm.json").read_text())
    assert metrics["kind"] == "orm" and metrics["init"] == "cot"


@pytest.mark.parametrize("name,method,reward,evals,out", [
    ("grpo_s0", "grpo", "true", "acc", "reports/rl/hop"), ("zero_think2_s0", "grpo", "true", "think", "reports/rl/hop"),
    ("orm_s0", "grpo", "orm", "acc", "reports/rl/hop"), ("headline_s0", "grpo", "true", "acc", "reports/headline/rl"),
])
def test_rl_stage_outputs(workdir, name, method, reward, evals, out):
    summary = json.loads((workdir / f"{out}/{name}.json").read_text())
    assert summary["job"]["method"] == method and summary["job"]["reward"] == reward
    assert summary["job"]["steps"] == 3 and len(summary["evals"]) >= 2 and evals in summary["evals"][-1]
    with open(workdir / f"{out}/{name}.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["step"] for r in rows] == ["1", "2", "3"]
    assert float(rows[-1]["reward/true"]) == pytest.approx(summary["final"]["reward/true"], abs=1e-5)
    _, meta = load_checkpoint(workdir / f"models/rl_{name}.pt")
    assert meta["kind"] == "rl" and meta["job"] == summary["job"]
    assert set(json.loads((workdir / f"reports/timing/rl_{name}.json").read_text())) == {
        "seconds", "seconds_per_step", "steps_per_second", "machine", "numerics"}
    assert not any(c.startswith("time/") for c in rows[0]) and "seconds" not in json.dumps(summary)
    if reward == "orm":  # a proxy reward: the fooled examples are recorded
        assert summary["examples"] and all("fooled" in e for e in summary["examples"])


def test_headline_runs_stay_out_of_the_studies_folder(workdir):
    # the headline run takes the top-level method and its own seed, and writes nowhere a study reads
    summary = json.loads((workdir / "reports/headline/rl/headline_s0.json").read_text())
    assert summary["job"]["seed"] == 100 and summary["job"]["eval"] == "val_edge"
    assert not list((workdir / "reports/rl").glob("*/headline_s0.json"))
    assert not list((workdir / "reports/eval").glob("*/rl_headline_s0.json"))
    assert (workdir / "reports/headline/eval/outcomes_rl_headline_s0.csv").exists()


def test_rl_stage_rejects_a_reward_outside_its_group(workdir, monkeypatch):
    from reasonrl.config import ConfigError

    params = yaml.safe_load((workdir / "params.yaml").read_text())
    params["runs"]["bad"] = {"task": "hop", "init": "base_cot", "reward": "orm"}
    params["runs"]["noinit"] = {"task": "hop", "method": "sft"}
    params["runs"]["mismatch"] = {"task": "chain", "init": "base_cot"}
    (workdir / "alt").mkdir(exist_ok=True)
    (workdir / "alt/params.yaml").write_text(yaml.safe_dump(params))
    for folder in ("data", "models"):  # the mismatch is found once the run's data and init are read
        if not (workdir / "alt" / folder).exists():
            (workdir / "alt" / folder).symlink_to(workdir / folder)
    monkeypatch.chdir(workdir / "alt")
    with pytest.raises(ConfigError, match="runs.bad.reward"):
        stage("rl.py", "runs", "bad")
    with pytest.raises(ConfigError, match="runs.noinit.init"):
        stage("rl.py", "runs", "noinit")
    with pytest.raises(ConfigError, match="runs.mismatch.task: 'chain', but models/base_cot.pt is a 'hop' model"):
        stage("rl.py", "runs", "mismatch")


def test_eval_stages(workdir):
    base = json.loads((workdir / "reports/eval/hop/base_cot.json").read_text())
    assert base["N"] == 4 and list(base) == ["N", "in", "edge", "far"]  # one summary per test set
    for s in ("in", "edge", "far"):
        assert list(base[s]["pass_at_k"]) == ["1", "2", "4"] and base[s]["pass_at_k"]["1"] == base[s]["sampled_acc"]
        assert sum(base[s]["failure_mix"].values()) == pytest.approx(1.0)
    lines = (workdir / "reports/eval/hop/passk_base_cot.csv").read_text().splitlines()
    assert lines[0] == "set,k,pass_at_k,pass_at_k_answer,random_baseline" and len(lines) == 1 + 3 * 3
    chain = json.loads((workdir / "reports/eval/chain/base_chain_s0.json").read_text())
    assert "arith" in chain["edge"]["failure_mix"] and chain["edge"]["random_baseline"]["1"] == pytest.approx(1 / 7)
    run = json.loads((workdir / "reports/eval/hop/rl_grpo_s0.json").read_text())
    assert set(run["edge"]) == {"greedy", "failure_mix", "sampled_acc", "sampled_acc_answer", "pass_at_k",
                               "pass_at_k_answer", "random_baseline", "distinct_answers", "guess_distinct", "entropy",
                               "guess_answer_entropy"}
    assert chain["edge"]["guess_answer_entropy"] == pytest.approx(math.log(7))  # every chain problem: 7 digits
    # the per-problem outcomes the studies resample: one row per problem of each set, agreeing with the
    # greedy accuracy (`correct`) and the sampled one (`sampled`, the share of N = 4 samples right)
    for stem, out in (("base_cot", "reports/eval/hop"), ("rl_grpo_s0", "reports/eval/hop"),
                      ("rl_headline_s0", "reports/headline/eval")):
        with open(workdir / f"{out}/outcomes_{stem}.csv") as f:
            rows = list(csv.DictReader(f))
        summary = json.loads((workdir / f"{out}/{stem}.json").read_text())
        sizes = {"in": 16, "edge": 4, "far": 4}
        assert [r["set"] for r in rows] == [s for s, n in sizes.items() for _ in range(n)]
        for s, n in sizes.items():
            mine = [r for r in rows if r["set"] == s]
            assert len({r["problem"] for r in mine}) == n
            assert sum(int(r["correct"]) for r in mine) / n == pytest.approx(summary[s]["greedy"]["acc"])
            assert all(float(r["sampled"]) * 4 == round(float(r["sampled"]) * 4) for r in mine)
            assert sum(float(r["sampled"]) for r in mine) / n == pytest.approx(summary[s]["sampled_acc"])
            for col in ("correct", "sampled"):  # verified never exceeds answer-only
                assert all(float(r[col]) <= float(r[f"{col}_answer"]) for r in mine)
        assert (workdir / f"reports/timing/eval_{stem}.json").exists()


def test_passk_stage(workdir):
    for label, model in (("base", "base_cot"), ("GRPO", "rl_grpo_s0")):
        res = json.loads((workdir / f"reports/passk/data/{label}.json").read_text())
        assert res["model"] == model and res["N"] == 4
        inside = res["sets"]["in"]
        assert inside["difficulties"] == [3, 4, 5, 6] and (inside["problems"], inside["of"]) == (8, 16)
        assert len(inside["counts"]) == 8 and all(0 <= c <= 4 for c in inside["counts"])  # what the report resamples
        assert all(c <= a for c, a in zip(inside["counts"], inside["counts_answer"], strict=True))
        rows = (workdir / f"reports/passk/curve_{label}.csv").read_text().splitlines()
        assert len(rows) == 1 + 3  # a header and k = 1, 2, 4 of the one set
    # the base's second draw: the same checkpoint from its own generator seed, on its own sets
    again = json.loads((workdir / "reports/passk/data/base_draw2.json").read_text())
    first = json.loads((workdir / "reports/passk/data/base.json").read_text())
    assert (again["draw"], again["seed"], first["seed"]) == (2, 1007, 7) and list(again["sets"]) == ["in"]
    stage("report_passk.py")
    assert (workdir / "reports/passk/passk.png").stat().st_size > 0
    # one seed per arm: the new-solutions measure has no run-level interval, so its row says so and no answer is written
    assert "fewer than 2 seeds with U" in (workdir / "reports/passk/table.md").read_text()
    # the answers at the ends of the curve, k = 1 and the largest k, paired with the base by problem
    answers = sorted(p.name for p in (workdir / "reports/passk/answers").iterdir())
    assert answers == ["grpo_vs_base_in_k001.json", "grpo_vs_base_in_k004.json"]
    k1 = json.loads((workdir / "reports/passk/answers/grpo_vs_base_in_k001.json").read_text())
    assert (k1["seeds"], k1["problems"]) == (1, 8) and k1["ci_lo"] <= k1["effect"] <= k1["ci_hi"]
    assert "in: 8 of 16 problems" in (workdir / "reports/passk/table.md").read_text()


# ---------------------------------------------------------------------------------------------------- reasonrl train

@pytest.fixture
def train_dir(tmp_path):
    models, data = tmp_path / "models", tmp_path / "data"
    models.mkdir()
    model = TinyReasoner(ModelConfig(d_model=32, n_heads=2, n_layers=1), generator=torch.Generator().manual_seed(0))
    save_checkpoint(models / "base_cot.pt", model, {"kind": "base"})
    params = tiny_params()
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    from reasonrl.io import write_jsonl
    from reasonrl.pipeline import EvalSetConfig, build_eval_set

    write_jsonl(data / "hop_val_in.jsonl",
                [p.to_dict() for p in build_eval_set("hop", EvalSetConfig(ns=[12], ks=[3, 4], count=2))])
    return tmp_path


def _train(tmp: Path, *sets: str) -> int:
    argv = ["train", "--params", str(tmp / "params.yaml"), "--out", str(tmp / "out"), "--models", str(tmp / "models"),
            "--data", str(tmp / "data")]
    for s in sets:
        argv += ["--set", s]
    try:
        return cli.main(argv)
    except SystemExit as e:  # an error may leave through the CLI's exit rather than a return code
        return e.code


def test_reasonrl_train_writes_a_run(train_dir, capsys):
    rc = _train(train_dir, "method=rft", "steps=2", "B=2", "G=2", "eval=val_in", "eval_every=1", "n_range=[4, 6]",
                "k_max=3")
    out = capsys.readouterr().out
    assert rc == 0
    assert "trained rft (reward true) for 2 steps" in out and "eval acc" in out
    summary = json.loads((train_dir / "out/summary.json").read_text())
    assert summary["job"]["method"] == "rft" and summary["job"]["n_range"] == [4, 6]
    assert [e["step"] for e in summary["evals"]] == [0, 1, 2]
    assert (train_dir / "out/history.csv").read_text().count("\n") == 3
    timing = json.loads((train_dir / "out/timing.json").read_text())
    assert set(timing) == {"seconds", "seconds_per_step", "steps_per_second", "machine", "numerics"}
    assert timing["seconds"] > 0
    _, meta = load_checkpoint(train_dir / "out/model.pt")
    assert meta["job"]["steps"] == 2


@pytest.mark.parametrize("sets,message", [(["stpes=3"], "stpes"), (["steps"], "KEY=VALUE"),
                                          (["reward=orm_v2"], "reward")])
def test_reasonrl_train_rejects_bad_settings_before_any_work(train_dir, capsys, sets, message):
    assert _train(train_dir, *sets) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (train_dir / "out").exists()


# ---------------------------------------------------------------------------------------------------- the exact toy

def test_exact_stages_in_process(tmp_path, monkeypatch):
    # both stages take no arguments: they read ./params.yaml and write under ./reports
    params = {"exact": {"sft_steps": 10, "bt_pairs": 100, "grad_trials": 2, "grad_batch": 8, "batch": 8,
                        "steps": 6, "log_every": 3, "table_steps": [3, 6], "fixed_point_steps": 5,
                        "sweep_betas": [1.0, 0.3], "frontier_betas": [1.0, 0.5]}}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    monkeypatch.chdir(tmp_path)
    threads = torch.get_num_threads()
    try:
        stage("exact.py")
    except SystemExit as e:
        assert e.code == 0
    finally:
        torch.set_num_threads(threads)
    metrics = json.loads((tmp_path / "reports/metrics/exact.json").read_text())
    assert {"grad_cosine_rloo", "final_kl_opt_rloo", "sweep_gold_beta0p3_rl"} <= set(metrics)
    assert (tmp_path / "reports/exact/results.json").exists() and (tmp_path / "reports/timing/exact.json").exists()
    try:
        stage("report_exact.py")
    except SystemExit as e:
        assert e.code == 0
    names = {p.name for p in (tmp_path / "reports/exact").iterdir()}
    assert {"gradient_quality.png", "training.png", "beta_sweep.png", "kl_placement.png", "manifest.json"} <= names
