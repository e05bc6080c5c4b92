"""The zero and passk studies' per-function numbers on hand-built inputs, without the `studies` fixture of
test_report.py (which reaches these functions only through whole reports, too slowly for mutation testing).
Every expected number below is worked out by hand from the inputs."""

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from reasonrl import stats
from reasonrl.config import ConfigError
from reasonrl.studies import PasskModel, passk, zero
from reasonrl.studies.answers import Answer, answers_table
from reasonrl.studies.runs import Run, evals_frame


def think_run(name: str, seed: int, before: dict, after: dict) -> Run:
    """A zero-study run: two in-training evaluations (step 0: the base, step 80: after RL) with think rate,
    accuracy, conditional accuracies and the think rate and accuracy (`acc_by`, else 0.5) per hop count."""
    evals = []
    for step, e in ((0, before), (80, after)):
        acc_by = e.get("acc_by", {})
        evals.append({"step": step, "think": e["think"], "acc": e["acc"], "acc_think": e.get("acc_think", 0.0),
                      "acc_direct": e.get("acc_direct", 0.0),
                      **({"think_any": e["think_any"]} if "think_any" in e else {}),  # absent: an older evaluation
                      "by_difficulty": {str(k): {"think": v, "acc": acc_by.get(k, 0.5)}
                                        | ({"think_any": 1.0} if "think_any" in e else {})
                                        for k, v in e["by_difficulty"].items()}})
    return Run(name, pd.DataFrame(), evals_frame(evals), {"job": {"seed": seed}, "evals": evals}, None)


A0 = think_run("a0", 0, {"think": 0.0, "acc": 0.2, "acc_direct": 0.2, "by_difficulty": {1: 0.0, 2: 0.1},
                         "acc_by": {1: 0.3, 2: 0.1}},
               {"think": 0.6, "acc": 0.9, "acc_think": 1.0, "acc_direct": 0.75, "by_difficulty": {1: 0.5, 2: 0.7},
                "acc_by": {1: 1.0, 2: 0.8}})
A1 = think_run("a1", 1, {"think": 0.02, "acc": 0.4, "acc_think": 0.5, "acc_direct": 0.3,
                         "by_difficulty": {1: 0.0, 2: 0.0}, "acc_by": {1: 0.5, 2: 0.3}},
               {"think": 1.0, "acc": 0.8, "acc_think": 0.8, "by_difficulty": {1: 0.4, 2: 0.6},
                "acc_by": {1: 0.9, 2: 0.7}})
# a reward control from a's base (seed 0): a random reward barely moves it
C0 = think_run("c0", 0, {"think": 0.0, "acc": 0.2, "acc_direct": 0.2, "by_difficulty": {1: 0.0, 2: 0.1},
                         "acc_by": {1: 0.3, 2: 0.1}},
               {"think": 0.15, "acc": 0.3, "acc_think": 0.5, "acc_direct": 0.25, "by_difficulty": {1: 0.1, 2: 0.2},
                "acc_by": {1: 0.4, 2: 0.2}})
B1 = think_run("b1", 1, {"think": 0.0, "acc": 0.1, "acc_direct": 0.1, "by_difficulty": {1: 0.0, 2: 0.0}},
               {"think": 0.01, "acc": 0.1, "acc_think": 0.0, "acc_direct": 0.1, "by_difficulty": {1: 0.2, 2: 0.1}})
B2 = think_run("b2", 2, {"think": 0.0, "acc": 0.1, "acc_direct": 0.1, "by_difficulty": {1: 0.0, 2: 0.0}},
               {"think": 0.0, "acc": 0.1, "acc_direct": 0.1, "by_difficulty": {1: 0.0, 2: 0.0}})
RUNS = {r.name: r for r in (A0, A1, B1, B2, C0)}


