"""The study reports (reasonrl.studies) on hand-built run outputs, and their agreement with dvc.yaml."""

from __future__ import annotations

import ast
import json
import math
import posixpath
import zlib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from reasonrl import stats
from reasonrl.config import ConfigError
from reasonrl.evaluate import outcomes_csv
from reasonrl.io import read_json, write_json, write_text
from reasonrl.rl.job import Job
from reasonrl.rl.run import history_csv, summary
from reasonrl.studies import (
    PasskModel,
    ablations,
    answers,
    figures,
    hacking,
    headline,
    index,
    manifest,
    markdown,
    methods,
    pair_name,
    passk,
    paths,
    runs,
    slug,
    zero,
)
from reasonrl.studies.claims import fmt_margin, needs_text, unadjusted_side
from reasonrl.studies.stage import load_config

ROOT = Path(__file__).resolve().parents[1]
STUDIES = {"headline_hop": headline, "headline_chain": headline, "methods": methods, "passk": passk, "zero": zero,
           "hacking": hacking, "ablations": ablations, "index": index}
MIX = {"correct": 0.5, "overshoot": 0.1, "early": 0.1, "lookup": 0.2, "miscopy": 0.05, "malformed": 0.05}


# ----------------------------------------------------------------------------- hand-built run outputs

def think_eval(step: int, think: float, acc: float) -> dict:
    by_k = {str(k): {"think": think, "acc": acc, "trace": float(k) if think else 0.0} for k in range(1, 8)}
    return {"step": step, "think": think, "acc": acc, "len": 4 + 3 * think, "acc_think": 0.9 if think else 0.0,
            "acc_direct": 0.2 if think < 1 else 0.0, "by_k": by_k}


