"""The study reports (reasonrl.studies) on hand-built run outputs, and their agreement with dvc.yaml."""

from __future__ import annotations

import math
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from reasonrl.io import read_json, write_json, write_text
from reasonrl.rl.job import Job
from reasonrl.rl.run import history_csv, summary
from reasonrl.studies import ablations, common, hacking, index, methods, passk, zero
from reasonrl.studies.common import load_config

ROOT = Path(__file__).resolve().parents[1]
STUDIES = {"methods": methods, "passk": passk, "zero": zero, "hacking": hacking, "ablations": ablations,
           "index": index}
MIX = {"correct": 0.5, "overshoot": 0.1, "early": 0.1, "lookup": 0.2, "miscopy": 0.05, "malformed": 0.05}


# ----------------------------------------------------------------------------- hand-built run outputs

def think_eval(step: int, think: float, acc: float) -> dict:
    by_k = {str(k): {"think": think, "acc": acc, "trace": float(k) if think else 0.0} for k in range(1, 8)}
    return {"step": step, "think": think, "acc": acc, "len": 4 + 3 * think, "acc_think": 0.9 if think else 0.0,
            "acc_direct": 0.2 if think < 1 else 0.0, "by_k": by_k}


def fake_run(root: Path, name: str, steps: int = 60, acc: tuple[float, float] = (0.4, 0.7),
             think: tuple[float, float] | None = None, clip: float = 0.0,
             fooled: int = 0, **job) -> None:
    """The files an rl@ and an eval@ stage write for one run, with smooth made-up curves."""
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    j = Job(**job, eval="think" if think else "n12", eval_every=max(1, steps // 4))
    frac = 1 - np.exp(-np.arange(1, steps + 1) / (steps / 3))
    true = np.clip(acc[0] + (acc[1] - acc[0]) * frac + rng.normal(0, 0.03, steps), 0, 1)
    proxy = true if j.reward == "true" else 1 - 0.5 * true
    hist = {"steps": [{"step": s + 1, "reward/proxy": float(proxy[s]),
                       "reward/true": float(true[s]), "rollout/zero_var_frac": float(0.2 + 0.3 * frac[s]),
                       "rollout/length": float(9 - 2 * frac[s]), "rollout/length_wrong": float(8 + 4 * frac[s]),
                       "rollout/think_rate": float(think[0] + (think[1] - think[0]) * frac[s]) if think else 1.0,
                       "rollout/entropy": float(0.6 - 0.4 * frac[s]), "losses/kl": float(0.01 * frac[s]),
                       "losses/pg": 0.0, "losses/kl_term": 0.0, "losses/clip_frac": clip, "losses/grad_norm": 1.0,
                       "time/seconds": 0.5} for s in range(steps)],
            "evals": [], "examples": [], "seconds": 0.5 * steps}
    for step in sorted({0, *range(j.eval_every, steps + 1, j.eval_every), steps}):
        f = step / steps
        if think:
            hist["evals"].append(think_eval(step, think[0] + (think[1] - think[0]) * f, acc[0] + (acc[1] - acc[0]) * f))
        else:
            a = acc[0] + (acc[1] - acc[0]) * f
            hist["evals"].append({"step": step, "acc": a, "by_k": {str(k): a for k in (3, 4, 5, 6)}})
    if fooled:
        hist["examples"] = [{"step": 1, "fooled": []}, {"step": steps, "fooled": [
            {"prompt": "a>b,b>c,c>a?a2=", "gold": "bc|c$", "response": "bb|b$", "proxy": 0.95}] * fooled}]
    write_text(root / common.history_path(name), history_csv(hist))
    write_json(root / common.summary_path(name), summary(j, hist))
    correct = acc[1]
    mix = {t: correct if t == "correct" else v * (1 - correct) / (1 - MIX["correct"]) for t, v in MIX.items()}
    write_json(root / common.run_metrics_path(name), {"greedy": {"acc": mix["correct"], "by_k": {}}, "failure_mix": mix,
                                                      "pass_at_k": {"1": 0.5}, "distinct_answers": 2.0, "entropy": 0.3,
                                                      "N": 4, "train_seconds": 30.0})


def fake_passk(root: Path, label: str, curve: list[float], ks: tuple[int, ...] = (1, 2, 4, 8, 16)) -> None:
    sets = {s: {"ring_sizes": [n], "problems": 200, "pass_at_k": dict(zip(map(str, ks), curve)),
                "random_baseline": {str(k): 1 - (1 - 1 / n) ** k for k in ks},
                "distinct_answers": 1 + curve[-1], "entropy": 0.2 + curve[0] / 2}
            for s, n in (("n8", 8), ("n12", 12), ("n16", 16))}
    write_json(root / passk.data_path(label), {"model": f"rl_{label}", "N": ks[-1], "sets": sets})


CONFIGS = {
    "methods": methods.Config(base="cot_L2", runs={"SFT": ["sft_a", "sft_b"], "GRPO": ["grpo_a", "grpo_b", "grpo_c"]}),
    "passk": passk.Config(base="base", models={"base": "base_cot_L2", "SFT": "x", "GRPO": "y"}),
    "zero": zero.Config(runs={"noskill": "z_noskill", "think0": "z_think0", "think2": "z_think2"}),
    "hacking": hacking.Config(base="cot_L2", runs={"true": "grpo_a", "orm": "h_orm", "random": "h_rand",
                                                   "random, μ = 2": "h_rand2"}, random_pair=["h_rand", "h_rand2"]),
    "ablations": ablations.Config(groups={
        "std_norm": ablations.Group("std normalisation", {"on": "grpo_a", "off": "a_nostd"}),
        "clip": ablations.Group("clipping", {"μ = 1": "grpo_a", "μ = 2": "a_mu2", "clip-higher": "a_ch"})}),
    "index": index.Config(),
}


def build_studies(root: Path, steps: int = 60) -> None:
    """Hand-built outputs of every run the CONFIGS name, then every report."""
    write_json(root / common.base_metrics_path("cot_L2"), {"greedy": {"acc": 0.4, "by_k": {}},
                                                           "failure_mix": MIX | {"correct": 0.4, "lookup": 0.3}})
    for name, a in (("sft_a", 0.55), ("sft_b", 0.65)):
        fake_run(root, name, steps, (0.4, a), method="sft", seed=int(a * 10))
    for name, a in (("grpo_a", 0.7), ("grpo_b", 0.8), ("grpo_c", 0.9), ("a_nostd", 0.72), ("a_mu2", 0.6),
                    ("a_ch", 0.65)):
        fake_run(root, name, steps, (0.4, a), num_iterations=2 if name in ("a_mu2", "a_ch") else 1,
                 clip=0.05 if name in ("a_mu2", "a_ch") else 0.0)
    fake_run(root, "h_orm", steps, (0.4, 0.2), reward="orm", fooled=2)
    fake_run(root, "h_rand", steps, (0.4, 0.38), reward="random", fooled=1)
    fake_run(root, "h_rand2", steps, (0.4, 0.1), reward="random", num_iterations=2, clip=0.04, fooled=3)
    for name, th in (("z_noskill", (0.0, 0.0)), ("z_think0", (0.0, 0.6)), ("z_think2", (0.02, 0.95))):
        fake_run(root, name, steps, (0.3, 0.5), think=th, init=f"mixed_{name[2:]}")
    fake_passk(root, "base", [0.40, 0.55, 0.70, 0.80, 0.90])
    fake_passk(root, "SFT", [0.50, 0.60, 0.70, 0.75, 0.80])  # above, equal at k = 4, then below
    fake_passk(root, "GRPO", [0.45, 0.60, 0.75, 0.85, 0.95])  # above everywhere
    write_json(root / index.EXACT_METRICS, {"grad_cosine_none": 0.6, "grad_cosine_rloo": 0.85,
                                            "sweep_gold_beta0p3_rl": -0.5, "sweep_gold_beta0p3_opt": -0.49})
    for name, module in STUDIES.items():
        module.report(CONFIGS[name], root)


@pytest.fixture(scope="module")
def studies(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("studies")
    build_studies(root)
    return root


# ----------------------------------------------------------------------------- helpers, by hand

def test_band_stats_aligns_on_step_and_smooths_trailing():
    a = pd.Series([0.0, 1.0, 2.0, 3.0], index=[1, 2, 3, 4])
    b = pd.Series([2.0, 2.0, 2.0], index=[2, 3, 4])
    st = common.band_stats([a, b])
    assert st.loc[1].tolist() == [0.0, 0.0, 0.0]  # only a has step 1
    assert st.loc[2].tolist() == [1.5, 1.0, 2.0] and st.loc[4].tolist() == [2.5, 2.0, 3.0]
    sm = common.band_stats([a], smooth=2)
    assert sm["mean"].tolist() == [0.0, 0.5, 1.5, 2.5]  # window of 2, the first step alone


def test_tail_mean_mean_sd_and_mix():
    s = pd.Series(np.arange(1.0, 21.0))
    assert common.tail_mean(s) == 19.5  # last 10% = last 2 of 20
    assert common.tail_mean(pd.Series([3.0])) == 3.0
    assert common.mean_sd([0.5, 0.7]) == "0.600 ± 0.141"  # sample sd sqrt(0.02)
    assert common.mean_sd([0.5]) == "0.500"
    assert common.mean_mix([{"correct": 0.2, "lookup": 0.8}, {"correct": 0.6, "lookup": 0.4}]) == pytest.approx(
        {"correct": 0.4, "lookup": 0.6})


def test_code_cells_escape_pipes_for_markdown_tables():
    assert common.code("bcd|d$") == "`bcd\\|d$`"
    table = common.md_table(pd.DataFrame({"response": [common.code("ab|b$")], "x": [1.0]}), "t")
    assert table.splitlines()[-1].count(" | ") == 1  # one column separator, the pipe in the cell escaped


def test_crossings_by_hand():
    ks = [1, 2, 4, 8, 16]
    base = [0.4, 0.55, 0.7, 0.8, 0.9]
    assert passk.crossings(ks, base, [0.5, 0.6, 0.7, 0.75, 0.8]) == [(2, 8, "above → below")]
    assert passk.describe_crossing(ks, base, [0.3, 0.5, 0.75, 0.85, 0.95]) == \
        "crosses below → above between k = 2 and k = 4"
    assert passk.describe_crossing(ks, base, [b + 0.1 for b in base]) == "above the base at every k (no crossing)"
    assert passk.describe_crossing(ks, base, base) == "equal to the base at every k"
    assert passk.first_crossing(ks, base, [0.5, 0.4, 0.8, 0.7, 0.95]) == 2  # three crossings; the first


def test_zero_verdicts_by_hand():
    cfg = zero.Config(runs={"x": "y"}, present=0.01, rise=0.05)
    assert zero.verdict(0.0, 0.03, cfg)[0] == "neither"
    assert zero.verdict(0.005, 0.6, cfg) == ("created", "created: think rate 0.5% → 60.0%")
    assert zero.verdict(0.02, 0.95, cfg)[0] == "selected"
    assert zero.verdict(0.5, 0.2, cfg)[0] == "neither"


def test_index_key_numbers():
    m = {"sweep_gold_beta3_rl": -0.19482, "sweep_gold_beta0p3_rl": -0.5004, "sweep_gold_beta3_opt": 1.0, "x": "s"}
    assert index.key_numbers(m, "sweep_gold_", "_rl") == "β=3 -0.195, β=0.3 -0.5"


def test_configs_reject_bad_values():
    from reasonrl.config import ConfigError, from_dict

    with pytest.raises(ConfigError, match="studies.hacking.random_pair"):
        from_dict(hacking.Config, {"runs": {"a": "r1"}, "random_pair": ["r1", "r2"]}, "studies.hacking")
    with pytest.raises(ConfigError, match="passk.base"):
        load_config(passk, {"passk": {"base": "nope", "models": {"base": "base_cot_L2"}}})
    with pytest.raises(ConfigError, match="studies.methods.colour"):
        load_config(methods, {"studies": {"methods": {"colour": 1}}})


# ----------------------------------------------------------------------------- the reports

def test_every_report_writes_exactly_its_outputs(studies):
    for name, module in STUDIES.items():
        for path in module.outputs(CONFIGS[name]):
            assert (studies / path).stat().st_size > 0, path
    for study in ("methods", "passk", "zero", "hacking", "ablations"):
        written = {p.relative_to(studies).as_posix() for p in (studies / "reports" / study).iterdir()}
        declared = set(STUDIES[study].outputs(CONFIGS[study]))
        assert written - {p for p in written if p.startswith("reports/passk/curve_")} <= declared


def test_methods_numbers(studies):
    m = read_json(studies / "reports/metrics/methods.json")
    assert m["base"]["acc"] == 0.4
    assert m["GRPO"]["acc_mean"] == pytest.approx(0.8) and m["GRPO"]["acc_sd"] == pytest.approx(0.1)
    assert m["SFT"]["acc_min"] == 0.55 and m["SFT"]["acc_max"] == 0.65
    assert m["SFT"]["failure_mix"]["correct"] == pytest.approx(0.6)
    table = (studies / "reports/methods/table.md").read_text()
    assert "0.800 ± 0.100" in table and "gold (≡ 1)" in table


def test_passk_table_states_crossings(studies):
    table = (studies / "reports/passk/table.md").read_text()
    assert "crosses above → below between k = 2 and k = 8" in table
    assert "above the base at every k (no crossing)" in table
    m = read_json(studies / "reports/metrics/passk.json")
    assert m["SFT"]["n12"]["first_crossing_k"] == 8 and m["GRPO"]["n12"]["first_crossing_k"] is None
    assert m["base"]["n16"]["pass_at_max"] == 0.9 and m["base"]["n16"]["k_max"] == 16


def test_zero_answers_create_or_select(studies):
    m = read_json(studies / "reports/metrics/zero.json")
    assert {b: v["verdict"] for b, v in m.items()} == {"noskill": "neither", "think0": "created",
                                                       "think2": "selected"}
    assert m["think2"]["think_before"] == 0.02 and m["think2"]["think_after"] == 0.95
    assert m["noskill"]["acc_think_after"] == 0.9 or m["noskill"]["think_after"] == 0.0
    table = (studies / "reports/zero/table.md").read_text()
    assert "RL selects thinking in think2 (2.0% → 95.0%)" in table and "n/a" in table


def test_hacking_fooled_examples_and_random_clip(studies):
    table = (studies / "reports/hacking/table.md").read_text()
    assert table.count("`bb\\|b$`") == 2 + 1 + 3  # the fooled examples of the last step, pipes escaped
    m = read_json(studies / "reports/metrics/hacking.json")
    mu1, mu2 = m["random_clip"]
    assert (mu1["mu"], mu2["mu"]) == (1, 2) and mu1["clip_frac"] == 0.0 and mu2["clip_frac"] == pytest.approx(0.04)
    assert mu2["acc_start"] == pytest.approx(0.4) and mu2["acc_end"] == pytest.approx(0.1)
    assert m["orm"]["acc"] == 0.2 and m["orm"]["proxy_end"] > m["orm"]["true_end"]


def test_ablations_compare_with_the_group_reference(studies):
    m = read_json(studies / "reports/metrics/ablations.json")
    assert m["std_norm"]["off"]["acc"] == 0.72 and m["clip"]["clip-higher"]["acc"] == 0.65
    table = (studies / "reports/ablations/table.md").read_text()
    assert "+0.020" in table and "-0.050" in table  # off vs on; clip-higher vs μ = 1


def test_index_lists_every_figure_and_table(studies):
    text = (studies / index.INDEX).read_text()
    for study in ("methods", "passk", "zero", "hacking", "ablations"):
        man = read_json(studies / common.manifest_path(study))
        for fig in man["figures"]:
            assert f"[{fig['file']}]({fig['file']})" in text and (studies / "reports" / fig["file"]).exists()
        for t in man["tables"]:
            assert f"({t})" in text
    assert "[exact/kl_placement.png]" in text and "β=0.3 -0.5" in text
    assert len(read_json(studies / common.manifest_path("hacking"))["figures"]) == 4 + 2


def test_reports_are_deterministic(studies, tmp_path):
    build_studies(tmp_path)
    for name, module in STUDIES.items():
        for path in module.outputs(CONFIGS[name]):
            if not path.endswith(".png"):
                assert (tmp_path / path).read_bytes() == (studies / path).read_bytes(), path


# ----------------------------------------------------------------------------- agreement with dvc.yaml

def stage_files(stage: dict, key: str) -> set[str]:
    return {next(iter(x)) if isinstance(x, dict) else x for x in stage.get(key, [])}


def test_report_stages_depend_on_exactly_what_they_read():
    dvc = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    for name, module in STUDIES.items():
        stage, cfg = dvc[f"report_{name}"], load_config(module, params)
        # code deps: tests/test_deps.py; the rest is inputs or folders of inputs (reports/rl/, reports/eval/:
        # a run added to a study needs no edit in dvc.yaml)
        deps, inputs = {d for d in stage_files(stage, "deps") if not d.endswith(".py")}, set(module.inputs(cfg))
        folders = {d for d in deps if any(p.startswith(d + "/") for p in inputs)}
        assert all(p in deps or any(p.startswith(f + "/") for f in folders) for p in inputs), name
        assert deps == (deps & inputs) | folders, name
        assert stage_files(stage, "outs") | stage_files(stage, "metrics") == set(module.outputs(cfg)), name
        assert all(next(iter(o.values()))["cache"] is False for o in stage["outs"] + stage.get("metrics", []))


def test_passk_stage_reads_the_sets_and_models_params_name():
    stage = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]["passk"]
    params = yaml.safe_load((ROOT / "params.yaml").read_text())["passk"]
    assert stage["foreach"] == "${passk.models}"
    deps = stage_files(stage["do"], "deps")
    assert {d for d in deps if d.startswith("data/")} == {f"data/{s}.jsonl" for s in params["sets"]}
    assert params["eval"]["passk_ks"][-1] == params["eval"]["passk_N"]
    assert all(math.log2(k).is_integer() for k in params["eval"]["passk_ks"])
    runs = {f"rl_{r}" for group in ("runs", "runs_orm", "runs_prm")
            for r in yaml.safe_load((ROOT / "params.yaml").read_text())[group]}
    assert all(m in runs or m.startswith("base_") for m in params["models"].values())


def test_every_study_run_is_defined_with_the_eval_it_needs():
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    runs = {n: r for group in ("runs", "runs_orm", "runs_prm") for n, r in params[group].items()}
    for name in ("methods", "hacking", "ablations", "zero"):
        cfg = load_config(STUDIES[name], params)
        want = "think" if name == "zero" else "n12"
        for path in STUDIES[name].inputs(cfg):
            if path.startswith("reports/rl/"):
                run = Path(path).stem
                assert run in runs and runs[run].get("eval") == want, (name, run)