def test_zero_rates_by_difficulty_and_pairing_by_seed():
    assert {k: v.tolist() for k, v in zero.by_difficulty(A0, 0).items()} == {0: [0.0, 0.1]}
    assert {k: v.tolist() for k, v in zero.by_difficulty(A0, -1, "acc").items()} == {0: [1.0, 0.8]}
    assert {k: v.tolist() for k, v in zero.by_difficulty(A1, -1).items()} == {1: [0.4, 0.6]}
    xa, xb = zero.paired_rates([A1, A0], [A0, A1], 0, -1)  # rows in seed order, whatever the run order
    assert xa.tolist() == [[0.0, 0.1], [0.0, 0.0]] and xb.tolist() == [[0.5, 0.7], [0.4, 0.6]]
    xa, xb = zero.paired_rates([A0, A1], [B1, B2], -1, -1)  # only seed 1 is shared
    assert xa.tolist() == [[0.4, 0.6]] and xb.tolist() == [[0.2, 0.1]]
    with pytest.raises(ValueError, match="share no seed"):
        zero.paired_rates([A0], [B1], 0, 0)


def test_zero_profile_leaves_out_conditional_accuracies_without_such_responses():
    # an evaluation without think_any (written before it existed) counted any trace as "think": both that count
    assert zero.profile(A0, 0) == {"think": 0.0, "think_any": 0.0, "acc": 0.2, "acc_think": None, "acc_direct": 0.2,
                                   "by_difficulty": {1: 0.0, 2: 0.1}}
    assert zero.profile(A1, -1) == {"think": 1.0, "think_any": 1.0, "acc": 0.8, "acc_think": 0.8, "acc_direct": None,
                                    "by_difficulty": {1: 0.4, 2: 0.6}}
    assert zero.profile(B1, -1)["acc_think"] == 0.0 and zero.profile(B1, -1)["acc_direct"] == 0.1


def test_zero_profile_reads_the_well_formed_think_rate_and_any_trace_beside_it():
    """A degenerate policy: every response has a trace, only 0.25 of them well-formed. The think rate (and the per-hop
    rates the answers resample) is the well-formed one; any trace sits beside it; with no response lacking a
    trace there is no direct accuracy, though the think rate is below 1."""
    run = think_run("d0", 0, {"think": 0.0, "think_any": 0.0, "acc": 0.2, "acc_direct": 0.2,
                              "by_difficulty": {1: 0.0, 2: 0.0}},
                    {"think": 0.25, "think_any": 1.0, "acc": 0.1, "acc_think": 0.4, "acc_direct": 0.0,
                     "by_difficulty": {1: 0.2, 2: 0.3}})
    after = zero.profile(run, -1)
    assert after["think"] == 0.25 and after["think_any"] == 1.0
    assert after["acc_think"] == 0.4 and after["acc_direct"] is None  # no response without a trace
    assert after["by_difficulty"] == {1: 0.2, 2: 0.3}  # by_difficulty.<k>.think, not .think_any (1.0)
    assert {k: v.tolist() for k, v in zero.by_difficulty(run, -1).items()} == {0: [0.2, 0.3]}
    assert zero.arm_profile([run], -1)["think_any"] == 1.0


def test_zero_arm_profile_averages_over_seeds():
    before = zero.arm_profile([A0, A1], 0)
    assert before["think"] == pytest.approx(0.01) and before["acc"] == pytest.approx(0.3)
    assert before["acc_think"] == 0.5  # only seed 1 has thinking responses before RL
    assert before["acc_direct"] == pytest.approx(0.25)
    assert before["by_difficulty"] == pytest.approx({1: 0.0, 2: 0.05})
    after = zero.arm_profile([A0, A1], -1)
    assert after["acc_direct"] == 0.75 and after["by_difficulty"] == pytest.approx({1: 0.45, 2: 0.65})
    lo, hi = after["by_difficulty_ci"][2]
    # two seeds 0.6 and 0.7: se 0.05, t_0.975 with 1 df = 12.706, so 0.65 +- 0.635: two seeds say little
    assert (lo, hi) == pytest.approx((0.65 - 0.6353, 0.65 + 0.6353), abs=1e-4)
    assert zero.arm_profile([A0, A1], -1)["by_difficulty_ci"] == after["by_difficulty_ci"]  # analytic: the same again
    assert "by_difficulty_ci" not in zero.arm_profile([A0], -1)  # one seed: no interval
    nothing = zero.arm_profile([B2], 0)
    assert nothing["acc_think"] is None