def fake_run(root: Path, name: str, steps: int = 60, acc: tuple[float, float] = (0.4, 0.7),
             think: tuple[float, float] | None = None, clip: float = 0.0,
             fooled: int = 0, wrong_len: float = 0.0, **job) -> None:
    """The files an rl@ and an eval@ stage write for one run, with smooth made-up curves."""
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    j = Job(**job, eval="think" if think else "val_edge", eval_every=max(1, steps // 4))
    frac = 1 - np.exp(-np.arange(1, steps + 1) / (steps / 3))
    true = np.clip(acc[0] + (acc[1] - acc[0]) * frac + rng.normal(0, 0.03, steps), 0, 1)
    proxy = true if j.reward == "true" else 1 - 0.5 * true
    hist = {"steps": [{"step": s + 1, "reward/proxy": float(proxy[s]),
                       "reward/true": float(true[s]), "rollout/zero_var_frac": float(0.2 + 0.3 * frac[s]),
                       "rollout/length": float(9 - 2 * frac[s]),
                       "rollout/length_wrong": float(8 + wrong_len + 4 * frac[s]),
                       "rollout/think_rate": float(think[0] + (think[1] - think[0]) * frac[s]) if think else 1.0,
                       "rollout/entropy": float(0.6 - 0.4 * frac[s]), "losses/kl": float(0.01 * frac[s]),
                       "losses/pg": 0.0, "losses/kl_term": 0.0, "losses/clip_frac": clip, "losses/grad_norm": 1.0,
                       "rollout/count": 256, "time/seconds": 0.5} for s in range(steps)],
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
    write_text(root / paths.history_path(name, task=j.task), history_csv(hist))
    write_json(root / paths.summary_path(name, task=j.task), summary(j, hist))
    correct = acc[1]
    mix = {t: correct if t == "correct" else v * (1 - correct) / (1 - MIX["correct"]) for t, v in MIX.items()}
    write_outcomes(root, paths.run_outcomes_path(name, task=j.task), correct)
    write_json(root / paths.run_metrics_path(name, task=j.task), {"N": 4, "edge": {
        "greedy": {"acc": mix["correct"], "by_k": {}}, "failure_mix": mix, "sampled_acc": sampled_share(correct),
        "pass_at_k": {"1": sampled_share(correct)}, "distinct_answers": 2.0, "entropy": 0.3,
        "random_baseline": {"1": 0.0625}}})


PROBLEMS = 200  # problems of the hand-built outcome files


def sampled(i: int, right: int) -> float:
    """The hand-built sampled share of problem i: 3/4 of the samples right on a greedy-right problem, 1/4 else."""
    return 0.75 if i < right else 0.25


def sampled_share(acc: float) -> float:
    right = round(acc * PROBLEMS)
    return sum(sampled(i, right) for i in range(PROBLEMS)) / PROBLEMS


def write_outcomes(root: Path, path: str, acc: float, set_name: str = "edge") -> None:
    """Per-problem outcomes on one set: the first round(acc * PROBLEMS) problems right (verified), the rest a lookup
    error; `sampled` as sampled() gives it; by the answer alone, every fourth problem more is right."""
    right = round(acc * PROBLEMS)
    rows = [{"set": set_name, "problem": f"p{i:03d}", "k": 3 + i % 4, "correct": int(i < right),
             "correct_answer": int(i < right or i % 4 == 0), "outcome": "correct" if i < right else "lookup",
             "sampled": sampled(i, right), "sampled_answer": min(1.0, sampled(i, right) + 0.25)}
            for i in range(PROBLEMS)]
    write_text(root / path, outcomes_csv(rows))


def fake_passk(root: Path, label: str, counts: list[int], ks: tuple[int, ...] = (1, 2, 4, 8, 16)) -> None:
    """A passk file with these correct counts out of N = 16 per problem, on every set."""
    from reasonrl.evaluate import pass_at_k

    curve = {str(k): sum(pass_at_k(ks[-1], c, k) for c in counts) / len(counts) for k in ks}
    sets = {s: {"difficulties": [n], "problems": len(counts), "pass_at_k": curve,
                "random_baseline": {str(k): 1 - (1 - 1 / n) ** k for k in ks},
                "distinct_answers": 1 + curve["16"], "entropy": 0.2 + curve["1"] / 2, "counts": counts,
                "counts_answer": [min(ks[-1], c + 2) for c in counts]}
            for s, n in (("in", 8), ("edge", 12), ("far", 16))}
    write_json(root / passk.data_path(label), {"model": f"rl_{label}", "N": ks[-1], "sets": sets})


def fake_headline(root: Path, run: str, base: str, before: float, after: float, task: str = "hop") -> None:
    """The files rl_headline@, eval_headline@ and eval_base@ write for one headline run and its base."""
    j = Job(task=task, init=f"base_{base}", seed=100, eval="val_edge")
    hist = {"steps": [{"step": 1, "reward/proxy": after, "reward/true": after}], "evals": [], "examples": [],
            "seconds": 1.0}
    write_json(root / paths.summary_path(run, headline.OUT), summary(j, hist))
    write_json(root / paths.run_metrics_path(run, headline.OUT), {"N": 4, "edge": {"greedy": {"acc": after},
                                                                                  "random_baseline": {"1": 0.0625}}})
    write_outcomes(root, paths.run_outcomes_path(run, headline.OUT), after)
    if base != "cot":  # base_cot's outcomes are the other studies' (0.4)
        write_outcomes(root, paths.outcomes_path(f"base_{base}", task=j.task), before)


CONFIGS = {
    # one config of the headline per task, as its stages load them (the task from the stage's argument)
    "headline_hop": headline.Config(runs={"hl_a": "cot", "hl_b": "cot_b", "hl_c": "cot_c", "hlc_a": "ch_a",
                                          "hlc_b": "ch_b"}, sets=["edge"], task="hop"),
    "headline_chain": headline.Config(runs={"hl_a": "cot", "hl_b": "cot_b", "hl_c": "cot_c", "hlc_a": "ch_a",
                                            "hlc_b": "ch_b"}, sets=["edge"], task="chain"),
    "methods": methods.Config(base="cot", runs={"SFT": ["sft_a", "sft_b"], "GRPO": ["grpo_a", "grpo_b", "grpo_c"]}),
    "passk": passk.Config(models={k: PasskModel("hop", v) for k, v in {
                              "base": "base_cot", "SFT_a": "x", "SFT_b": "x2", "SFT_c": "x3", "GRPO": "y"}.items()},
                          arms={"base": ["base"], "SFT": ["SFT_a", "SFT_b", "SFT_c"], "GRPO": ["GRPO"]}),
    "zero": zero.Config(runs={"noskill": "z_noskill", "think0": "z_think0", "think2": "z_think2"},
                        controls={"think2": {"random": "z_think2_rand"}}),
    "hacking": hacking.Config(base="cot", runs={"true": "grpo_a", "orm": "h_orm", "random": "h_rand",
                                                   "random, μ = 2": "h_rand2"},
                              random_pair=["random", "random, μ = 2"]),
    "ablations": ablations.Config(groups={
        "dr_grpo": ablations.Group("std normalisation", {"on": "grpo_a", "off": "a_nostd"}),
        "clip": ablations.Group("clipping", {"μ = 1": "grpo_a", "μ = 2, symmetric": "a_mu2", "clip-higher": "a_ch"},
                                [["μ = 2, symmetric", "clip-higher"]]),
        "loss_agg": ablations.Group("aggregation", {"token_mean": ["la_tm0", "la_tm1"],
                                                    "seq_mean_token_mean": ["la_sm0", "la_sm1"]})},
        stability=ablations.Stability("final accuracy by lr", {"GRPO": {"1e-4": ["grpo_a"], "1e-3": "a_mu2"},
                                                               "Dr. GRPO": {"1e-4": "a_nostd", "1e-3": ["a_ch"]}})),
    "index": index.Config(claims={
        "length": index.Claim("Dr. GRPO", "seq_mean_token_mean lets wrong responses grow longer", "ablations",
                              "loss_agg_seq_mean_token_mean_vs_token_mean_wrong_length", 1, ceiling=None,
                              equivalence=0.5, power_for=1.0),
        "random": index.Claim("Shao", "a random reward raises accuracy over the base", "hacking", "random_vs_base", 1),
        "clip": index.Claim("DAPO", "clip-higher beats the symmetric clip", "ablations",
                            "clip_clip_higher_vs_mu_2_symmetric", 1),
        "dynamic": index.Claim("DAPO", "dynamic sampling beats plain GRPO", "ablations", "dynamic_on_vs_off", 1)}),
}

# Every hand-built run and base trains hop world (Job's default task): the task folders their files sit in, which
# stage.load_config takes from params
TASKS = {"base_cot": "hop", **{f"base_{b}": "chain" if b.startswith("ch_") else "hop"
                                for b in CONFIGS["headline_hop"].runs.values()},
         **{f"rl_{r}": "hop" for s in ("methods", "zero", "hacking", "ablations")
            for r in STUDIES[s].all_runs(CONFIGS[s])}}
for _name in ("headline_hop", "headline_chain", "methods", "zero", "hacking", "ablations"):
    CONFIGS[_name].tasks = TASKS


def build_studies(root: Path, steps: int = 60) -> None:
    """Hand-built outputs of every run the CONFIGS name, then every report."""
    import random

    from reasonrl.tasks import get_task

    # the runs' evaluation sets, for the random guess the figures draw: rings of 8 and 16 (guess 3/32)
    hop = get_task("hop")
    rows = [hop.sample(random.Random(0), {"n_range": [n, n], "k_min": 3, "k_max": 3}).to_dict() for n in (8, 16)]
    for name in ("hop_val_edge", "hop_think"):
        (root / "data").mkdir(parents=True, exist_ok=True)
        (root / "data" / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    write_json(root / paths.base_metrics_path("cot", "hop"), {"N": 4, "edge": {
        "greedy": {"acc": 0.4, "by_k": {}}, "failure_mix": MIX | {"correct": 0.4, "lookup": 0.3}}})
    write_outcomes(root, paths.outcomes_path("base_cot", task="hop"), 0.4)
    for seed, (name, a) in enumerate((("sft_a", 0.55), ("sft_b", 0.65))):
        fake_run(root, name, steps, (0.4, a), method="sft", seed=seed)
    for name, a in (("grpo_a", 0.7), ("grpo_b", 0.8), ("grpo_c", 0.9), ("a_nostd", 0.72), ("a_mu2", 0.6),
                    ("a_ch", 0.65)):
        fake_run(root, name, steps, (0.4, a), num_iterations=2 if name in ("a_mu2", "a_ch") else 1,
                 clip=0.05 if name in ("a_mu2", "a_ch") else 0.0, seed={"grpo_b": 1, "grpo_c": 2}.get(name, 0))
    # two seeds per arm: wrong-response length offsets 0 / 0.5 and 3 / 3.2 (per-seed differences 3 and 2.7)
    for name, seed, a, wl in (("la_tm0", 0, 0.7, 0.0), ("la_tm1", 1, 0.7, 0.5), ("la_sm0", 0, 0.7, 3.0),
                              ("la_sm1", 1, 0.7, 3.2)):
        fake_run(root, name, steps, (0.4, a), seed=seed, wrong_len=wl)
    fake_run(root, "h_orm", steps, (0.4, 0.2), reward="orm", fooled=2)
    fake_run(root, "h_rand", steps, (0.4, 0.38), reward="random", fooled=1)
    fake_run(root, "h_rand2", steps, (0.4, 0.1), reward="random", num_iterations=2, clip=0.04, fooled=3)
    for name, th in (("z_noskill", (0.0, 0.0)), ("z_think0", (0.0, 0.6)), ("z_think2", (0.02, 0.95))):
        fake_run(root, name, steps, (0.3, 0.5), think=th, init=f"mixed_{name[2:]}")
    fake_run(root, "z_think2_rand", steps, (0.3, 0.35), think=(0.02, 0.1), init="mixed_think2", reward="random")
    # base: 2 of 16 right on every problem (pass@k .125 .242 .450 .767 1); SFT: all or nothing on half the
    # problems (0.5 at every k: above the base up to k = 4, below from k = 8); GRPO: 4 of 16 (above, then equal)
    fake_passk(root, "base", [2] * PROBLEMS)
    for label in ("SFT_a", "SFT_b", "SFT_c"):
        fake_passk(root, label, [16, 0] * (PROBLEMS // 2))
    fake_passk(root, "GRPO", [4] * PROBLEMS)
    # headline: hop bases at 0.40 / 0.50 / 0.60 greedy, each run 0.10 above its own base; chain bases at 0.30 / 0.50,
    # each run 0.05 below
    for (run, base), acc in zip(CONFIGS["headline_hop"].runs.items(), (0.4, 0.5, 0.6, 0.3, 0.5)):
        task = TASKS[f"base_{base}"]
        fake_headline(root, run, base, acc, acc + (0.1 if task == "hop" else -0.05), task)
    # the exact toy's manifest and metrics (its report needs the exact stage's results: tests/test_exact.py)
    manifest.Manifest("exact", "The exact toy", "Does RL reach π*?", "yes", ["β = 1"],
                    [("exact/beta_sweep.png", "gold reward of the RL policy: β=3 -0.195, β=0.3 -0.5.")],
                    ["exact/beta_sweep.md"]).write(root)
    write_json(root / index.EXACT_METRICS, {"final_kl_opt_rloo": 0.004, "final_kl_opt_grpo": 0.03})
    for name, module in STUDIES.items():
        module.report(CONFIGS[name], root)


@pytest.fixture(scope="module")
def studies(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("studies")
    build_studies(root)
    return root


# ----------------------------------------------------------------------------- helpers, by hand

def test_band_stats_aligns_on_step_and_smooths_centred():
    a = pd.Series([0.0, 1.0, 2.0, 3.0], index=[1, 2, 3, 4])
    b = pd.Series([2.0, 2.0, 2.0], index=[2, 3, 4])
    st = figures.band_stats([a, b])
    assert st.loc[1].tolist() == [0.0, 0.0, 0.0, 1]  # only a has step 1: no interval, one seed
    # two seeds 1 and 2: mean 1.5, se 0.5, t_0.975 with 1 df = 12.7062
    assert st.loc[2].tolist() == pytest.approx([1.5, 1.5 - 6.35310, 1.5 + 6.35310, 2], abs=1e-4)
    assert st.loc[4, "mean"] == 2.5
    zigzag = pd.Series([0.0, 3.0, 0.0, 3.0, 0.0], index=[1, 2, 3, 4, 5])
    sm = figures.band_stats([zigzag], smooth=3)
    assert sm["mean"].tolist() == pytest.approx([0.0, 1.0, 2.0, 1.0, 0.0])  # centred window of 3, the ends raw


def test_a_bounded_interval_holds_its_mean_and_draws_as_error_bars():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from reasonrl.studies.figures import Curve, band

    past = [pd.Series([1.2, 0.9], index=[0, 10]), pd.Series([1.2, 0.7], index=[0, 10])]  # step 0: mean 1.2 > 1
    st = figures.band_stats(past, bounds=(0.0, 1.0))
    assert st.loc[0].tolist() == [1.2, 1.2, 1.2, 2]  # hi, cut at the bound 1, held at the mean
    assert st.loc[10, "hi"] == 1.0 and st.loc[10, "lo"] == 0.0  # a t-interval of two seeds, cut both ways
    fig, ax = plt.subplots()
    band(ax, Curve("arm", past, points=True, bounds=(0.0, 1.0)))  # matplotlib refuses error bars below 0
    plt.close(fig)


def test_tail_mean_mean_sd_and_mix():
    s = pd.Series(np.arange(1.0, 21.0))
    assert runs.tail_mean(s) == 19.5  # last 10% = last 2 of 20
    assert runs.tail_mean(pd.Series([3.0])) == 3.0
    assert runs.mean_sd([0.5, 0.7]) == "0.600 ± 0.141"  # sample sd sqrt(0.02)
    assert runs.mean_sd([0.5]) == "0.500"
    assert runs.mean_mix([{"correct": 0.2, "lookup": 0.8}, {"correct": 0.6, "lookup": 0.4}]) == pytest.approx(
        {"correct": 0.4, "lookup": 0.6})


def test_code_cells_escape_pipes_for_markdown_tables():
    assert markdown.code("bcd|d$") == "`bcd\\|d$`"
    table = markdown.md_table(pd.DataFrame({"response": [markdown.code("ab|b$")], "x": [1.0]}), "t")
    assert table.splitlines()[-1].count(" | ") == 1  # one column separator, the pipe in the cell escaped


def test_crossings_by_hand():
    ks = [1, 2, 4, 8, 16]
    base = [0.4, 0.55, 0.7, 0.8, 0.9]
    assert passk.crossings(ks, base, [0.5, 0.6, 0.7, 0.75, 0.8]) == [(2, 8, "above → below")]
    assert passk.describe_crossing(ks, base, [0.3, 0.5, 0.75, 0.85, 0.95]) == \
        "means cross below → above between k = 2 and k = 4"
    assert passk.describe_crossing(ks, base, [b + 0.1 for b in base]) == "mean above the base's at every k"
    assert passk.describe_crossing(ks, base, base) == "means equal at every k"
    assert passk.first_crossing(ks, base, [0.5, 0.4, 0.8, 0.7, 0.95]) == 2  # three crossings; the first


def test_zero_verdicts_by_hand():
    from reasonrl.studies.answers import Answer

    cfg = zero.Config(runs={"x": "y"}, present=0.01, rise=0.05)

    def x(lo, hi):
        return Answer("p", "a", "b", stats.Comparison(0, 0, (lo + hi) / 2, lo, hi, 0.05, 4, 0.5, 0.2, 5, 8))

    assert zero.verdict(0.0, 0.03, x(0.01, 0.05), cfg)[0] == "raised"
    assert zero.verdict(0.005, 0.6, x(0.5, 0.69), cfg) == ("created", "created: think rate 0.5% → 60.0%, "
                                                           "+0.595 [0.500, 0.690]")
    assert zero.verdict(0.02, 0.95, x(0.9, 0.96), cfg)[0] == "selected"
    # a large mean rise whose interval covers 0 (the committed think0: +0.081 [-0.138, 0.299]) selects nothing
    assert zero.verdict(0.001, 0.082, x(-0.138, 0.299), cfg)[0] == "no detectable difference"
    assert zero.verdict(0.5, 0.2, x(-0.4, -0.2), cfg)[0] == "lowered"


def test_configs_reject_bad_values():
    from reasonrl.config import ConfigError, from_dict

    with pytest.raises(ConfigError, match="studies.hacking.random_pair"):
        from_dict(hacking.Config, {"runs": {"a": "r1"}, "random_pair": ["r1", "r2"]}, "studies.hacking")
    with pytest.raises(ConfigError, match="passk.bases"):
        load_config(passk, {"passk": {"bases": ["nope"], "models": {"base": {"task": "hop", "model": "base_cot"}}}})
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
        # the passk@ stages' files (curves, the measurements the report reads) and the index's details page sit
        # beside the report's own
        theirs = {p for p in written if p.startswith(("reports/passk/curve_", "reports/passk/data"))}
        theirs |= {index.details_path(study)}
        assert written - theirs <= declared


def test_methods_numbers(studies):
    m = read_json(studies / "reports/metrics/methods.json")
    assert m["base"]["acc"] == 0.4
    assert m["GRPO"]["acc_mean"] == pytest.approx(0.8) and m["GRPO"]["acc_sd"] == pytest.approx(0.1)
    assert m["SFT"]["acc_min"] == 0.55 and m["SFT"]["acc_max"] == 0.65
    assert m["SFT"]["failure_mix"]["correct"] == pytest.approx(0.6)
    assert m["GRPO"]["acc_ci_lo"] < 0.8 < m["GRPO"]["acc_ci_hi"]
    # paired with the base (0.4, seedless) on all three seeds: 140, 160, 180 of 200 right vs 80
    vs_base = read_json(studies / "reports/methods/answers/grpo_vs_base.json")
    assert list(vs_base) == ["a", "b", "effect", "ci_lo", "ci_hi", "se", "df", "p", "mde", "seeds", "problems",
                             "se_run", "run_sd"]
    assert (vs_base["a"], vs_base["b"], vs_base["seeds"], vs_base["problems"]) == (0.4, 0.8, 3, 200)
    assert vs_base["effect"] == pytest.approx(0.4) and 0 < vs_base["ci_lo"] < 0.4 < vs_base["ci_hi"]
    # against the reference (SFT, the first arm) on the common seeds 0 and 1: (0.7 + 0.8) / 2 - 0.6
    vs_ref = read_json(studies / "reports/methods/answers/grpo_vs_sft.json")
    assert vs_ref["seeds"] == 2 and vs_ref["effect"] == pytest.approx(0.15)
    table = (studies / "reports/methods/table.md").read_text()
    assert "GRPO > base cot by 0.400 [" in table and "gold (≡ 1)" in table and "0.800 [" in table


def test_passk_table_states_crossings(studies):
    table = (studies / "reports/passk/table.md").read_text()
    assert "means cross above → below between k = 4 and k = 8" in table
    assert "mean above the base's at every k" in table
    # three seeds (df 2): k = 4's +0.05 on 200 problems is within the noise, so the detected sides are
    # k = 1, 2 and k = 8, 16
    assert "detectably above the base at k = 1, 2 and below at k = 8, 16: the curves cross" in table
    m = read_json(studies / "reports/metrics/passk.json")
    assert m["SFT"]["edge"]["first_crossing_k"] == 8 and m["GRPO"]["edge"]["first_crossing_k"] is None
    assert m["base"]["far"]["pass_at_max"] == 1.0 and m["base"]["far"]["k_max"] == 16
    assert m["base"]["edge"]["pass_at_1"] == pytest.approx(0.125) and m["SFT"]["edge"]["seeds"] == 3
    # SFT vs base at k = 16: 0 on half the problems, -1 on the other half
    k16 = read_json(studies / "reports/passk/answers/sft_vs_base_edge_k016.json")
    assert k16["effect"] == pytest.approx(-0.5) and k16["ci_hi"] < 0 and k16["seeds"] == 3
    k1 = read_json(studies / "reports/passk/answers/sft_vs_base_edge_k001.json")
    assert k1["effect"] == pytest.approx(0.375) and k1["ci_lo"] > 0


def test_zero_answers_create_or_select(studies):
    m = read_json(studies / "reports/metrics/zero.json")
    assert {b: v["verdict"] for b, v in m.items()} == {"noskill": "not testable (no variance)", "think0": "created",
                                                       "think2": "selected", "think2 with random reward": "selected"}
    assert m["think2"]["think_before"] == 0.02 and m["think2"]["think_after"] == 0.95
    assert m["noskill"]["acc_think_after"] == 0.9 or m["noskill"]["think_after"] == 0.0
    table = (studies / "reports/zero/table.md").read_text()
    assert "RL selects thinking in think2 (2.0% → 95.0%, " in table
    assert "n/a" in table and "### Paired comparisons of the accuracy" in table
    # the random reward's control, one seed: accuracy 0.35 after against the true reward's 0.5 on every hop count
    rand = read_json(studies / "reports/zero/answers/think2_with_random_reward_vs_think2_after_accuracy.json")
    assert rand["effect"] == pytest.approx(-0.15) and rand["seeds"] == 1
    assert m["think2 with random reward"]["acc_before"] == 0.3 and m["think2 with random reward"]["seeds"] == 1


def test_hacking_fooled_examples_and_random_clip(studies):
    table = (studies / "reports/hacking/table.md").read_text()
    assert table.count("`bb\\|b$`") == 2 + 1 + 3  # the fooled examples of the last step, pipes escaped
    m = read_json(studies / "reports/metrics/hacking.json")
    mu1, mu2 = m["random_clip"]
    assert (mu1["mu"], mu2["mu"]) == (1, 2) and mu1["clip_frac"] == 0.0 and mu2["clip_frac"] == pytest.approx(0.04)
    assert mu2["acc_start"] == pytest.approx(0.4) and mu2["acc_end"] == pytest.approx(0.1)
    assert m["orm"]["acc"] == 0.2 and m["orm"]["proxy_end"] > m["orm"]["true_end"]


def test_ablations_compare_with_the_group_reference(studies):
    from reasonrl.config import ConfigError

    m = read_json(studies / "reports/metrics/ablations.json")
    assert m["dr_grpo"]["off"]["acc"] == 0.72 and m["clip"]["clip-higher"]["acc"] == 0.65
    assert m["dr_grpo"]["off"]["rollouts_per_step"] == 256  # the synthetic runs draw 256 rollouts per step
    # compute per run: 256 rollouts x 60 steps; updates num_iterations x the 60 steps (each with a gradient)
    assert (m["dr_grpo"]["off"]["rollouts"], m["dr_grpo"]["off"]["updates"]) == (15360, 60)
    assert m["clip"]["μ = 2, symmetric"]["updates"] == 120
    table = (studies / "reports/ablations/table.md").read_text()
    assert "rollouts per step (mean)" in table and "seconds" not in table
    assert "rollouts (per run)" in table and "updates (per run)" in table
    assert "+0.020 [" in table and "-0.050 [" in table  # off vs on; clip-higher vs μ = 1
    assert "μ = 1 > clip-higher by 0.050 [" in table
    sym = read_json(studies / "reports/ablations/answers/clip_clip_higher_vs_mu_2_symmetric.json")  # a group pair
    assert sym["effect"] == pytest.approx(0.05) and sym["ci_lo"] > 0
    # per-seed curve answers only where the arms share two seeds: (3 + 2.7) / 2 longer, CI over the two seeds
    wl = read_json(studies / "reports/ablations/answers/loss_agg_seq_mean_token_mean_vs_token_mean_wrong_length.json")
    # se 0.15 with 1 df (t_0.975 = 12.706): 2.85 +- 1.906, two seeds leave the interval wide
    assert wl["effect"] == pytest.approx(2.85) and (wl["ci_lo"], wl["ci_hi"]) == pytest.approx((0.944, 4.756), abs=1e-3)
    assert (wl["seeds"], wl["problems"]) == (2, 1)
    assert not (studies / "reports/ablations/answers/clip_clip_higher_vs_mu_1_wrong_length.json").exists()
    ch = read_json(studies / "reports/ablations/answers/clip_clip_higher_vs_mu_1.json")
    assert (ch["a"], ch["b"], ch["seeds"], ch["problems"]) == (0.7, 0.65, 1, 200)
    # the stability map: Dr. GRPO against GRPO at each lr (0.65 - 0.60 at 1e-3, 0.72 - 0.70 at 1e-4)
    st = read_json(studies / "reports/ablations/answers/stability_dr_grpo_vs_grpo_lr_1e_3.json")
    assert st["effect"] == pytest.approx(0.05) and st["ci_lo"] > 0
    assert read_json(studies / "reports/ablations/answers/stability_dr_grpo_vs_grpo_lr_1e_4.json")["effect"] == \
        pytest.approx(0.02)
    assert m["stability"]["Dr. GRPO @ lr 1e-3"]["acc"] == 0.65
    with pytest.raises(ConfigError, match="same learning rates"):
        ablations.Stability("x", {"a": {"1e-4": "r1"}, "b": {"1e-3": "r2"}})


def test_index_shows_a_figure_per_study_and_its_details_list_every_figure_and_table(studies):
    text = (studies / index.INDEX).read_text()
    for study in ("methods", "passk", "zero", "hacking", "ablations"):
        man = read_json(studies / paths.manifest_path(study))
        details = (studies / index.details_path(study)).read_text()
        assert f"[Details]({study}/details.md)" in text and f"# {man['title']}: details" in details
        key = man["key_figure"] or man["figures"][0]["file"]
        assert f"![{key}]({key})" in text  # the front page's one figure per study
        assert sum(f"![{f['file']}]({f['file']})" in text for f in man["figures"]) == 1
        for fig in man["figures"]:
            rel = posixpath.relpath(fig["file"], study)
            assert f"[{fig['file']}]({rel}): {fig['caption']}" in details
            assert (studies / "reports" / fig["file"]).exists()
        for t in man["tables"]:
            assert f"]({posixpath.relpath(t, study)})" in details
        assert all(f"- `{a['pair']}`: {a['text']}" in details for a in man["answers"])
        assert all(f"- {r}" in details for r in man["runs"])
    assert "[exact/beta_sweep.png](beta_sweep.png)" in (studies / index.details_path("exact")).read_text()
    assert "β=0.3 -0.5" in text  # the toy's answer is short enough to be its own paragraph
    assert len(read_json(studies / paths.manifest_path("hacking"))["figures"]) == 4 + 2
    claims = (studies / index.CLAIMS).read_text()
    rows = {line.split(" | ")[1]: line for line in claims.splitlines() if line.startswith("| ") and " | " in line}
    # two seeds per arm: per-seed differences 3 and 2.7, t-interval with 1 df [0.94, 4.76] (p 0.033), Holm x 3;
    # one df leaves little power to find 1.0 beyond ±0.5
    length = rows["seq_mean_token_mean lets wrong responses grow longer"]
    assert "| underpowered at 2 seeds | power 0.0" in length
    # one run each: 0.38 against 0.40 on 200 problems, over problems only (MDE 0.028: powered for 0.1)
    assert "| not reproduced | no detectable difference after Holm" in rows[
        "a random reward raises accuracy over the base"]
    # one run each: clip-higher solves 10 more of 200 (p 0.001), Holm x 3 still below 0.05, beyond ±0.01
    assert "| reproduced |" in rows["clip-higher beats the symmetric clip"]
    assert "| not testable here | its primary comparison ablations/dynamic_on_vs_off was not computed" in \
        rows["dynamic sampling beats plain GRPO"]
    # the front page's verdict table: the same verdicts, short rows, each claim linked to its section in claims.md
    # where its reason and power are
    front = {line.split(" | ")[0][2:]: line for line in text.splitlines() if line.startswith("| ")}
    length = front["[Dr. GRPO: seq_mean_token_mean lets wrong responses grow longer](claims.md#length)"]
    assert length.endswith("| wrong-response length | +2.850 [0.944, 4.756] | underpowered at 2 seeds |")
    assert front["[DAPO: clip-higher beats the symmetric clip](claims.md#clip)"].endswith("| reproduced |")
    assert front["[DAPO: dynamic sampling beats plain GRPO](claims.md#dynamic)"].endswith("| — | not testable here |")
    assert "### length" in claims and "power 0.0" in claims.split("### length")[1].split("###")[0]
    assert index.check_limits(text) == []


def test_reports_are_deterministic(studies, tmp_path):
    build_studies(tmp_path)
    for name, module in STUDIES.items():
        for path in module.outputs(CONFIGS[name]):
            files = sorted((tmp_path / path).iterdir()) if (tmp_path / path).is_dir() else [tmp_path / path]
            for f in files:
                if f.suffix != ".png":
                    assert f.read_bytes() == (studies / f.relative_to(tmp_path)).read_bytes(), f


# ----------------------------------------------------------------------------- agreement with dvc.yaml

def stage_config(name: str, params: dict):
    """The config report_<name> runs with: a headline report's task is its stage's argument, not a params key."""
    cfg = load_config(STUDIES[name], params)
    return replace(cfg, task=name.removeprefix("headline_")) if STUDIES[name] is headline else cfg


def stage_files(stage: dict, key: str) -> set[str]:
    return {next(iter(x)) if isinstance(x, dict) else x for x in stage.get(key, [])}


def test_report_stages_depend_on_exactly_what_they_read():
    dvc = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    for name, module in STUDIES.items():
        stage, cfg = dvc[f"report_{name}"], stage_config(name, params)
        # code deps (modules, code stamps): tests/test_deps.py; the rest is inputs or folders of inputs
        # (reports/rl/<task>/, reports/eval/<task>/: a run added to a study needs no edit in dvc.yaml), each folder
        # one an input sits in, so a task none of the study's runs trains is no dep of it
        deps = {d for d in stage_files(stage, "deps") if not d.endswith(".py") and not d.startswith("reports/code/")}
        inputs = set(module.inputs(cfg))
        folders = {d for d in deps if any(p.startswith(d + "/") for p in inputs)}
        assert all(p in deps or any(p.startswith(f + "/") for f in folders) for p in inputs), name
        assert deps == (deps & inputs) | folders, name
        assert stage_files(stage, "outs") | stage_files(stage, "metrics") == set(module.outputs(cfg)), name
        if module is headline:  # the stage's argument is the task whose files it lists
            assert stage["cmd"] == f"python stages/report_headline.py {cfg.task}", name
        assert all(next(iter(o.values()))["cache"] is False for o in stage["outs"] + stage.get("metrics", []))


def data_deps(stages: dict, body: dict) -> set[str]:
    """The data files a task stage depends on, its own and through the code stamps it reads (a stamp of
    `code_<script>@<task>` lists its script's data sets: docs/pipeline.md), written as the stage's ${item.task}."""
    found = {d for d in stage_files(body, "deps") if d.startswith("data/")}
    for dep in stage_files(body, "deps"):
        if dep.startswith("reports/code/") and dep.endswith("_${item.task}.txt"):
            group = "code_" + dep.removeprefix("reports/code/").removesuffix("_${item.task}.txt")
            found |= {d.replace("${key}", "${item.task}") for d in stage_files(stages[group]["do"], "deps")
                      if d.startswith("data/")}
    return found


def test_studies_know_the_sets_the_eval_stage_writes():
    # stages/eval.py keeps its own SETS (importing reasonrl.studies would make every report module a dep of
    # every eval stage); the two lists must agree, and the eval stages depend on exactly those files
    tree = ast.parse((ROOT / "stages/eval.py").read_text())
    sets = next(ast.literal_eval(n.value) for n in tree.body
                if isinstance(n, ast.Assign) and [t.id for t in n.targets] == ["SETS"])
    assert tuple(sets) == answers.EVAL_SETS
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    assert data_deps(stages, stages["eval"]["do"]) == {f"data/${{item.task}}_{s}.jsonl" for s in sets}


def test_passk_stage_reads_the_sets_and_models_params_name():
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    stage = stages["passk"]
    params = yaml.safe_load((ROOT / "params.yaml").read_text())["passk"]
    assert stage["foreach"] == "${passk.models}"
    assert data_deps(stages, stage["do"]) == {f"data/${{item.task}}_{s}.jsonl" for s in params["sets"]}
    assert params["eval"]["passk_ks"][-1] == params["eval"]["passk_N"]
    assert all(math.log2(k).is_integer() for k in params["eval"]["passk_ks"])
    runs = {f"rl_{r}" for group in ("runs", "runs_noeval", "runs_orm", "runs_prm")
            for r in yaml.safe_load((ROOT / "params.yaml").read_text())[group]}
    assert all(m["model"] in runs or m["model"].startswith("base_") for m in params["models"].values())


def test_every_study_run_is_defined_with_the_eval_it_needs():
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    runs = {n: r for group in ("runs", "runs_noeval", "runs_orm", "runs_prm") for n, r in params[group].items()}
    for name in ("methods", "hacking", "ablations", "zero"):
        cfg = load_config(STUDIES[name], params)
        want = "think" if name == "zero" else "val_edge"  # in-training curves on the validation set
        for path in STUDIES[name].inputs(cfg):
            if path.startswith("reports/rl/"):
                run = Path(path).stem
                assert run in runs and runs[run].get("eval") == want, (name, run)


def test_claims_verdicts_by_hand():
    from scipy import stats as sps

    def ans(effect, se, a=0.5, df=4, constant=None, **kw):
        p = float(2 * sps.t.sf(abs(effect) / se, df)) if se else 1.0
        return {"a": a, "b": a + effect, "effect": effect, "ci_lo": effect, "ci_hi": effect, "se": se, "df": df,
                "p": p, "mde": 3.7 * se, "seeds": df + 1, "problems": 100, "constant": constant, "a_label": "A",
                "b_label": "B", **kw}

    def claim(primary, expect=1, **kw):
        return index.Claim("P", primary, "ablations", primary, expect, **kw)

    answers = {"up": ans(0.2, 0.02), "down": ans(-0.2, 0.02), "shared": ans(0.2, 0.02), "tiny": ans(0.004, 0.0005),
               "wide": ans(0.05, 0.04, ci_lo=-0.061, ci_hi=0.161), "top": ans(0.002, 0.002, a=0.995),
               "top_down": ans(-0.3, 0.02, a=0.995),
               "flat": ans(0.0, 0.0, a=1.0, constant=1.0), "length": ans(2.85, 0.15, df=1, ci_lo=0.944, ci_hi=4.756),
               "middle": ans(0.02, 0.0025), "same": ans(0.0, 0.0), "edge": ans(0.002, 0.002, a=0.75),
               "guess": ans(0.005, 0.002, a=0.0625, chance=0.0625), "off": ans(0.2, 0.02, clip=0.0004),
               "on": ans(0.2, 0.02, clip=0.05)}
    binds = {"key": "clip", "min": 0.01, "what": "share of clipped tokens"}
    claims = {k: claim(k) for k in answers if k != "shared"} | {
        "missing": claim("missing"), "against": claim("up", expect=-1),
        "length": claim("length", ceiling=None, equivalence=0.5, power_for=1.0),
        "edge": claim("edge", equivalence=0.25, power_for=0.3), "raises": claim("shared"),
        "lowers": claim("shared", expect=-1), "off": claim("off", mechanism=binds),
        "on": claim("on", mechanism=binds), "unmeasured": claim("up", mechanism={"key": "nope", "min": 1})}
    rows = {k: r for (k, task), r in index.judge_all(claims, {"ablations": answers}, 0.01).items()}
    verdict = {k: (r["verdict"], r["why"]) for k, r in rows.items()}
    # The rules fixed before the run take eight claims out of the family: no answer (missing), no variance
    # (flat, same), a ceiling in the claimed direction (top, top_down, edge: 0.25 of room is not more than its
    # region), both arms at chance (guess), the mechanism absent (off) or not measured (unmeasured).
    assert verdict["top_down"] == ("not testable here", "at the ceiling: the arm to beat is at 0.995, leaving "
                                   "0.005 of room, within the ±0.01 equivalence region")
    assert verdict["flat"] == ("not testable here",
                               "neither arm varies (both at the same value on every problem and run)")
    assert verdict["same"] == ("not testable here",
                               "the difference is the same on every problem and run: no interval to test")
    assert verdict["edge"][0] == verdict["top"][0] == "not testable here" and "p_holm" not in rows["top"]
    assert verdict["guess"] == ("not testable here", "at chance: both arms within ±0.01 of the guess floor 0.062")
    assert verdict["off"] == ("not testable here", "mechanism absent: share of clipped tokens 0.0004 < 0.01")
    assert verdict["unmeasured"] == ("not testable here", "its mechanism (nope) was not measured")
    assert verdict["missing"][0] == "not testable here" and index.result_text(rows["missing"]) == "—"
    assert "was not computed" in verdict["missing"][1]
    # One test per distinct comparison: up (read by up and against), down, shared (read by raises and lowers),
    # tiny, wide, length, middle, on: m = 8. p beyond the region: (|d| - e) / se on t; up = down = shared = on
    # 6.8e-4 (x 8, 7, 6, 5: rejected), middle 0.016 (x 4 = 0.065: Holm stops), length 0.041 (x 3), wide
    # 0.37, tiny 1.
    assert {r["family"] for r in rows.values() if "family" in r} == {8}
    p_beyond = {k: 2 * sps.t.sf((abs(a["effect"]) - {"length": 0.5}.get(k, 0.01)) / a["se"], a["df"])
                for k, a in answers.items() if a["se"]}
    assert rows["middle"]["p_holm"] == pytest.approx(4 * p_beyond["middle"])
    assert rows["length"]["p_holm"] == pytest.approx(3 * p_beyond["length"])
    assert rows["raises"]["p_holm"] == rows["lowers"]["p_holm"] < 0.05
    assert verdict["raises"] == ("reproduced", "Holm-adjusted interval beyond ±0.01, in the claimed direction")
    assert verdict["lowers"] == ("contradicted", "Holm-adjusted interval beyond ±0.01, against the claimed direction")
    assert verdict["up"][0] == "reproduced" and verdict["down"][0] == verdict["against"][0] == "contradicted"
    assert verdict["on"][0] == "reproduced"
    # levels: the four rejected at their own steps, the rest where Holm stopped (1 - 0.05/4)
    assert sorted(rows[k]["level"] for k in ("up", "down", "raises", "on")) == pytest.approx(
        [1 - 0.05 / 5, 1 - 0.05 / 6, 1 - 0.05 / 7, 1 - 0.05 / 8])
    assert rows["up"]["level"] == rows["against"]["level"]
    assert rows["wide"]["level"] == rows["tiny"]["level"] == pytest.approx(1 - 0.05 / 4)
    t = sps.t.ppf(1 - 0.05 / 8, 4)  # the interval shown at 1 - 0.05/4: effect -+ t_{1 - 0.05/8} * se
    assert (rows["tiny"]["lo"], rows["tiny"]["hi"]) == pytest.approx((0.004 - t * 0.0005, 0.004 + t * 0.0005))
    assert verdict["tiny"] == ("not reproduced", "equivalent within ±0.01 (Holm-adjusted interval)")
    # power to find 0.1 beyond ±0.01 at alpha / m = 0.05 / 8, from the noncentral t with 4 df, both signs
    crit = sps.t.ppf(1 - 0.05 / 16, 4)
    wide_power = sps.nct.sf(crit, 4, 0.09 / 0.04) + sps.nct.sf(crit, 4, -0.11 / 0.04)
    assert rows["wide"]["power"] == pytest.approx(wide_power) and wide_power < 0.8
    assert verdict["wide"][0] == "underpowered at 5 seeds"
    assert verdict["wide"][1].startswith(f"power {wide_power:.2f} < 0.8 to find 0.1 beyond ±0.01 at 5 seeds")
    assert verdict["length"][0] == "underpowered at 2 seeds"  # p 0.041 unadjusted; power for 1.0 beyond ±0.5 small
    # length's unadjusted 2.85 -+ t_0.975(1) x 0.15 = [0.944, 4.756] excludes 0, its adjusted interval does not;
    # wide's 0.05 -+ t_0.975(4) x 0.04 = [-0.061, 0.161] covers 0, so its reason says nothing of a direction
    assert verdict["length"][1].endswith(
        "; the unadjusted interval excludes 0, in the claimed direction; the Holm-adjusted one does not")
    assert "unadjusted" not in verdict["wide"][1]
    spread = {"run_sd": 0.3, "seeds": 5}
    assert needs_text({"needs": 12}, spread) == " (needs 12 for 0.8)"
    assert needs_text({"needs": None}, spread) == " (not within 400 seeds)"
    assert needs_text({"needs": None}, {**spread, "seeds": 1}).startswith(" (one seed")
    assert needs_text({}, {"seeds": 5}) == ""
    # an undecided verdict says which way its unadjusted interval (the table's) points, and whether Holm's does
    assert unadjusted_side({"ci_lo": -0.262, "ci_hi": -0.051}, 1, -0.336, 0.023) == (
        "; the unadjusted interval excludes 0, against the claimed direction; the Holm-adjusted one does not")
    assert unadjusted_side({"ci_lo": 0.097, "ci_hi": 0.493}, 1, 0.004, 0.6) == (
        "; the unadjusted interval excludes 0, in the claimed direction; so does the Holm-adjusted one")
    assert unadjusted_side({"ci_lo": 0.01, "ci_hi": 0.2}, -1, -0.1, 0.3).endswith("against the claimed direction; "
                                                                                  "the Holm-adjusted one does not")
    assert unadjusted_side({"ci_lo": -0.1, "ci_hi": 0.2}, 1, -0.3, 0.4) == ""
    # excludes 0 at its adjusted level ([0.010, 0.030]) but Holm did not show it beyond +-0.01; powered
    assert rows["middle"]["power"] > 0.99 and rows["middle"]["lo"] > 0 and verdict["middle"] == (
        "not reproduced", "a difference, but not shown beyond ±0.01 after Holm's adjustment")
    # the result is worded with the claim's own region: the length claim with +-0.5, not the study's 0.01
    # the wording before "Holm-adjusted" reads the unadjusted interval, and says so
    assert index.result_text(rows["length"]).startswith("unadjusted: B > A by 2.850 [")
    assert "p (beyond ±0.5)" in index.result_text(rows["length"])
    # a margin prints at 3 significant digits (a relative one is 5% of a measured value)
    assert (fmt_margin(0.430743), fmt_margin(0.00151656), fmt_margin(0.01)) == (
        "±0.431", "±0.00152", "±0.01")
    assert index.seeds_power(rows["wide"]) == f"5; {wide_power:.2f}" and index.seeds_power(rows["flat"]) == "—"
    assert index.seeds_power({**rows["wide"], "claim": claim("wide", seeds=9)}) == f"5 of 9; {wide_power:.2f}"
    assert index.exact_claim({"final_kl_opt_rloo": 0.001, "final_kl_opt_none": 0.3})[1:] == (
        "holds exactly", "KL computed exactly over every response, one training run per estimator: outside the Holm "
        "family; KL < 0.01 reached by rloo")
    assert index.exact_claim({"final_kl_opt_rloo": 0.2})[1] == "does not hold exactly"
    assert index.exact_claim({"final_kl_opt_rloo": 0.2})[2].endswith("reached by no estimator")
    assert index.exact_claim({"final_kl_opt_none": 0.005})[2].endswith("reached by plain REINFORCE")
    assert index.exact_claim(None)[1] == "not testable here"
    # one arm at chance and the other far above it: a test like any other
    lifts = index.judge_all({"lifts": claim("lifts")}, {"ablations": {"lifts": ans(0.3, 0.02, a=0.0625,
                                                                                     chance=0.0625)}}, 0.01)
    assert lifts["lifts", "hop"]["verdict"] == "reproduced"
    just = index.judge_all({"on": claim("on", mechanism=binds)}, {"ablations": {"on": ans(0.2, 0.02, clip=0.01)}}, 0.01)
    assert just["on", "hop"]["verdict"] == "reproduced"  # a mechanism at its min acts
    with pytest.raises(ConfigError, match="power_for"):
        claim("x", equivalence=0.5)  # the default 0.10 lies inside a region of ±0.5
    with pytest.raises(ConfigError, match="power_for"):
        index.Config(claims={"x": {"paper": "P", "claim": "c", "study": "passk", "primary": "x", "expect": 1,
                                   "power_for": 0.005}})
    with pytest.raises(ConfigError, match="mechanism"):
        claim("x", mechanism={"key": "clip"})


def test_the_claims_page_sets_the_answer_only_twin_beside_the_verified_result():
    def ans(a, b, lo, hi, **kw):
        return {"a": a, "b": b, "effect": b - a, "ci_lo": lo, "ci_hi": hi, "se": 0.02, "df": 4, "p": 0.01,
                "mde": 0.07, "seeds": 5, "problems": 100, "constant": None, **kw}

    # a guess passes the answer-only measure: 0.30 -> 0.70 by the answer, 0.10 -> 0.12 verified
    twin = ans(0.3, 0.7, 0.35, 0.45)
    answers = {"v": ans(0.1, 0.12, -0.01, 0.05, answer_only=twin), "len": ans(3.0, 4.0, 0.5, 1.5)}
    claims = {"v": index.Claim("P", "c", "passk", "v", 1),
              "len": index.Claim("P", "c", "passk", "len", 1, ceiling=None, equivalence=0.5, power_for=1.0)}
    manifests = [{"study": "passk", "answers": [{"pair": k, **a} for k, a in answers.items()]}]
    rows = {r["primary comparison"]: r for r in index.claims_rows(index.Config(claims=claims), manifests, None)}
    assert rows["passk/v"][index.ANSWER_ONLY] == "0.300 → 0.700, +0.400 [0.350, 0.450]"
    assert rows["passk/len"][index.ANSWER_ONLY] == "—" and rows["exact/final_kl_opt"][index.ANSWER_ONLY] == "—"


def test_a_claim_tested_on_two_tasks_is_two_tests_of_the_family_and_gets_a_column_each():
    def ans(effect, se):
        return {"a": 0.5, "b": 0.5 + effect, "effect": effect, "ci_lo": effect, "ci_hi": effect, "se": se, "df": 4,
                "p": 0.5, "mde": 3.7 * se, "seeds": 5, "problems": 100, "constant": None}

    answers = {"up_hop": ans(0.2, 0.02), "up_chain": ans(0.2, 0.02), "flat_hop": ans(0.2, 0.02),
               "flat_chain": ans(0.004, 0.0005), "solo": ans(0.2, 0.02)}
    claims = {"up": index.Claim("P", "c", "passk", "up_hop", 1, tasks={"chain": "up_chain"}),
              "flat": index.Claim("P", "c", "passk", "flat_hop", 1, tasks={"chain": "flat_chain"}),
              "solo": index.Claim("P", "c", "passk", "solo", 1)}
    rows = index.judge_all(claims, {"passk": answers}, 0.01)
    assert list(rows) == [("up", "hop"), ("up", "chain"), ("flat", "hop"), ("flat", "chain"), ("solo", "hop")]
    p = 2 * sps_t_sf((0.2 - 0.01) / 0.02, 4)
    assert rows["up", "chain"]["p_holm"] == pytest.approx(5 * p)  # five tests in the family, all at the smallest p
    assert rows["flat", "chain"]["verdict"] == "not reproduced" and rows["flat", "hop"]["verdict"] == "reproduced"
    manifests = [{"study": "passk", "answers": [{"pair": k, **a} for k, a in answers.items()]}]
    table = index.by_task_table(index.Config(claims=claims), manifests)
    assert table.splitlines()[:4] == ["| claim | hop | chain |", "|---|---|---|",
                                      "| up | reproduced: +0.200 [0.200, 0.200] | reproduced: +0.200 [0.200, 0.200] |",
                                      "| flat | reproduced: +0.200 [0.200, 0.200] | not reproduced: +0.004 [0.004, "
                                      "0.004] |"]
    assert index.by_task_cell({"verdict": "not testable here", "answer": None}) == "not testable here"
    assert index.by_task_cell({"verdict": "v", "answer": {**ans(-0.1, 0.06), "ci_lo": -0.2, "ci_hi": 0.05}}) == (
        "v: -0.100 [-0.200, 0.050]")
    assert table.splitlines()[-1] == ("The tasks agree (same verdict, the unadjusted intervals on the same side of 0, "
                                      "or both covering it) on up; they share the verdict but not the direction on "
                                      "none; they differ in verdict on flat.")
    assert index.by_task_table(index.Config(claims={"solo": claims["solo"]}), manifests) == ""
    # the pilot's zhang_edge: underpowered on both tasks, but hop's interval covers 0 and chain's lies below it
    # (hop at 8 seeds, chain at 5, as in the confirmatory run: one verdict, its seed count aside)
    split = {"split_hop": {**ans(0.094, 0.08), "ci_lo": -0.078, "ci_hi": 0.266, "seeds": 8, "df": 7},
             "split_chain": {**ans(-0.161, 0.06), "ci_lo": -0.246, "ci_hi": -0.076}}
    claims = {"split": index.Claim("P", "c", "passk", "split_hop", 1, tasks={"chain": "split_chain"})}
    rows = index.judge_all(claims, {"passk": split}, 0.01)
    assert [r["verdict"] for r in rows.values()] == ["underpowered at 8 seeds", "underpowered at 5 seeds"]
    manifests = [{"study": "passk", "answers": [{"pair": k, **a} for k, a in split.items()]}]
    line = index.by_task_table(index.Config(claims=claims), manifests).splitlines()[-1]
    assert line.endswith("on no claim; they share the verdict but not the direction on split; they differ in verdict "
                         "on none.")
    assert [index.direction(a) for a in split.values()] == [0, -1] and index.direction(None) == 0


def test_the_index_says_how_many_seeds_each_primary_needs_for_the_target_mde():
    def ans(se, v_run, seeds=5):
        return {"a": 0.5, "b": 0.55, "effect": 0.05, "ci_lo": 0.0, "ci_hi": 0.1, "se": se, "df": seeds - 1,
                "p": 0.1, "mde": stats.mde(se, seeds - 1), "seeds": seeds, "problems": 300, "constant": None,
                "se_run": v_run ** 0.5, "run_sd": (v_run * seeds) ** 0.5}

    # se 0.03 of which the run term 0.0008 (test_stats: 22 seeds reach 0.05); se 0.01: mde 0.037 already
    assert index.seeds_text(ans(0.03, 0.0008), 0.05) == "0.112 (5); 0.05: 22 seeds"
    assert index.seeds_text(ans(0.01, 0.00006), 0.05) == "0.0372 (5), ≤ 0.05"
    assert index.seeds_text(ans(0.03, 0.0005), 0.05) == (
        "0.112 (5); 0.05: not by seeds alone (the test set's problem term)")
    assert index.seeds_text(ans(0.03, 0.0, seeds=1), 0.05).endswith("0.05: one seed measures no run term")
    assert index.seeds_text(None, 0.05) == "—" and index.seeds_text({**ans(0, 0), "mde": None}, 0.05) == "—"
    old = ans(0.03, 0.0008)
    del old["se_run"], old["run_sd"]
    assert index.seeds_text(old, 0.05) == "0.112 (5); run spread not recorded"
    assert index.seeds_text({**old, "mde": 0.04}, 0.05) == "0.04 (5), ≤ 0.05"  # reached needs no run spread
    # a claim's own target overrides studies.mde_target; the exact toy's claim has no MDE
    claims = {"acc": index.Claim("P", "c", "passk", "acc", 1), "len": index.Claim("P", "c", "passk", "len", 1,
                                                                               ceiling=None, mde_target=0.1)}
    manifests = [{"study": "passk", "answers": [{"pair": "acc", **ans(0.03, 0.0008)},
                                                {"pair": "len", **ans(0.03, 0.0008)}]}]
    rows = index.claims_rows(index.Config(claims=claims), manifests, None)
    assert [r[index.SEEDS_COLUMN] for r in rows] == ["0.112 (5); 0.05: 22 seeds", "0.112 (5); 0.1: 6 seeds", "—"]
    with pytest.raises(ConfigError, match="studies.mde_target"):
        index.load_config({"studies": {"mde_target": "many"}})
    with pytest.raises(ConfigError, match="studies.mde_target"):
        index.Config(mde_target=0)
    with pytest.raises(ConfigError, match="mde_target: -1 must be > 0"):
        index.Claim("P", "c", "passk", "acc", 1, mde_target=-1)


def sps_t_sf(x: float, df: int) -> float:
    from scipy import stats as sps

    return float(sps.t.sf(x, df))


def test_slug_and_pair_names():
    assert slug("random, μ = 2") == "random_mu_2" and slug("orm + guard") == "orm_guard"
    assert pair_name("base", "GRPO", "edge", "k001") == "grpo_vs_base_edge_k001"
    with pytest.raises(ValueError, match="ASCII"):
        slug("—")


def test_band_is_a_t_interval_over_seeds():
    # five seeds at 0, 1, 2, 3, 4 at every step: mean 2, sd 1.5811, se 0.7071, t_0.975 with 4 df = 2.7764:
    # [0.0367, 3.9633]; where a seed stops (step 4: three seeds 0, 1, 2) the interval uses those left
    series = [pd.Series([float(v)] * (3 if v > 2 else 4), index=[1, 2, 3, 4][: 3 if v > 2 else 4]) for v in range(5)]
    st = figures.band_stats(series)
    assert st["mean"].tolist() == [2.0] * 3 + [1.0]
    assert st.loc[1, "lo"] == pytest.approx(0.0367, abs=1e-4) and st.loc[1, "hi"] == pytest.approx(3.9633, abs=1e-4)
    assert st.loc[4, "n"] == 3 and st.loc[4, "hi"] == pytest.approx(1 + 4.3027 * (1 / 3 ** 0.5), abs=1e-3)


def test_arms_pair_by_seed_and_problem(tmp_path):
    keys = ["p0", "p1", "p2", "p3"]
    for name, right in (("b", [1, 0, 0, 0]), ("s0", [1, 1, 0, 0]), ("s1", [1, 1, 1, 0]), ("t1", [0, 0, 0, 0]),
                        ("t2", [1, 1, 1, 1])):
        write_text(tmp_path / f"{name}.csv", outcomes_csv([{"set": "edge", "problem": k, "k": 3, "correct": c,
                                                             "correct_answer": 1, "outcome": "x"}
                                                            for k, c in zip(keys, right)]))
    base = answers.arm_outcomes(tmp_path, "base", {None: "b.csv"}, "edge")
    arm = answers.arm_outcomes(tmp_path, "arm", {0: "s0.csv", 1: "s1.csv"}, "edge")
    other = answers.arm_outcomes(tmp_path, "other", {1: "t1.csv", 2: "t2.csv"}, "edge")
    xa, xb = answers.paired_matrices(base, arm)  # the seedless base repeats for both seeds
    assert xa.tolist() == [[1, 0, 0, 0]] * 2 and xb.tolist() == [[1, 1, 0, 0], [1, 1, 1, 0]]
    xa, xb = answers.paired_matrices(arm, other)  # only seed 1 is shared
    assert xa.tolist() == [[1, 1, 1, 0]] and xb.tolist() == [[0, 0, 0, 0]]
    assert answers.compare(base, arm).effect == pytest.approx(0.375)  # (0.5 + 0.75) / 2 - 0.25
    lone = answers.arm_outcomes(tmp_path, "lone", {5: "t2.csv"}, "edge")
    with pytest.raises(ValueError, match="share no seed"):
        answers.paired_matrices(arm, lone)
    with pytest.raises(KeyError, match="no outcomes on set 'in'"):
        answers.arm_outcomes(tmp_path, "x", {0: "s0.csv"}, "in")
    write_text(tmp_path / "odd.csv", outcomes_csv([{"set": "edge", "problem": k, "k": 3, "correct": 1,
                                                    "correct_answer": 1, "outcome": "x"} for k in reversed(keys)]))
    with pytest.raises(ValueError, match="problems differ"):
        answers.arm_outcomes(tmp_path, "x", {0: "s0.csv", 1: "odd.csv"}, "edge")


def test_index_reads_the_exact_stage_metrics_file():
    from reasonrl.studies import exact

    assert index.EXACT_METRICS == exact.METRICS


def test_headline_pools_bases_as_seeds_and_answers_per_base(studies):
    # every run is 20 problems (0.1 of 200) above its own base, greedy: the pooled gain is exactly 0.1, and
    # on those 20 problems sampled() moves from 0.25 to 0.75, so the sampled gain is 0.1 * 0.5 = 0.05
    greedy = read_json(studies / paths.answer_path("headline_hop", "headline_vs_base_hop_edge_correct"))
    assert (greedy["a"], greedy["b"], greedy["effect"]) == pytest.approx((0.5, 0.6, 0.1))
    assert greedy["seeds"] == 3 and greedy["problems"] == PROBLEMS and greedy["ci_lo"] > 0
    samp = read_json(studies / paths.answer_path("headline_hop", "headline_vs_base_hop_edge_sampled"))
    assert samp["effect"] == pytest.approx(0.05) and samp["a"] == pytest.approx(0.5)  # bases 0.45, 0.5, 0.55
    assert sorted(p.name for p in (studies / "reports/headline_hop/answers").iterdir()) == [
        "headline_vs_base_hop_edge_correct.json",
        "headline_vs_base_hop_edge_sampled.json"]  # per-base answers: manifest only; the chain runs: their own report
    m = read_json(studies / paths.manifest_path("headline_hop"))
    assert m["title"] == "Headline: GRPO from 3 hop bases" and m["runs"][-1] == "hl_c from base cot_c"
    per_base = [a for a in m["answers"] if a["pair"].startswith("hl_")]
    assert [a["pair"] for a in per_base[:3]] == ["hl_a_vs_base_cot_edge_sampled", "hl_b_vs_base_cot_b_edge_sampled",
                                                 "hl_c_vs_base_cot_c_edge_sampled"]
    assert all(a["effect"] == pytest.approx(0.05) and a["seeds"] == 1 for a in per_base[:3])
    assert "on every base" in m["answer"]
    metrics = read_json(studies / paths.study_metrics_path("headline_hop"))
    assert metrics["hop_edge_correct"]["per_base_gain"] == pytest.approx([0.1, 0.1, 0.1])
    assert list(metrics) == ["hop_edge_sampled", "hop_edge_correct"]


def test_each_task_has_its_own_headline_report(studies):
    # the chain runs (bases 0.30 and 0.50, each run 10 problems below its base) pool without the hop runs
    greedy = read_json(studies / paths.answer_path("headline_chain", "headline_vs_base_chain_edge_correct"))
    assert (greedy["a"], greedy["b"], greedy["effect"]) == pytest.approx((0.4, 0.35, -0.05))
    assert greedy["seeds"] == 2
    assert sorted(p.name for p in (studies / "reports/headline_chain/answers").iterdir()) == [
        "headline_vs_base_chain_edge_correct.json", "headline_vs_base_chain_edge_sampled.json"]
    m = read_json(studies / paths.manifest_path("headline_chain"))
    assert m["title"] == "Headline: GRPO from 2 chain bases"
    assert m["runs"] == ["hlc_a from base ch_a", "hlc_b from base ch_b"]
    assert headline.inputs(CONFIGS["headline_chain"]) == [
        "reports/headline/rl/hlc_a.json", "reports/headline/eval/rl_hlc_a.json",
        "reports/headline/eval/outcomes_rl_hlc_a.csv", "reports/eval/chain/outcomes_base_ch_a.csv",
        "reports/headline/rl/hlc_b.json", "reports/headline/eval/rl_hlc_b.json",
        "reports/headline/eval/outcomes_rl_hlc_b.csv", "reports/eval/chain/outcomes_base_ch_b.csv"]


def test_every_task_of_the_headline_is_a_study_of_the_index():
    from reasonrl.studies.claims import STUDIES as INDEXED

    assert [s for s in INDEXED if s.startswith("headline")] == [headline.study(t) for t in headline.TASKS]
    dvc = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    stages = {f"report_{headline.study(t)}" for t in headline.TASKS}
    assert {n for n in dvc if n.startswith("report_headline")} == stages


def test_the_headline_stage_entry_takes_its_task_from_its_argument(studies, tmp_path, capsys):
    """run_report as stages/report_headline.py calls it: params read from a file, the task from the stage's
    argument; it rewrites the chain report the fixture built, byte for byte."""
    from reasonrl.studies.stage import run_report

    cfg = CONFIGS["headline_chain"]
    params = {"rl": {"task": "hop"}, "bases": {b: {"task": TASKS[f"base_{b}"]} for b in cfg.runs.values()},
              "studies": {"headline": {"runs": cfg.runs, "sets": cfg.sets}}}
    write_text(tmp_path / "params.yaml", yaml.safe_dump(params))
    answers = studies / paths.answers_dir("headline_chain")
    before = {p.name: p.read_bytes() for p in answers.iterdir()}
    run_report(headline, tmp_path / "params.yaml", studies, task="chain")
    assert {p.name: p.read_bytes() for p in answers.iterdir()} == before
    assert "headline: 5 outputs written" in capsys.readouterr().err


def test_headline_config_checks():
    from reasonrl.config import ConfigError

    with pytest.raises(ConfigError, match="runs"):
        headline.Config(runs={"a": "cot", "b": "cot"})
    with pytest.raises(ConfigError, match="measure"):
        headline.Config(runs={"a": "cot"}, measures=["greedy"])
    with pytest.raises(ConfigError, match="set"):
        headline.Config(runs={"a": "cot"}, sets=["n99"])
    with pytest.raises(ConfigError, match="^task: 'maze' is not one of"):
        headline.Config(runs={"a": "cot"}, task="maze")
    with pytest.raises(ConfigError, match="report_headline.py.*expects <task>"):
        headline.inputs(headline.Config(runs={"a": "cot"}, tasks={"base_cot": "hop"}))
    with pytest.raises(ConfigError, match="^runs: no headline run starts from a chain base"):
        headline.inputs(headline.Config(runs={"a": "cot"}, tasks={"base_cot": "hop"}, task="chain"))


def test_wrong_length_skips_steps_that_sampled_no_wrong_response():
    from types import SimpleNamespace

    # 20 steps; at steps 5, 19 and 20 every sample was correct, and the loop recorded length 0 there
    true = [0.5] * 20
    lengths = [float(6 + s % 3) for s in range(1, 21)]
    for s in (5, 19, 20):
        true[s - 1], lengths[s - 1] = 1.0, 0.0
    run = SimpleNamespace(history=pd.DataFrame({"reward/true": true, "rollout/length_wrong": lengths}))
    masked = ablations.wrong_length(run)
    assert masked.isna().tolist() == [s in (5, 19, 20) for s in range(1, 21)]
    # the answer's value: the last 10% (2) of the 17 measured steps, 17 and 18: lengths 8 and 6
    value = dict((name, f) for name, _, f in ablations.CURVE_ANSWERS)["wrong_length"]
    assert value(run) == pytest.approx((8 + 6) / 2)


@pytest.mark.parametrize("key, value, message", [
    ("study", "nosuch", "studies.claims.bad.study: 'nosuch' is not one of"),
    ("expect", 2, "studies.claims.bad.expect: 2 must be \\+1 \\(b > a\\) or -1 \\(a > b\\)"),
    ("primary", "", "studies.claims.bad.primary: name the answer file"),
    ("nosuch", 1, "studies.claims.bad.nosuch: unknown key"),
])
def test_a_bad_claim_fails_naming_its_key(key, value, message):
    from reasonrl.config import ConfigError

    claim = {"paper": "p", "claim": "c", "study": "passk", "primary": "x", "expect": 1, key: value}
    with pytest.raises(ConfigError, match=message):
        index.load_config({"studies": {"claims": {"bad": claim}}})


def test_the_claims_in_params_name_answers_the_committed_reports_have():
    # the claims report_index last ran with (dvc.lock): the committed reports answer those; a claim renamed
    # since is answered by the next `reasonrl repro`
    from test_readme import locked_params

    params = locked_params("report_index")
    cfg = load_config(index, params)
    assert len(cfg.claims) >= 9 and cfg.equivalence == params["studies"]["equivalence"]
    current = yaml.safe_load((ROOT / "params.yaml").read_text())
    for cid, c in cfg.claims.items():
        for task, primary in c.primaries().items():
            if (ROOT / paths.answer_path(c.study, primary)).exists():
                continue
            # the study wrote none and said why (newsol: fewer than two seeds with unsolved problems)
            manifest = ROOT / paths.manifest_path(c.study)
            if read_json(manifest).get("not_computed", {}).get(primary):
                continue
            # a claim pre-registered for the next run (zhang_new: its second draws) has no answer yet, and may
            # not: only while its study's inputs under today's params are not all in the committed reports
            module = STUDIES[c.study]
            unbuilt = [p for p in module.inputs(load_config(module, current)) if not (ROOT / p).exists()]
            assert unbuilt, f"{cid} ({task}): report_{c.study}'s inputs are all committed, yet {primary} has no answer"


def test_a_study_paragraph_is_cut_after_its_last_whole_clause_within_the_word_limit(monkeypatch):
    monkeypatch.setattr(index, "PARAGRAPH_WORDS", 8)
    assert index.paragraph({"summary": "", "answer": "one two three four five six seven eight"}) == (
        "one two three four five six seven eight")
    # clauses of 3 words: two fit with the ellipsis (7 words), a third would make 10
    assert index.paragraph({"answer": "a b c; d e f; g h i; j k l"}) == "a b c; d e f …"
    assert index.paragraph({"summary": "x y; z", "answer": "a b c; d e f; g h i"}) == "x y; z"
    # a first clause longer than the limit: cut by words
    assert index.paragraph({"answer": "a b c d e f g h i j"}) == "a b c d e f g …"


def test_the_front_page_limits_name_what_breaks_them(monkeypatch):
    assert index.check_limits("# t\n\n| a | b |\n") == []
    long_cell = "| " + "x" * 201 + " | b |"
    assert index.check_limits(f"# t\n{long_cell}\n") == ["line 2: a cell of 201 characters > 200",
                                                         "line 2: a table row of 209 bytes > 200"]
    long_row = "| " + " | ".join(["x" * 50] * 4) + " |"
    assert index.check_limits(f"# t\n{long_row}\n") == ["line 2: a table row of 213 bytes > 200"]
    assert index.check_limits("y" * 601) == ["line 1: 601 characters > 600"]
    monkeypatch.setitem(index.LIMITS, "characters", 10)
    assert index.check_limits("z" * 11) == ["11 characters > 10"]


def test_short_captions_keep_the_first_clause():
    assert index.short_caption("pass@k against k (log scale); pass@1 0.5 / 0.9.") == "pass@k against k (log scale)."
    assert index.short_caption("Reward (mean; centred mean); at the end 0.9.") == "Reward (mean; centred mean)."


def test_ablations_compare_the_measure_they_name(studies, tmp_path):
    """measure: sampled compares the runs' sampled shares: sampled() is 0.25 + 0.5 x the greedy accuracy, so the
    clip pair's greedy 0.05 becomes 0.025 and clip-higher's accuracy 0.25 + 0.5 x 0.65 = 0.575."""
    import dataclasses
    import shutil

    root = tmp_path / "copy"
    shutil.copytree(studies, root)
    ablations.report(dataclasses.replace(CONFIGS["ablations"], measure="sampled"), root)
    sym = read_json(root / "reports/ablations/answers/clip_clip_higher_vs_mu_2_symmetric.json")
    assert sym["effect"] == pytest.approx(0.025)
    assert read_json(root / "reports/metrics/ablations.json")["clip"]["clip-higher"]["acc"] == pytest.approx(0.575)
    assert "verified sampled accuracy (pass@1 at T = 1) on the edge set" in (
        root / "reports/ablations/table.md").read_text()


def test_no_detectable_difference_after_holm_cites_the_adjusted_interval_that_covers_0():
    # the confirmatory run's drgrpo_std: the unadjusted interval excludes 0, the Holm-adjusted one covers it;
    # the reason cites the adjusted one, or it reads as a contradiction of the table's interval beside it
    from scipy import stats as sps

    def ans(effect, se):
        return {"a": 0.88, "b": 0.88 + effect, "effect": effect, "ci_lo": effect - 2.7764 * se,
                "ci_hi": effect + 2.7764 * se, "se": se, "df": 4, "p": 0.01, "mde": 0.0072, "seeds": 5,
                "problems": 1000, "constant": None}

    # std: -0.006, se 0.0018: [-0.0110, -0.0010] at 95%, excluding 0; two wide comparisons with larger p (an
    # effect of 0, se 0.1) put std first in Holm's order, at the level 1 - 0.05 / 3
    answers = {"std": {**ans(-0.006, 0.0018), "mde": 0.0067}, "w1": ans(0.0, 0.1), "w2": ans(0.0, 0.1)}
    claims = {k: index.Claim("P", "c", "ablations", k, 1) for k in answers}
    row = index.judge_all(claims, {"ablations": answers}, 0.01)["std", "hop"]
    assert row["level"] == pytest.approx(1 - 0.05 / 3)
    half = sps.t.ppf(1 - 0.05 / 3 / 2, 4) * 0.0018  # t(0.99167, 4) = 3.961: [-0.0131, 0.0011], covering 0
    assert half == pytest.approx(0.00713, abs=1e-5)
    assert row["verdict"] == "not reproduced" and row["why"] == (
        "no detectable difference after Holm's adjustment (-0.006 [-0.013, 0.001]; unadjusted MDE 0.007)")


def test_a_hacking_gap_the_same_on_every_seed_is_not_testable_not_equivalent():
    # a length-penalised arm's net gap is 0 on every seed by construction: no variance, no "equivalent"
    flat = {"lo": 0.0, "hi": 0.0, "net": 0.0, "mde": None, "penalty": 0.5, "length": 10.0}
    moving = {"lo": -0.496, "hi": -0.382, "net": -0.439, "mde": None, "penalty": 0.0, "length": 9.0}
    assert hacking.gap_text("true + len_pen", flat, 0.01) == ("constant", "true + len_pen +0.000 [0.000, 0.000]")
    assert hacking.gap_text("prm", moving, 0.01)[0] == "down"
    # the confirmatory run's true + len_pen: 0 up to the history's 6 significant digits
    residue = {**flat, "lo": -3.939e-07, "hi": 1.439e-07, "net": -1.25e-07}
    assert hacking.gap_text("true + len_pen", residue, 0.01)[0] == "constant"
    # a gap the same on every seed but not 0 (a verifier fully hacked on every seed) keeps its sign
    hacked = {**flat, "lo": 1.0, "hi": 1.0, "net": 1.0, "penalty": 0.0}
    assert hacking.gap_text("orm", hacked, 0.01)[0] == "up"
    small = {**moving, "lo": -0.004, "hi": 0.003, "net": -0.0005}  # varies, inside ±0.01: equivalent
    assert hacking.gap_text("orm", small, 0.01)[0] == "equivalent"
