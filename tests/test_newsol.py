"""The per-problem 'new solutions' measure (reasonrl.studies.newsol) on hand-built count tables, with the
numbers written out, and its place in the passk report, the passk@ stages' config and the claims."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from scipy import stats as sps

from reasonrl.config import ConfigError, from_dict
from reasonrl.io import read_json, write_json
from reasonrl.studies import PasskModel, claims, draw_seed, index, newsol, passk, passk_eval
from reasonrl.studies.paths import answer_path

ROOT = Path(__file__).resolve().parents[1]
Shares = newsol.Shares

# Three seeds of 8 problems: (the base's second draw, which picks U; the RL model; the base's first draw),
# verified counts out of N = 16
SEEDS = [
    # U = problems 0-3 (|U| 4); RL solves 0, 1, 3 (3/4); the base's first draw solves 2 (1/4): d = 0.5
    ([0, 0, 0, 0, 5, 5, 5, 5], [3, 1, 0, 2, 9, 9, 9, 9], [0, 0, 1, 0, 4, 4, 4, 4]),
    # U = problems 0, 1, 4, 5 (|U| 4); RL solves 0, 4 (2/4); the base's first draw solves 5 (1/4): d = 0.25
    ([0, 0, 7, 7, 0, 0, 7, 7], [1, 0, 0, 0, 16, 0, 0, 0], [0, 0, 9, 9, 0, 2, 9, 9]),
    # U = problems 6, 7 (|U| 2); RL solves both (2/2), the base's first draw neither (0/2): d = 1.0
    ([1, 1, 1, 1, 1, 1, 0, 0], [0, 0, 0, 0, 0, 0, 1, 4], [1, 1, 1, 1, 1, 1, 0, 0]),
]


def test_each_seed_reads_the_problems_the_second_draw_never_solved():
    assert [newsol.seed_shares(*s) for s in SEEDS] == [Shares(4, 0.75, 0.25), Shares(4, 0.5, 0.25),
                                                        Shares(2, 1.0, 0.0)]
    # U is the second draw's alone: a problem the first draw solves stays in U, one the second draw solves leaves it
    assert newsol.seed_shares([0, 0], [0, 0], [5, 0]) == Shares(2, 0.0, 0.5)
    assert newsol.seed_shares([0, 3], [0, 1], [5, 0]) == Shares(1, 0.0, 1.0)
    with pytest.raises(ValueError, match="one per problem"):
        newsol.seed_shares([0, 0], [1], [1, 1])


def test_the_effect_is_the_mean_over_seeds_with_a_t_interval_whose_unit_is_the_seed():
    cmp = newsol.compare([newsol.seed_shares(*s) for s in SEEDS])
    # d = 0.5, 0.25, 1.0: mean 0.583333, sd 0.381881, se = sd / sqrt(3) = 0.220479, t_0.975,2 = 4.302653,
    # half-width 0.948645: [-0.365312, 1.531979]
    assert scipy_t(2) == pytest.approx(4.302653, abs=1e-6)
    assert (cmp.a, cmp.b, cmp.effect) == pytest.approx((0.5 / 3, 0.75, 0.583333), abs=1e-6)
    assert cmp.se == pytest.approx(0.220479, abs=1e-6) and cmp.df == 2
    assert (cmp.ci_lo, cmp.ci_hi) == pytest.approx((-0.365312, 1.531979), abs=1e-6)
    assert (cmp.seeds, cmp.problems) == (3, 10)  # problems: |U| summed over the seeds
    d = [0.5, 0.25, 1.0]
    half = scipy_t(2) * sps.tstd(d) / math.sqrt(3)
    assert (cmp.ci_lo, cmp.ci_hi) == pytest.approx((sum(d) / 3 - half, sum(d) / 3 + half), abs=1e-12)
    assert cmp.p == pytest.approx(sps.ttest_1samp(d, 0).pvalue, abs=1e-12)


def scipy_t(df: int) -> float:
    return float(sps.t.ppf(0.975, df))


def test_a_lucky_draw_of_the_base_cancels_a_lucky_rl_model():
    # RL solves half of U or more on every seed, but so does the base asked again: nothing new
    lucky = [([0, 0, 0, 0], [1, 1, 0, 0], [1, 0, 1, 0]),   # 0.5 vs 0.5
             ([0, 0, 0, 0], [1, 1, 1, 0], [1, 1, 0, 0]),   # 0.75 vs 0.5
             ([0, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0])]   # 0.5 vs 0.75
    cmp = newsol.compare([newsol.seed_shares(*s) for s in lucky])
    assert cmp.b == pytest.approx(0.583333, abs=1e-6) and cmp.effect == 0 and cmp.ci_lo < 0 < cmp.ci_hi
    # the same RL model against a base that never solves U again: all of its share counts as new
    unlucky = [(u, rl, [0] * 4) for u, rl, _ in lucky]
    assert newsol.compare([newsol.seed_shares(*s) for s in unlucky]).effect == pytest.approx(0.583333, abs=1e-6)
    # a model that is its base (the same first draw): exactly 0 on every seed, whatever U holds
    same = newsol.compare([newsol.seed_shares(u, base, base) for u, _, base in SEEDS])
    assert same.effect == 0 and same.se == 0


def test_a_seed_whose_second_draw_solved_everything_is_dropped_and_under_two_seeds_none_is_written():
    solved = ([1] * 8, [0] * 8, [0] * 8)
    assert newsol.seed_shares(*solved) is None
    cmp = newsol.compare([newsol.seed_shares(*s) for s in (SEEDS[0], solved, SEEDS[2])])
    assert (cmp.seeds, cmp.problems, cmp.df) == (2, 6, 1)
    assert cmp.effect == pytest.approx((0.5 + 1.0) / 2)  # the mean of the two seeds left, not a 0 for the third
    assert newsol.compare([newsol.seed_shares(*SEEDS[0]), None]) is None


# ----------------------------------------------------------------------------- config and the passk stage

def models(**extra) -> dict[str, PasskModel]:
    out = {"b0": PasskModel("hop", "base_cot"), "b1": PasskModel("hop", "base_cot_s1"),
           "r0": PasskModel("hop", "rl_a"), "r1": PasskModel("hop", "rl_b"),
           "b0_draw2": PasskModel("hop", "base_cot", draw=2, sets=["edge"]),
           "b1_draw2": PasskModel("hop", "base_cot_s1", draw=2, sets=["edge"])}
    return out | extra


def report_config(**extra) -> passk.Config:
    return passk.Config(bases=["base"], models=models(**extra), arms={"base": ["b0", "b1"], "RL": ["r0", "r1"]})


def test_a_second_draw_is_found_by_its_checkpoint_and_is_never_an_arm():
    cfg = report_config()
    assert newsol.second_draws(cfg) == {"b0": "b0_draw2", "b1": "b1_draw2"}
    assert passk.inputs(cfg)[-2:] == ["reports/passk/data/b0_draw2.json", "reports/passk/data/b1_draw2.json"]
    assert "b0_draw2" not in passk.Config(bases=["b0"], models=models()).arms  # default arms: first draws only
    with pytest.raises(ConfigError, match="holds a second draw"):
        newsol.second_draws(passk.Config(bases=["base"], models=models(), arms={"base": ["b0", "b0_draw2"]}))
    with pytest.raises(ConfigError, match="more than one second draw"):
        newsol.second_draws(report_config(again=PasskModel("hop", "base_cot", draw=2)))
    with pytest.raises(ConfigError, match="no base arm's model"):
        newsol.second_draws(report_config(stray=PasskModel("hop", "rl_a", draw=2)))
    with pytest.raises(ConfigError, match="draw"):
        from_dict(PasskModel, {"task": "hop", "model": "x", "draw": 3}, "passk.models.x")


def test_the_second_draw_samples_its_own_sets_from_its_own_generator_seed():
    params = yaml.safe_load((ROOT / "params.yaml").read_text())["passk"]
    cfg = from_dict(passk_eval.Config, {k: params[k] for k in passk_eval.READS}, "passk")
    seed = params["eval"]["seed"]
    assert cfg.plan("base_s0") == (params["sets"], cfg.eval)
    sets, ev = cfg.plan("base_draw2_s0")
    assert sets == ["edge"] and ev.seed == seed + 1000 == draw_seed(seed, 2) and ev.passk_N == cfg.eval.passk_N
    with pytest.raises(ConfigError, match="must be of passk.sets"):
        passk_eval.Config(sets=["edge"], models={"x": PasskModel("hop", "m", draw=2, sets=["far"])})
    # the claim's primary is the file the report writes for GRPO edge against the hop and the chain base, on edge
    report = passk.load_config(yaml.safe_load((ROOT / "params.yaml").read_text()))
    draws = newsol.second_draws(report)
    assert set(draws) == {k for b in report.bases for k in report.arms[b]}
    assert all(report.models[d].sets == ["edge"] for d in draws.values())
    claim = claims.Claim(**yaml.safe_load((ROOT / "params.yaml").read_text())["studies"]["claims"]["zhang_new"])
    assert claim.primaries() == {"hop": "grpo_edge_vs_base_edge_new", "chain": "chain_grpo_edge_vs_chain_base_edge_new"}
    assert claim.expect == 1 and claim.study == "passk"


# ----------------------------------------------------------------------------- the passk report

def passk_file(root: Path, label: str, counts: list[int], sets=("in", "edge", "far"), n: int = 16) -> None:
    curve = {str(k): 0.5 for k in (1, 2, 4, 8, 16)}
    write_json(root / passk.data_path(label), {"model": label, "N": n, "sets": {
        s: {"difficulties": [12], "problems": len(counts), "pass_at_k": curve, "pass_at_k_answer": curve,
            "random_baseline": {k: 0.1 for k in curve}, "distinct_answers": 2.0, "entropy": 0.3,
            "counts": counts, "counts_answer": [min(n, c + 1) if c else 0 for c in counts]} for s in sets}})


def test_the_passk_report_writes_the_measure_as_an_answer_a_claim_can_name(tmp_path):
    cfg = report_config()
    for (u, rl, base), (b, r) in zip(SEEDS, (("b0", "r0"), ("b1", "r1"))):
        passk_file(tmp_path, b, base)
        passk_file(tmp_path, r, rl)
        passk_file(tmp_path, f"{b}_draw2", u, sets=("edge",))
    passk.report(cfg, tmp_path)
    ans = read_json(tmp_path / answer_path("passk", "rl_vs_base_edge_new"))
    # seeds 0 and 1 of SEEDS: d = 0.5 and 0.25, mean 0.375, se = 0.125, t_0.975,1 = 12.706205
    assert (ans["effect"], ans["se"], ans["df"], ans["seeds"], ans["problems"]) == (0.375, 0.125, 1, 2, 8)
    assert ans["ci_lo"] == pytest.approx(0.375 - 12.706205 * 0.125, abs=1e-6)
    assert not (tmp_path / answer_path("passk", "rl_vs_base_in_new")).exists()  # the second draw sampled edge only
    manifest = read_json(tmp_path / "reports/passk/manifest.json")
    entry = next(a for a in manifest["answers"] if a["pair"] == "rl_vs_base_edge_new")
    assert entry["answer_only"] is not None and entry["b_label"] == "RL"
    table = (tmp_path / "reports/passk/table.md").read_text()
    row = next(line for line in table.splitlines() if "answers/rl_vs_base_edge_new.json" in line)
    assert [c.strip() for c in row.split("|")[1:7]] == ["edge", "RL", "base", "4 / 4", "0.75 / 0.5", "0.25 / 0.25"]
    assert "New solutions" in table and "none was" in table
    assert manifest["not_computed"] == {}
    judged = claims.judge_all({"new": claims.Claim("Zhang", "c", "passk", "rl_vs_base_edge_new", 1)},
                              index.answers_by_study([manifest]), 0.01)
    row = judged["new", "hop"]
    assert row["answer"]["effect"] == 0.375 and row["verdict"] == "underpowered at 2 seeds"


def test_a_measure_with_no_answer_says_why_in_the_manifest_and_the_verdict(tmp_path):
    # the second draws solve every problem on both seeds: U is empty, no seed is left, no answer file
    cfg = report_config()
    for (u, rl, base), (b, r) in zip(SEEDS, (("b0", "r0"), ("b1", "r1"))):
        passk_file(tmp_path, b, base)
        passk_file(tmp_path, r, rl)
        passk_file(tmp_path, f"{b}_draw2", [16] * len(u), sets=("edge",))
    passk.report(cfg, tmp_path)
    assert not (tmp_path / answer_path("passk", "rl_vs_base_edge_new")).exists()
    manifest = read_json(tmp_path / "reports/passk/manifest.json")
    why = "fewer than 2 seeds where the base's second draw left a problem unsolved"
    assert manifest["not_computed"] == {"rl_vs_base_edge_new": why}
    judged = claims.judge_all({"new": claims.Claim("Zhang", "c", "passk", "rl_vs_base_edge_new", 1)},
                              index.answers_by_study([manifest]), 0.01)
    row = judged["new", "hop"]
    assert row["answer"] is None and row["verdict"] == "not testable here"
    assert row["why"] == f"its primary comparison passk/rl_vs_base_edge_new was not computed ({why})"
    # a file no study names: the arms are missing from the run
    judged = claims.judge_all({"new": claims.Claim("Zhang", "c", "passk", "other_new", 1)},
                              index.answers_by_study([manifest]), 0.01)
    assert judged["new", "hop"]["why"].endswith("was not computed (no such arms in this run)")
    # a written answer wins over a reason listed for the same file
    manifest["answers"] = [{"pair": "rl_vs_base_edge_new", "effect": 0.5}]
    assert index.answers_by_study([manifest])["passk"]["rl_vs_base_edge_new"] == {"pair": "rl_vs_base_edge_new",
                                                                                "effect": 0.5}


def test_arms_of_a_pair_with_a_reference_of_their_own_are_not_measured_against_the_base(tmp_path):
    # the exposure base and the runs started from it compare with each other (passk.pairs), never with the
    # base whose second draws choose U
    extra = {"e0": PasskModel("hop", "base_exp"), "e1": PasskModel("hop", "base_exp_s1"),
             "f0": PasskModel("hop", "rl_f"), "f1": PasskModel("hop", "rl_g")}
    cfg = passk.Config(bases=["base"], models=models(**extra), pairs=[["exp", "RL far"]],
                       arms={"base": ["b0", "b1"], "RL": ["r0", "r1"], "exp": ["e0", "e1"], "RL far": ["f0", "f1"]})
    for (u, rl, base), (b, r, e, f) in zip(SEEDS, (("b0", "r0", "e0", "f0"), ("b1", "r1", "e1", "f1"))):
        for name, counts in ((b, base), (r, rl), (e, rl), (f, rl)):
            passk_file(tmp_path, name, counts)
        passk_file(tmp_path, f"{b}_draw2", u, sets=("edge",))
    data = {k: read_json(tmp_path / f"reports/passk/data/{k}.json") for k in cfg.models}
    assert [(r.arm, r.base) for r in newsol.results(cfg, data)] == [("RL", "base")]
    # a pair of two RL arms from the base (the chain's answer-only arm and its verified twin) is measured, both
    twin = replace(cfg, pairs=[["RL", "RL far"]])
    assert [(r.arm, r.base) for r in newsol.results(twin, data)] == [("RL", "base"), ("exp", "base"),
                                                                     ("RL far", "base")]


def test_a_model_of_an_arm_samples_every_set():
    with pytest.raises(ConfigError, match=r"models\.r0\.sets: in arm 'RL'"):
        passk.Config(bases=["base"], models=models(r0=PasskModel("hop", "rl_a", sets=["edge"])),
                     arms={"base": ["b0", "b1"], "RL": ["r0", "r1"]})