def test_zero_answers_pair_each_arm_with_its_base_and_the_pairs_after_rl():
    cfg = zero.Config(runs={"a": ["a0", "a1"], "b": ["b1", "b2"]}, pairs=[["a", "b"]])
    answers = zero.study_answers(cfg, RUNS)
    # analytic intervals: the same inputs give the same intervals
    assert [x.cmp for x in zero.study_answers(cfg, RUNS)] == [x.cmp for x in answers]
    assert [(x.pair, x.a, x.b) for x in answers[:3]] == [("a_after_vs_before", "a before", "a after"),
                                                         ("b_after_vs_before", "b before", "b after"),
                                                         ("b_vs_a_after", "a after", "b after")]
    # a: after - before = (0.5, 0.6) for seed 0 and (0.4, 0.6) for seed 1: mean 0.525; seed means 0.55 and
    # 0.5, se 0.025 (+ the problem term) with 1 df: the interval covers 0, two seeds cannot exclude it
    assert answers[0].cmp.effect == pytest.approx(0.525) and answers[0].cmp.df == 1
    assert answers[0].cmp.ci_lo < 0 < answers[0].cmp.ci_hi
    # b: (0.2, 0.1) for seed 1 and (0, 0) for seed 2: mean 0.075
    assert answers[1].cmp.effect == pytest.approx(0.075)
    # seed 1 after: b (0.2, 0.1) - a (0.4, 0.6) = -0.35
    assert answers[2].cmp.effect == pytest.approx(-0.35) and answers[2].cmp.seeds == 1
    # the accuracy per hop count: a's after - before = (0.7, 0.7) for seed 0 and (0.4, 0.4) for seed 1
    assert [x.pair for x in answers[3:]] == ["a_accuracy_after_vs_before", "b_accuracy_after_vs_before",
                                             "b_vs_a_after_accuracy"]
    assert answers[3].cmp.effect == pytest.approx(0.55) and answers[4].cmp.effect == pytest.approx(0.0)
    assert answers[5].cmp.effect == pytest.approx(-0.3)  # b after (0.5, 0.5) against a after (0.9, 0.7): seed 1
    assert zero.study_answers(cfg, RUNS, ("think",)) == answers[:3]


def test_zero_reward_controls_against_their_base_before_and_the_true_reward_after():
    cfg = zero.Config(runs={"a": ["a0", "a1"]}, controls={"a": {"random": "c0"}})
    assert zero.arms_of(cfg) == {"a": ["a0", "a1"], "a with random reward": ["c0"]}
    assert zero.all_runs(cfg) == ["a0", "a1", "c0"]
    answers = zero.study_answers(cfg, RUNS)
    assert [(x.pair, x.a, x.b) for x in answers] == [
        ("a_after_vs_before", "a before", "a after"),
        ("a_with_random_reward_after_vs_before", "a with random reward before", "a with random reward after"),
        ("a_with_random_reward_vs_a_after", "a after", "a with random reward after"),
        ("a_accuracy_after_vs_before", "a before", "a after"),
        ("a_with_random_reward_accuracy_after_vs_before", "a with random reward before", "a with random reward after"),
        ("a_with_random_reward_vs_a_after_accuracy", "a after", "a with random reward after")]
    # think: the control's (0.1, 0.2) - (0.0, 0.1) = 0.1; against a after on seed 0: (0.1, 0.2) - (0.5, 0.7)
    assert [x.cmp.effect for x in answers[1:3]] == pytest.approx([0.1, -0.45])
    # accuracy: (0.4, 0.2) - (0.3, 0.1) = 0.1; against a after on seed 0: (0.4, 0.2) - (1.0, 0.8) = -0.6
    assert [x.cmp.effect for x in answers[4:]] == pytest.approx([0.1, -0.6])
    assert answers[2].cmp.seeds == 1 and zero.outputs(cfg)[3] == "reports/zero/rewards.png"
    assert "reports/zero/rewards.png" not in zero.outputs(zero.Config(runs={"a": ["a0"]}))
    for controls, what in (({"x": {"random": "c0"}}, "not an arm"), ({"a": {}}, "names no reward")):
        with pytest.raises(ConfigError, match=what):
            zero.Config(runs={"a": ["a0"]}, controls=controls)


def test_zero_table_and_answer_sentence():
    cfg = zero.Config(runs={"a": ["a0", "a1"], "b": ["b1", "b2"]}, present=0.01, rise=0.05)
    prof = {b: {"before": zero.arm_profile([RUNS[r] for r in rs], 0),
                "after": zero.arm_profile([RUNS[r] for r in rs], -1)} for b, rs in cfg.runs.items()}
    think = zero.study_answers(cfg, RUNS, ("think",))
    rows = zero.table_rows(cfg, prof, zero.own_change(think))
    assert rows[0]["base"] == "a" and rows[0]["think before"] == pytest.approx(0.01)
    assert rows[0]["think after"] == pytest.approx(0.8) and rows[0]["accuracy after"] == pytest.approx(0.85)
    assert rows[0]["acc. thinking before → after"] == "0.500 → 0.900"
    assert rows[0]["acc. direct before → after"] == "0.250 → 0.750"
    # two seeds that disagree: a's think rate rises 1.0% -> 80.0% on average, but its interval over the seeds
    # (+0.525 [-0.428, 1.478], printed cut at 1) covers 0, so it neither creates nor selects: no direction word
    assert rows[0]["does RL create or select thinking?"] == (
        "no detectable difference: think rate 1.0% → 80.0%, +0.525 [-0.428, 1.000], MDE 1.056")
    assert rows[1]["does RL create or select thinking?"] == (
        "no detectable difference: think rate 0.0% → 0.5%, +0.075 [-0.878, 1.000], MDE 1.056")
    assert rows[1]["acc. thinking before → after"] == "n/a → 0.000"
    text = zero.answer(cfg, prof, think)
    assert text == ("no detectable difference in a (1.0% → 80.0%, +0.525 [-0.428, 1.000], MDE 1.056), b (0.0% → "
                    "0.5%, +0.075 [-0.878, 1.000], MDE 1.056). Think rate: no detectable difference between a "
                    "before and a after (effect +0.525 [-0.428, 1.000], MDE 1.056); no detectable difference "
                    "between b before and b after (effect +0.075 [-0.878, 1.000], MDE 1.056).")
    assert zero.fmt(None) == "n/a" and zero.fmt(0.12345) == "0.123"


# ----------------------------------------------------------------------------- passk

def passk_data(model: str, counts: dict[str, list[int]], N: int = 4, distinct: float = 1.0) -> dict:
    """A passk@ stage's output: N samples per problem, the correct counts per set; pass@k for k = 1, 2, 4."""
    sets = {}
    for s, cs in counts.items():
        curve = {str(k): float(np.mean([passk.pass_at_k(N, c, k) for c in cs])) for k in (1, 2, 4)}
        sets[s] = {"counts": cs, "counts_answer": [N] * len(cs), "pass_at_k": curve,
                   "random_baseline": {"1": 0.1, "2": 0.19, "4": 0.34},
                   "distinct_answers": distinct, "entropy": distinct / 10, "difficulties": [8], "problems": len(cs)}
    return {"N": N, "model": model, "sets": sets}


# set "hard": the base solves problem 2 once in 4 samples; the RL seeds are surer on 0 and 1 but never solve 2
DATA = {"base": passk_data("base_cot", {"hard": [2, 2, 1, 0], "easy": [4, 4, 4, 4]}, distinct=2.0),
        "rl_0": passk_data("rl_a", {"hard": [4, 4, 0, 0], "easy": [4, 4, 4, 4]}, distinct=1.0),
        "rl_1": passk_data("rl_b", {"hard": [4, 3, 0, 0], "easy": [4, 4, 4, 3]}, distinct=1.5)}
CFG = passk.Config(models={k: PasskModel("hop", d["model"]) for k, d in DATA.items()},
                   arms={"base": ["base"], "RL": ["rl_0", "rl_1"]})


def test_passk_arm_mean():
    assert passk.arm_mean(CFG, DATA, "RL", "hard", "distinct_answers") == 1.25
    assert passk.arm_mean(CFG, DATA, "base", "easy", "entropy") == 0.2


def test_passk_guess_reads_the_stage_values_before_the_pass_at_1():
    """The passk@ stage's per-problem averages win (hop edge: rings of 15 and 16, N = 256: (15 + 16) / 2 = 15.5
    distinct, (ln 15 + ln 16) / 2 = 2.7403 nats); a file without them falls back on n = 1 / the guess's mean pass@1,
    exact for one n (chain, 7 digits, N = 2: 7 (1 - 36/49) = 13/7 = 1.857; ln 7 = 1.9459)."""
    g = (1 / 15 + 1 / 16) / 2
    both = {"random_baseline": {"1": g}, "guess_distinct": 15.5, "guess_answer_entropy": 2.7403}
    assert passk.guess(both, 256) == (15.5, 2.7403)
    assert passk.guess({"random_baseline": {"1": 1 / 7}}, 2) == pytest.approx((13 / 7, math.log(7)))


def test_passk_comparisons_pair_the_base_with_every_seed():
    cmps = passk.comparisons(CFG, DATA, "hard", [1, 4])
    assert list(cmps) == ["RL"] and [x.pair for x in cmps["RL"]] == ["rl_vs_base_hard_k001", "rl_vs_base_hard_k004"]
    # pass@1 per problem: base (0.5, 0.5, 0.25, 0); seed 0 (1, 1, 0, 0), seed 1 (1, 0.75, 0, 0)
    # differences: seed 0 (0.5, 0.5, -0.25, 0), seed 1 (0.5, 0.25, -0.25, 0): mean 1.25 / 8 = 0.15625
    k1 = cmps["RL"][0].cmp
    assert (k1.a, k1.b, k1.effect) == pytest.approx((0.3125, 0.46875, 0.15625))
    # pass@4: base (1, 1, 1, 0), both seeds (1, 1, 0, 0): -0.25 on every seed
    k4 = cmps["RL"][1].cmp
    assert k4.effect == pytest.approx(-0.25) and (k4.seeds, k4.problems) == (2, 4)
    assert cmps["RL"][0].a == "base pass@1" and cmps["RL"][1].b == "RL pass@4"


def answer_ends(cfg, data, sets):
    """The answer-only intervals the report passes to table_rows: at the curve's first and last k."""
    out = {}
    for s in sets:
        ks = passk.curve(passk.base_data(cfg, data), s)[0]
        out[s] = passk.curve_cis(cfg, data, s, [ks[0], ks[-1]], "counts_answer")
    return out


def test_passk_rows_metrics_and_answer():
    sets, ks = ["hard", "easy"], {"hard": [1, 2, 4], "easy": [1, 2, 4]}
    cis = {s: passk.curve_cis(CFG, DATA, s, ks[s]) for s in sets}
    cmps = {s: passk.comparisons(CFG, DATA, s, ks[s]) for s in sets}
    assert cis["hard"]["base"][0].mean == pytest.approx(0.3125) and cis["hard"]["RL"][2].mean == pytest.approx(0.5)
    rows = passk.table_rows(CFG, DATA, sets, cis, cmps, answer_ends(CFG, DATA, sets))
    assert [(r["set"], r["arm"], r["seeds"]) for r in rows] == [("hard", "base", 1), ("hard", "RL", 2),
                                                               ("easy", "base", 1), ("easy", "RL", 2)]
    assert rows[1]["distinct answers"] == 1.25 and rows[0]["token entropy (nats)"] == 0.2
    # beside them a uniform guess's, on the arm's task: the files hold only its pass@1 0.1, so n = 10; N = 4 draws:
    # 10 (1 - 0.9^4) = 10 x 0.3439 = 3.439 distinct answers; ln 10 = 2.3026 nats at the answer token
    assert rows[1]["uniform guess: distinct answers"] == pytest.approx(3.439)
    assert rows[1]["uniform guess: answer-token entropy ln n"] == pytest.approx(2.302585)
    assert rows[1]["pass@1 [95% CI]"].startswith("0.469 [") and rows[1]["pass@4 [95% CI]"].startswith("0.500 [")
    # mean curves: RL 0.469, 0.5 against the base's 0.3125, 0.6458 (pass@2 of 2/4: 1 - C(2,2)/C(4,2) = 5/6)
    assert rows[1]["mean curve vs base"] == "means cross above → below between k = 1 and k = 2"
    assert rows[0]["mean curve vs base"] == "—" and rows[0]["with 95% CIs"] == "—"
    assert rows[3]["mean curve vs base"] == "mean below the base's at every k"
    m = passk.study_metrics(CFG, sets, ks, cis, cmps)
    assert m["RL"]["hard"]["first_crossing_k"] == 2 and m["RL"]["hard"]["k_max"] == 4
    assert m["RL"]["hard"]["pass_at_max"] == pytest.approx(0.5) and m["RL"]["hard"]["seeds"] == 2
    assert m["RL"]["hard"]["with_cis"] == rows[1]["with 95% CIs"]
    assert "first_crossing_k" not in m["base"]["hard"] and m["base"]["easy"]["pass_at_1"] == 1.0
    # every interval printed and stored is the arm's own, at k = 1 and at the largest k of its set
    for r in rows:
        first, last = cis[r["set"]][r["arm"]][0], cis[r["set"]][r["arm"]][-1]
        # printed cut to pass@k's range [0, 1]; stored uncut
        assert r["pass@1 [95% CI]"] == stats.fmt_ci(first.mean, max(0.0, first.lo), min(1.0, first.hi))
        assert r[f"pass@{ks[r['set']][-1]} [95% CI]"] == stats.fmt_ci(last.mean, max(0.0, last.lo), min(1.0, last.hi))
        got = m[r["arm"]][r["set"]]
        assert (got["pass_at_1"], got["pass_at_1_ci"], got["pass_at_max"], got["pass_at_max_ci"]) == (
            first.mean, [first.lo, first.hi], last.mean, [last.lo, last.hi])
    assert passk.answer(CFG, rows, sets) == (f"on hard: RL {rows[1]['with 95% CIs']}; "
                                             f"on easy: RL {rows[3]['with 95% CIs']}.")


def test_passk_mean_curves_meet_the_base_on_the_arms_own_seeds():
    """An arm of 2 seeds against a base of 3: the crossing columns read the base's seeds 0 and 1 only. By hand,
    N = 4: the base solves nothing on seeds 0 and 1 and everything on seed 2 (all-seed mean 1/3 at every k); the
    arm's pass@1, 2, 4 with one of 4 samples right: 0.25, 1 - C(3,2)/C(4,2) = 0.5, 1."""
    data = {f"b{i}": passk_data("base_cot", {"edge": [c, c]}) for i, c in enumerate((0, 0, 4))}
    data |= {f"x{i}": passk_data("rl", {"edge": [1, 1]}) for i in range(2)}
    cfg = passk.Config(models={k: PasskModel("hop", d["model"]) for k, d in data.items()},
                       arms={"base": ["b0", "b1", "b2"], "X": ["x0", "x1"]})
    ks = {"edge": [1, 2, 4]}
    cis = {"edge": passk.curve_cis(cfg, data, "edge", ks["edge"])}
    cmps = {"edge": passk.comparisons(cfg, data, "edge", ks["edge"])}
    assert [iv.mean for iv in cis["edge"]["base"]] == pytest.approx([1 / 3] * 3)  # the base's own, all 3 seeds
    assert passk.paired_means(cmps["edge"]["X"]) == pytest.approx(([0.0] * 3, [0.25, 0.5, 1.0]))
    rows = passk.table_rows(cfg, data, ["edge"], cis, cmps, answer_ends(cfg, data, ["edge"]))
    # against the all-seed mean it would read "means cross below → above between k = 1 and k = 2"
    assert rows[1]["mean curve vs base"] == "mean above the base's at every k"
    assert passk.study_metrics(cfg, ["edge"], ks, cis, cmps)["X"]["edge"]["first_crossing_k"] is None


def test_passk_pairs_each_arm_with_its_own_base_seed_and_compares_the_pairs(tmp_path):
    """The edge study's shape: a base arm with one model per base seed, runs paired with them by position,
    and a further pair. pass@1 per problem is c / N; by hand, N = 4, two problems."""
    from reasonrl.io import read_json, write_json
    from reasonrl.studies.passk import compared

    counts = {"b0": [0, 0], "b1": [4, 4], "x0": [2, 2], "x1": [4, 4], "e0": [1, 1], "e1": [3, 3]}
    for label, c in counts.items():
        write_json(tmp_path / passk.data_path(label), {"model": label, "N": 4, "sets": {"edge": {
            "difficulties": [7], "problems": 2, "pass_at_k": {"1": sum(c) / 8}, "random_baseline": {"1": 0.1},
            "distinct_answers": 1.0, "entropy": 0.1, "counts": c, "counts_answer": [4, 4]}}})
    cfg = passk.Config(models={k: PasskModel("hop", k) for k in counts},
                       arms={"base": ["b0", "b1"], "X": ["x0", "x1"], "E": ["e0", "e1"]}, pairs=[["E", "X"]])
    data = {k: read_json(tmp_path / passk.data_path(k)) for k in counts}
    (x_vs_base,) = compared(cfg, data, "base", "X", "edge", [1])
    # x0 started from b0 (+0.5 on both problems), x1 from b1 (+0): seed 0 against seed 0, not against b1
    want = stats.paired(np.array([[0.0, 0.0], [1.0, 1.0]]), np.array([[0.5, 0.5], [1.0, 1.0]]))
    assert (x_vs_base.cmp.effect, x_vs_base.cmp.ci_lo, x_vs_base.cmp.ci_hi) == \
        pytest.approx((0.25, want.ci_lo, want.ci_hi))
    assert x_vs_base.pair == "x_vs_base_edge_k001" and x_vs_base.cmp.seeds == 2
    (x_vs_e,) = compared(cfg, data, "E", "X", "edge", [1])  # the pair: X against E, seed by seed
    assert x_vs_e.pair == "x_vs_e_edge_k001" and x_vs_e.cmp.effect == pytest.approx((0.25 + 0.25) / 2)
    with pytest.raises(Exception, match="pairs"):
        passk.Config(models={"b0": PasskModel("hop", "b")}, arms={"base": ["b0"]}, pairs=[["base", "nope"]])


def test_passk_compares_each_arm_with_its_own_tasks_base():
    """Two tasks in one study: the chain arm is compared with the chain base, never with hop's; by hand,
    N = 4, pass@1 = c / 4 per problem."""
    data = {"hb": passk_data("base_cot", {"edge": [0, 4]}), "hx": passk_data("rl_hop", {"edge": [4, 4]}),
            "cb": passk_data("base_chain", {"edge": [2, 2]}), "cx": passk_data("rl_chain", {"edge": [3, 3]})}
    tasks = {"hb": "hop", "hx": "hop", "cb": "chain", "cx": "chain"}
    cfg = passk.Config(bases=["hop base", "chain base"],
                       models={k: PasskModel(t, data[k]["model"]) for k, t in tasks.items()},
                       arms={"hop base": ["hb"], "hop RL": ["hx"], "chain base": ["cb"], "chain RL": ["cx"]})
    assert cfg.tasks() == {"hop": ["hop base", "hop RL"], "chain": ["chain base", "chain RL"]}
    cmps = passk.comparisons(cfg, data, "edge", [1])
    assert list(cmps) == ["hop RL", "chain RL"]
    (hop,), (chain,) = cmps["hop RL"], cmps["chain RL"]
    assert hop.pair == "hop_rl_vs_hop_base_edge_k001" and hop.cmp.effect == pytest.approx(0.5)  # (1 + 0) / 2
    assert chain.pair == "chain_rl_vs_chain_base_edge_k001" and chain.cmp.effect == pytest.approx(0.25)
    rows = passk.table_rows(cfg, data, ["edge"], {"edge": passk.curve_cis(cfg, data, "edge", [1])},
                            {"edge": cmps}, answer_ends(cfg, data, ["edge"]))
    assert [(r["task"], r["arm"]) for r in rows] == [("hop", "hop base"), ("hop", "hop RL"), ("chain", "chain base"),
                                                      ("chain", "chain RL")]


# ----------------------------------------------------------------------------- front-page paragraphs

def test_ablations_summary_words_only_the_directed_comparisons_and_counts_the_rest():
    from reasonrl.studies import ablations
    from reasonrl.studies.answers import Answer

    def answer(pair, a, b, effect, lo, hi):  # a paired comparison by hand: seeds 3, problems 8
        return Answer(pair, a, b, stats.Comparison(0.5, 0.5 + effect, effect, lo, hi, 0.01, 2, 0.05, 0.04, 3, 8))

    cfg = ablations.Config(groups={"g": ablations.Group("g", {"ref": ["r0"], "up": ["u0"], "down": ["d0"],
                                                              "same": ["s0"], "open": ["o0"]})})
    answers = {"g": [answer("up_vs_ref", "ref", "up", 0.25, 0.125, 0.375),
                     answer("down_vs_ref", "ref", "down", -0.25, -0.375, -0.125),
                     answer("same_vs_ref", "ref", "same", 0.0, -0.005, 0.005),  # inside ±0.01: equivalent
                     answer("open_vs_ref", "ref", "open", 0.0625, -0.125, 0.25),  # covers 0: undecided
                     answer("up_vs_ref_entropy", "ref", "up", 0.5, 0.25, 0.75)]}  # a curve answer: details only
    assert ablations.summary(cfg, answers) == (
        "Verified greedy accuracy on edge, arm − group reference [95% CI]; above it — g: up − ref "
        "+0.250 [0.125, 0.375]; below it — g: down − ref -0.250 [-0.375, -0.125]; the other 2: 1 equivalent, "
        "1 undecided (details).")


def test_passk_summary_sets_each_task_beside_its_random_guess():
    rows = passk.table_rows(CFG, DATA, ["hard", "easy"], {s: passk.curve_cis(CFG, DATA, s, [1, 2, 4])
                                                            for s in ("hard", "easy")},
                            {s: passk.comparisons(CFG, DATA, s, [1, 2, 4]) for s in ("hard", "easy")},
                            answer_ends(CFG, DATA, ["hard", "easy"]))
    # pass@1 / pass@4 on hard: base 0.3125 / 0.75, RL 0.46875 / 0.5; the guess curve's ends 0.1 / 0.34
    assert passk.summary(CFG, DATA, rows, "hard", "pass@4 [95% CI]") == (
        "Verified pass@1 / pass@4 on hard, seed means (a guess verifies 0). hop (answer-only guess 0.100 / 0.340): "
        "base 0.312 / 0.750, RL 0.469 / 0.500.")


def test_answers_table_shows_the_answer_only_effect_with_its_interval():
    verified = stats.Comparison(0.723, 0.716, -0.007, -0.187, 0.172, 0.065, 4, 0.9, 0.24, 5, 1000)
    answer_only = stats.Comparison(0.785, 0.870, 0.086, 0.004, 0.168, 0.03, 4, 0.04, 0.1, 5, 1000)
    table = answers_table([Answer("chain_edge", "base", "GRPO", verified, answer_only=answer_only),
                           Answer("hop_edge", "base", "GRPO", verified)], "Pooled", "What.")
    rows = [line for line in table.splitlines() if line.startswith("| GRPO vs base")]
    assert "| 0.785 → 0.870, +0.086 [0.004, 0.168]" in rows[0]  # not the verified -0.007
    assert "0.785" not in rows[1]  # an answer without an answer-only comparison leaves the cell empty


def test_the_headline_title_counts_the_bases_of_its_task():
    from reasonrl.studies import headline

    tasks = {"base_cot": "hop", "base_cot_s1": "hop", "base_chain_s0": "chain"}
    cfg = headline.Config(runs={"h0": "cot", "h1": "cot_s1", "c0": "chain_s0"}, tasks=tasks, task="hop")
    assert headline.title("GRPO", cfg) == "Headline: GRPO from 2 hop bases"
    assert headline.title("RFT", replace(cfg, task="chain")) == "Headline: RFT from 1 chain base"
    assert headline.pairs(replace(cfg, task="chain")) == [("c0", "chain_s0")]


def test_the_headline_corruption_rate_is_answer_only_minus_verified_for_base_and_run():
    from reasonrl.studies import headline

    # chain_s1 on edge in run 1: verified 0.809 -> 0.587, answer-only 0.868 -> 0.905: 0.059 -> 0.318 of the samples
    # have the right answer after a wrong step
    verified = stats.Comparison(0.809, 0.587, -0.222, -0.243, -0.201, 0.01, 999, 0.0, 0.03, 1, 1000)
    answer_only = stats.Comparison(0.868, 0.905, 0.037, 0.02, 0.054, 0.01, 999, 0.0, 0.03, 1, 1000)
    assert headline.corruption(Answer("p", "base", "run", verified, answer_only=answer_only)) == "0.059 → 0.318"
    assert headline.corruption(Answer("p", "base", "run", verified)) == "—"
