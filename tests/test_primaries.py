"""reasonrl.studies.primaries on hand-made per-problem counts: a blocked row's log error ratio, raw gain and sign
test written out by hand (RL seeds grouped under the base they started from, whatever their order in the arm); the
family stopping at a failed sequence claim with the rest "not reached"; a gate taking a row out before the run (its
data never read) and one failing in the run holding its row at p = 1; bad keys and names failing with their key.
Single-base rows on hand-made answer files (a one-sided t on three seeds, its p and bound written out), a gated one
reading nothing, the crossing's at-or-above sentence, and stage report_primaries end to end on a tiny tree."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest

from reasonrl import estimands as E
from reasonrl.config import ConfigError, from_dict
from reasonrl.studies import gate_readings
from reasonrl.studies import gatekeeping as G
from reasonrl.studies import primaries as P

N = 2  # samples per problem; 2 problems per set: pass@1 of a problem is its count / 2
COUNTS = {  # model -> verified counts per problem (accuracy)
    "b0": [0, 2], "b1": [1, 1], "b2": [0, 0],  # bases at 0.5, 0.5, 0
    "r00": [2, 2], "r01": [1, 2],  # from b0: 1, 0.75
    "r10": [2, 2], "r11": [2, 1],  # from b1: 1, 0.75
    "r20": [1, 1], "r21": [2, 0],  # from b2: 0.5, 0.5
}
# a second set, "wide", of 8 problems where every RL seed solves everything: log(13), log(9), log(17) per base, by
# hand as above on P = 8 (L(e) = log((8 e + 0.5) / 9), RL at log(0.5 / 9)), far beyond 0
WIDE = {"b0": [0] * 4 + [1] * 4, "b1": [1] * 8, "b2": [0] * 8} | {m: [2] * 8 for m in ("r00", "r01", "r10", "r11",
                                                                                      "r20", "r21")}
# the RL arm in an order that is not its bases': grouping by position would give b0 the seeds r20 and r21
RL_ARM = ["r20", "r00", "r10", "r21", "r01", "r11"]
INIT = {"r00": "b0", "r01": "b0", "r10": "b1", "r11": "b1", "r20": "b2", "r21": "b2"}

# By hand, on the log error ratio counted on P = 2 problems, L(e) = log((2 e + 0.5) / 3):
# b0 (e 0.5 -> L = log 1/2) with seeds at e 0 (log 1/6) and 0.25 (log 1/3): (log 3 + log 1.5) / 2 = log(4.5) / 2;
# b1 the same; b2 (e 1 -> log 5/6) with two seeds at e 0.5 (log 1/2): log(5/3).
B01, B2 = math.log(4.5) / 2, math.log(5 / 3)
LOG_MEAN = (2 * B01 + B2) / 3  # = log(7.5) / 3 = 0.6716
RAW_MEAN = (0.375 + 0.375 + 0.5) / 3  # raw gains per base: (0.5 + 0.25) / 2 twice, 0.5


def row(**kw) -> dict:
    return {"claim": "yue_pass1", "task": "hop", "test": "blocked", "rl": "GRPO", "base": "base",
            "power_for": 0.693, "power_reason": "log 2: RL halving the error", "power": 0.9} | kw


def params(**gates) -> dict:
    models = {m: {"task": "hop", "model": m if m.startswith("b") else f"rl_{m}"} for m in [*COUNTS, "x0", "y0"]}
    return {
        "runs": {m: {"task": "hop", "init": b} for m, b in INIT.items()} | {"y0": {"task": "hop", "init": "x0"}},
        "passk": {"bases": ["base"], "models": models,
                  "arms": {"base": ["b0", "b1", "b2"], "GRPO": RL_ARM, "other base": ["x0"], "other": ["y0"],
                           "one base": ["b2"], "from b2": ["r21", "r20"]}},
        "studies": {"claims": {"yue_pass1": {"paper": "Yue et al. 2025", "claim": "RL raises pass@1"},
                               "zhang_edge": {"paper": "Zhang et al. 2025", "claim": "RL raises pass@k"}},
                    "gates": gates},
    }


@pytest.fixture
def root(tmp_path):
    data = tmp_path / "reports" / "passk" / "data"
    data.mkdir(parents=True)
    for m, counts in COUNTS.items():  # x0 and y0 have no data: a row that reads them fails
        (data / f"{m}.json").write_text(json.dumps({"N": N, "sets": {"edge": {"counts": counts},
                                                                         "wide": {"counts": WIDE[m]}}}))
    return tmp_path


def config(sequence, rest, rows, **kw) -> P.Primaries:
    return from_dict(P.Primaries, {"sequence": sequence, "rest": rest, "rows": rows} | kw, P.SECTION)


def judged(root, cfg, prm=None, in_run=None) -> dict[str, P.Primary]:
    prm = prm or params()
    P.check_names(cfg, prm)
    return {p.key: p for p in P.judge_primaries(cfg, prm, root, G.gate_specs(prm), in_run)}


def test_a_blocked_row_from_hand_made_counts(root):
    out = judged(root, config(["hop"], [], {"hop": row()}))["hop"]
    est = out.estimate
    assert est.values == pytest.approx((B01, B01, B2)) and est.starts == pytest.approx((0.5, 0.5, 0.0))
    assert est.value == pytest.approx(LOG_MEAN) and LOG_MEAN == pytest.approx(math.log(7.5) / 3)
    assert est.se_units == pytest.approx((B01 - B2) / 3)  # two equal values and one d below: sd / sqrt(3) = d / 3
    assert (est.df, est.unit) == (2, "base")
    assert out.raw.value == pytest.approx(RAW_MEAN) and out.raw.values == pytest.approx((0.375, 0.375, 0.5))
    assert out.sign == E.SignTest(3, 0, 0, 0.125)  # 3 of 3: 0.5^3
    assert out.correlation == pytest.approx(1.0)  # the two bases at 0.5 gain more than the one at 0
    assert out.bound == pytest.approx(est.value - 4.302652729911275 * est.se)  # t_0.975 on 2 df
    assert out.result.p_claimed == pytest.approx(est.p_beyond(0.0, 1))
    # alone in the sequence: adjusted 2 p, compared with 0.05
    assert out.judgement.p == pytest.approx(2 * out.result.p_claimed)
    table = P.markdown([out])
    assert "pass@1: +0.672" in table and "pass@1: +0.417" in table and "3 of 3 (p 0.12)" in table


def test_the_sign_row_and_min_seeds(root):
    out = judged(root, config([], ["s"], {"s": row(test="sign")}))["s"]
    # one row in Holm: M = 2 one-sided hypotheses, 2 x 0.125 = 0.25, not reproduced; the opposite: 0 of 3, p 1
    assert (out.result.p_claimed, out.result.p_opposite) == (0.125, 1.0)
    assert out.judgement.p == pytest.approx(0.25) and out.judgement.verdict == G.INCONCLUSIVE
    with pytest.raises(ValueError, match="needs >= 3 per base"):
        judged(root, config(["hop"], [], {"hop": row()}, min_seeds=3))


def two_seed_arms() -> dict:
    prm = params()
    prm["passk"]["arms"] |= {"GRPO a": ["r00", "r10", "r20"], "GRPO b": ["r21", "r01", "r11"]}  # b: not in base order
    return prm


def test_rl_arms_listed_pool_their_seeds_per_base(root):
    prm = two_seed_arms()
    one = judged(root, config(["hop"], [], {"hop": row()}))["hop"].estimate
    two = judged(root, config(["hop"], [], {"hop": row(rl=["GRPO a", "GRPO b"])}), prm)["hop"].estimate
    assert two.values == pytest.approx((B01, B01, B2)) and two.value == pytest.approx(one.value)
    assert two.se == pytest.approx(one.se)
    with pytest.raises(ConfigError, match="an arm twice"):
        from_dict(P.Row, row(rl=["GRPO a", "GRPO a"]), "r")
    with pytest.raises(ConfigError, match=r"rows\.hop\.rl"):
        P.check_names(config(["hop"], [], {"hop": row(rl=["GRPO a", "nope"])}), prm)


def test_an_arm_against_another_meets_on_the_base_both_started_from(root):
    prm = two_seed_arms()
    # per base, GRPO b's seed against GRPO a's, on L(e) = log((2 e + 0.5) / 3): b0 e 0 -> 0.25 and b1 the same,
    # log(1/6) - log(1/3) = -log 2 each; b2 e 0.5 -> 0.5: 0. Mean -2 log 2 / 3; one seed a block, so min_seeds 1
    cfg = config([], ["v"], {"v": row(rl="GRPO b", base="GRPO a", min_seeds=1)})
    est = judged(root, cfg, prm)["v"].estimate
    assert est.values == pytest.approx((-math.log(2), -math.log(2), 0.0))
    assert est.value == pytest.approx(-2 * math.log(2) / 3) and est.starts == pytest.approx((1.0, 1.0, 0.5))
    with pytest.raises(ValueError, match="needs >= 2 per base"):  # the section's default where the row sets none
        judged(root, config([], ["v"], {"v": row(rl="GRPO b", base="GRPO a")}), prm)


def test_single_base_and_the_crossing_through_the_registry(root):
    rows = {"single": row(test="single", rl="from b2", base="one base"),
            "cross": row(test="crossing", k_high=2)}
    out = judged(root, config([], ["single", "cross"], rows))
    single = out["single"].estimate
    # the seeds are the units: each log(5/6) - log(1/2) = log(5/3) on P = 2, as in the blocked row's b2
    assert (single.unit, single.df, single.values) == ("RL seed", 1, pytest.approx((B2, B2)))
    assert out["single"].raw.values == pytest.approx((0.5, 0.5))
    # pass@2 of 2 samples is 1 where any sample is right: bases 0.5, 1, 0; RL 1, 1 | 1, 1 | 1, 0.5: RL is not below
    cross = out["cross"]
    assert cross.high.starts == pytest.approx((0.5, 1.0, 0.0)) and cross.raw_high.values == pytest.approx(
        (0.5, 0.0, 0.75))
    p_low, p_high = cross.estimate.p_beyond(0.0, 1), cross.high.p_beyond(0.0, -1)
    assert p_high > 0.5 and (cross.result.p_claimed, cross.result.p_opposite) == (max(p_low, p_high), None)
    # one hypothesis in Holm (no opposite test), the single row's two beside it: M = 3, a p above 0.5 stays above
    assert cross.judgement.p >= cross.result.p_claimed and cross.judgement.verdict == G.INCONCLUSIVE
    # Holm's first step rejects the single row (its two seeds agree: the se is the problem term's), so the crossing
    # is held at 0.05 / 2
    assert out["single"].judgement.verdict == G.REPRODUCED and out["single"].judgement.level == pytest.approx(0.05 / 3)
    assert cross.judgement.level == pytest.approx(0.05 / 2) and not P.TESTS["crossing"].opposite
    assert "pass@1: " in P.markdown([cross]) and "pass@2: " in P.markdown([cross])


def test_the_family_stops_at_a_failed_sequence_claim_and_the_rest_is_not_reached(root):
    # the first claim's margin, 0.7, lies above the estimate 0.672: not reproduced, the sequence stops there
    rows = {"first": row(margin=0.7, power_for=1.0), "second": row(), "later": row(claim="zhang_edge")}
    out = judged(root, config(["first", "second"], ["later"], rows))
    assert out["first"].judgement.verdict in (G.INCONCLUSIVE, G.NOT_REPRODUCED)
    assert out["first"].judgement.p > 0.05
    for key in ("second", "later"):
        assert out[key].judgement.verdict == G.NOT_REACHED
        assert out[key].judgement.reason == "the sequence stopped at first" and out[key].judgement.p is None
    # on the wide set the first claim is reproduced and the sequence goes on to stop at the second
    rows["first"] = row(set="wide")
    out = judged(root, config(["first", "second"], ["later"], rows))
    assert out["first"].estimate.value == pytest.approx(math.log(13 * 9 * 17) / 3)
    assert out["first"].judgement.verdict == G.REPRODUCED and out["first"].judgement.p < 0.05
    # the second (edge, p 0.093 one-sided): adjusted max(first's, 2 x 0.093) = 0.186, inconclusive at power 0.9
    assert out["second"].result.p_claimed == pytest.approx(0.0932446, abs=1e-6)
    assert (out["second"].judgement.verdict, out["second"].judgement.p) == (G.INCONCLUSIVE, pytest.approx(0.186489,
                                                                                                         abs=1e-5))
    assert out["later"].judgement.reason == "the sequence stopped at second"
    # with both sequence claims on the wide set the rest gets alpha: Holm over its two hypotheses
    rows["second"] = row(set="wide")
    out = judged(root, config(["first", "second"], ["later"], rows))
    later = out["later"].judgement
    assert (later.family, later.level) == ("rest", 0.025)
    assert later.p == pytest.approx(max(out["second"].judgement.p, 2 * out["later"].result.p_claimed))


def test_a_gate_failing_before_the_run_takes_its_row_out(root):
    prm = params(clip_regime={"threshold": 0.01, "what": "clip gap", "measured": 0.004})
    rows = {"hop": row(), "out": row(rl="other", base="other base", gates=("clip_regime",))}
    out = judged(root, config([], ["hop", "out"], rows), prm)  # "out"'s models have no files: never read
    gone = out["out"]
    assert gone.judgement.verdict == G.NOT_TESTABLE and gone.estimate is None
    assert gone.judgement.reason == "not testable here: clip_regime measured 0.004, needs ≥ 0.01"
    # Holm over the remaining row's two hypotheses only: 2 p
    assert out["hop"].judgement.p == pytest.approx(2 * out["hop"].result.p_claimed)
    assert "not testable here: clip_regime measured 0.004" in P.markdown(list(out.values()))


def test_a_gate_failing_in_the_run_keeps_its_row_at_p_1(root):
    prm = params(clip_regime={"threshold": 0.01, "what": "clip gap", "measured": 0.02})
    rows = {"hop": row(gates=("clip_regime",), power=0.5)}
    out = judged(root, config(["hop"], [], rows), prm, in_run={"clip_regime": 0.003})["hop"]
    assert (out.judgement.verdict, out.judgement.p) == (G.UNDERPOWERED, 1.0)
    assert out.judgement.reason.startswith("clip_regime measured 0.003, needs ≥ 0.01 in the run (it passed before)")
    assert out.estimate.value == pytest.approx(LOG_MEAN)  # still estimated and shown
    # the gate holding in the run changes nothing
    held = judged(root, config(["hop"], [], rows), prm, in_run={"clip_regime": 0.02})["hop"]
    assert held.judgement.p == pytest.approx(2 * held.result.p_claimed)


def test_bad_keys_and_names_fail_naming_their_key(root):
    with pytest.raises(ConfigError, match=r"studies\.primaries\.rows\.hop\.marign: unknown key"):
        config(["hop"], [], {"hop": row(marign=0.1)})
    with pytest.raises(ConfigError, match=r"studies\.primaries\.rows\.hop\.test: 't' is not one of"):
        config(["hop"], [], {"hop": row(test="t")})
    with pytest.raises(ConfigError, match=r"studies\.primaries\.rows\.hop\.k_high"):
        config(["hop"], [], {"hop": row(test="crossing")})
    with pytest.raises(ConfigError, match=r"studies\.primaries\.rows: \['idle'\] are in neither"):
        config(["hop"], [], {"hop": row(), "idle": row()})
    with pytest.raises(ConfigError, match=r"studies\.primaries\.rows\.hop\.claim: 'yue' is not a studies\.claims"):
        P.check_names(config(["hop"], [], {"hop": row(claim="yue")}), params())
    with pytest.raises(ConfigError, match=r"studies\.primaries\.rows\.hop\.gates: 'clip' is not a studies\.gates"):
        P.check_names(config(["hop"], [], {"hop": row(gates=("clip",))}), params())
    with pytest.raises(ConfigError, match=r"studies\.primaries\.rows\.hop\.rl: 'GRPO edge' is not a passk arm"):
        P.check_names(config(["hop"], [], {"hop": row(rl="GRPO edge")}), params())


def test_an_rl_model_from_another_base_fails_naming_its_arm(root):
    prm = params()
    prm["passk"]["arms"]["GRPO"] = [*RL_ARM, "y0"]  # y0 started from x0, no model of the arm "base"
    with pytest.raises(ConfigError, match=r"passk\.arms\.GRPO: y0 started from x0"):
        judged(root, config(["hop"], [], {"hop": row()}), prm)


def test_the_committed_run1_reanalysis_is_what_the_script_writes(tmp_path, monkeypatch):
    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("reanalyse_run1", root / "scripts" / "reanalyse_run1.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    out = tmp_path / "run1_reanalysis.md"
    monkeypatch.chdir(root)
    monkeypatch.setattr("sys.argv", ["reanalyse_run1.py", "--out", str(out)])
    script.main()
    text = out.read_text()
    assert text == (root / "reports" / "run1_reanalysis.md").read_text()
    # the hand check against run 1: hop pass@1 is +2.857 counted (8 of 8 bases, 0.5^8), its raw gain run 1's +0.295
    assert "pass@1: +2.857 (≥ +2.36)" in text and "8 of 8 (p 0.0039)" in text and "pass@1: +0.295" in text


# ----------------------------------------------------------------------------- single-base rows from answer files

# Three RL seeds of one base, each seed's gain over it: 0.10, 0.14, 0.18 (mean 0.14, sd 0.04). The answer file holds
# what stats writes: the effect b - a, its se = sd / sqrt(3) = 0.0230940 and df = 2.
SEED_DIFFS = (0.10, 0.14, 0.18)
ANSWER_SE = 0.04 / math.sqrt(3)
ANSWER = {"a": 0.5, "b": 0.64, "effect": 0.14, "ci_lo": 0.04063, "ci_hi": 0.23937, "se": ANSWER_SE, "df": 2,
          "p": 0.0253, "mde": 0.1, "seeds": 3, "problems": 1, "se_run": ANSWER_SE, "run_sd": 0.04}
# One-sided beyond the margin 0.01: t = (0.14 - 0.01) / 0.0230940 = 5.62917 on 2 df, whose tail has the closed form
# (1 - t / sqrt(t^2 + 2)) / 2 = 0.0150694; the bound at 0.025 is 0.14 - t_0.975(2) x se = 0.14 - 4.302653 x 0.023094
T_ANSWER = 0.13 / ANSWER_SE
P_ANSWER = 0.0150694
BOUND_ANSWER = 0.0406345


def answer_row(**kw) -> dict:
    return {"claim": "shao_random", "task": "hop", "test": "answer", "base": "cot_s6", "scale": "raw gain",
            "margin": 0.01, "power_for": 0.1, "power_reason": "0.10 raw", "power": 0.5} | kw


def answer_params(**gates) -> dict:
    prm = params(**gates)
    prm["studies"]["claims"] |= {
        "shao_random": {"paper": "Shao et al. 2025", "claim": "a random reward raises accuracy", "study": "hacking",
                        "primary": "random_vs_base", "expect": 1},
        "yue_cross": {"paper": "Yue et al. 2025", "claim": "the base solves more at large k"}}
    return prm


def write_answer(root: Path, study: str, pair: str, answer: dict = ANSWER) -> None:
    folder = root / "reports" / study / "answers"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{pair}.json").write_text(json.dumps(answer))


def test_an_answer_row_is_a_one_sided_t_on_its_seeds_by_hand(root):
    from scipy import stats as sps

    assert statistics_of(SEED_DIFFS) == pytest.approx((0.14, ANSWER_SE))  # the answer is these three seeds'
    assert P_ANSWER == pytest.approx(float(sps.t.sf(T_ANSWER, 2)), abs=1e-7)  # cross-check of the closed form
    assert P_ANSWER == pytest.approx((1 - T_ANSWER / math.sqrt(T_ANSWER ** 2 + 2)) / 2, abs=1e-7)
    assert BOUND_ANSWER == pytest.approx(0.14 - float(sps.t.ppf(0.975, 2)) * ANSWER_SE, abs=1e-7)
    write_answer(root, "hacking", "random_vs_base")
    out = judged(root, config([], ["shao"], {"shao": answer_row()}), answer_params())["shao"]
    assert (out.estimate.value, out.estimate.df, out.estimate.unit) == (0.14, 2, "RL seed")
    assert out.result.p_claimed == pytest.approx(P_ANSWER, abs=1e-7)
    assert out.bound == pytest.approx(BOUND_ANSWER, abs=1e-7) and out.raw.value == 0.14
    assert out.sign is None and out.correlation is None  # an answer keeps no per-seed values
    # alone in the rest: Holm over its two one-sided hypotheses, 2 x 0.0150694 = 0.0301 <= 0.05: reproduced, and the
    # verdict names the base
    assert out.judgement.p == pytest.approx(2 * P_ANSWER, abs=1e-7)
    assert out.judgement.verdict == G.REPRODUCED and out.verdict == "reproduced on cot_s6"
    assert out.source == "reports/hacking/answers/random_vs_base.json"
    table = P.markdown([out])
    assert "b − a: +0.140 (≥ +0.04)" in table and "reproduced on cot_s6" in table
    assert "answer (reports/hacking/answers/random_vs_base.json)" in table
    # the row's own pair instead of the claim's primary
    write_answer(root, "hacking", "other_pair", ANSWER | {"effect": -0.14})
    other = judged(root, config([], ["o"], {"o": answer_row(answer="other_pair")}), answer_params())["o"]
    assert other.estimate.value == -0.14 and other.judgement.verdict == G.CONTRADICTED


def statistics_of(values) -> tuple[float, float]:
    n = len(values)
    mean = sum(values) / n
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1) / n)


def test_a_gated_out_single_base_row_is_not_testable_and_reads_nothing(root):
    prm = answer_params(shao_base={"threshold": 0.5, "what": "greedy accuracy of the base", "measured": 0.25})
    rows = {"shao": answer_row(gates=("shao_base",)), "hop": row()}
    out = judged(root, config([], ["shao", "hop"], rows), prm)  # no answer file written: reading it would fail
    shao = out["shao"]
    assert shao.estimate is None and shao.result is None and shao.judgement.p is None
    assert shao.judgement.verdict == G.NOT_TESTABLE
    assert shao.judgement.reason == "not testable here: shao_base measured 0.25, needs ≥ 0.5"
    assert shao.verdict == "not testable here on cot_s6"
    # Holm over the blocked row's two hypotheses only
    assert out["hop"].judgement.p == pytest.approx(2 * out["hop"].result.p_claimed)
    assert P.inputs(config([], ["shao", "hop"], rows), prm) == [f"reports/passk/data/{m}.json" for m in sorted(
        ["b0", "b1", "b2", *INIT])]


def test_answer_rows_are_checked_against_their_claim(root):
    with pytest.raises(ConfigError, match=r"rows\.s\.rl: a 'answer' row reads its claim's answer file"):
        config([], ["s"], {"s": answer_row(rl="GRPO")})
    with pytest.raises(ConfigError, match=r"rows\.s\.scale: an answer's effect is on the 'raw gain' scale"):
        config([], ["s"], {"s": answer_row(scale="log error ratio")})
    with pytest.raises(ConfigError, match=r"rows\.s\.answer: a 'blocked' row reads passk counts"):
        config([], ["s"], {"s": row(answer="x")})
    with pytest.raises(ConfigError, match=r"rows\.s\.direction: -1: an answer's effect is b - a"):
        P.check_names(config([], ["s"], {"s": answer_row(direction=-1)}), answer_params())
    with pytest.raises(ConfigError, match=r"rows\.s\.claim: 'yue_pass1' names no study"):
        P.check_names(config([], ["s"], {"s": answer_row(claim="yue_pass1")}), answer_params())
    P.check_names(config([], ["s"], {"s": answer_row()}), answer_params())  # no passk arm needed


CROSSING_GATE = {"threshold": 1.0, "what": "share of bases with room", "measured": 0.0}


def test_a_gated_crossing_says_rl_is_at_or_above_the_base_at_every_k(root):
    # pass@1: bases 0.5, 0.5, 0 against their seeds' 0.875, 0.875, 0.5; pass@2 (N = 2): 0.5, 1, 0 against 1, 1, 0.75
    prm = answer_params(crossing_arm=CROSSING_GATE)
    rows = {"cross": row(claim="yue_cross", test="crossing", k_high=2, gates=("crossing_arm",))}
    out = judged(root, config([], ["cross"], rows), prm)["cross"]
    assert out.estimate is None and out.judgement.verdict == G.NOT_TESTABLE
    assert out.why == ("not testable here: crossing_arm measured 0, needs ≥ 1; on edge, GRPO is at or above base at "
                       "every k of the curve (k = 1 to 2) on every base (3 of 3): no crossing to test")
    assert out.why in P.markdown([out])
    # b0's two seeds solving nothing: RL below b0 (0.5) at k = 1 and 2, so the data no longer say it
    for m in ("r00", "r01"):
        none = {"N": N, "sets": {"edge": {"counts": [0, 0]}, "wide": {"counts": [0] * 8}}}
        (root / "reports/passk/data" / f"{m}.json").write_text(json.dumps(none))
    out = judged(root, config([], ["cross"], rows), prm)["cross"]
    assert out.note == "" and out.why == "not testable here: crossing_arm measured 0, needs ≥ 1"


def write_params(root: Path, prm: dict) -> None:
    import yaml

    (root / "params.yaml").write_text(yaml.safe_dump(prm, sort_keys=False, allow_unicode=True))


def test_the_stage_writes_the_page_and_the_metrics_end_to_end(root):
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[1]
    prm = answer_params(crossing_arm=CROSSING_GATE,
                        shao_base={"threshold": 0.5, "what": "greedy accuracy", "measured": 0.535})
    prm["studies"]["primaries"] = {"sequence": ["hop"], "rest": ["shao", "cross"], "rows": {
        "hop": row(set="wide"), "shao": answer_row(gates=["shao_base"]),
        "cross": row(claim="yue_cross", test="crossing", k_high=2, gates=["crossing_arm"])}}
    prm["studies"]["claims"]["shao_random"]["mechanism"] = {"key": "clip_frac", "min": 0.001, "what": "clipped"}
    write_params(root, prm)
    write_answer(root, "hacking", "random_vs_base", ANSWER | {"clip_frac": 0.0004})
    (root / "reports/metrics").mkdir(parents=True, exist_ok=True)  # the base stage's greedy accuracies of cot_s6
    (root / "reports/metrics/base_cot_s6.json").write_text(json.dumps({"edge": {"acc": 0.61}}))
    env = {"PYTHONPATH": str(repo), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, str(repo / "stages/report_primaries.py")], cwd=root, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "primaries: 2 outputs written" in done.stderr
    page = (root / "reports/primaries.md").read_text()
    metrics = json.loads((root / "reports/metrics/primaries.json").read_text())
    assert page.startswith("# Run 2's primaries") and "`hop`" in page and G.legend() in page
    assert "alpha = 0.05" in page and "**Rest**" in page
    rows = {r["key"]: r for r in metrics["rows"]}
    assert (metrics["alpha"], metrics["sequence"], metrics["rest"]) == (0.05, ["hop"], ["shao", "cross"])
    # the sequence's one row on the wide set: log(13 x 9 x 17) / 3, reproduced, so the rest gets alpha
    hop = rows["hop"]
    assert hop["estimate"]["value"] == pytest.approx(math.log(13 * 9 * 17) / 3, abs=1e-6)
    assert hop["sign"] == {"beyond": 3, "short": 0, "ties": 0, "p": 0.125} and hop["verdict"] == G.REPRODUCED
    assert hop["raw_gain"] == pytest.approx((0.75 + 0.5 + 1.0) / 3)  # bases at 0.25, 0.5, 0; RL at 1
    # Shao's row: the hand numbers above; Holm over its two hypotheses (the crossing is out): adjusted 2 p
    shao = rows["shao"]
    assert shao["p"]["claimed"] == pytest.approx(P_ANSWER, abs=1e-6) and shao["bound"] == pytest.approx(
        BOUND_ANSWER, abs=1e-6)
    assert shao["adjusted_p"] == pytest.approx(max(hop["adjusted_p"], 2 * P_ANSWER), abs=1e-6)
    assert (shao["verdict"], shao["verdict_text"], shao["power"]) == (G.REPRODUCED, "reproduced on cot_s6", 0.5)
    assert shao["gates"] == {"shao_base": {"measured": 0.535, "threshold": 0.5, "at_least": True, "in_run": 0.61,
                                           "passed_before": True}}
    assert shao["answer"] == "reports/hacking/answers/random_vs_base.json" and shao["sign"] is None
    # run 1's mechanism of the claim, described beside the verdict (not a gate of run 2: still reproduced)
    assert shao["mechanism"] == {"key": "clip_frac", "min": 0.001, "what": "clipped", "value": 0.0004,
                                 "reached": False}
    cross = rows["cross"]
    assert cross["verdict"] == G.NOT_TESTABLE and cross["estimate"] is None and cross["p"] is None
    assert "at or above base at every k" in cross["reason"] and cross["reason"] in page
    assert cross["gates"]["crossing_arm"]["passed_before"] is False
    # the index reads the file as the stage wrote it (report_index in run 2: tests/test_index_family.py by hand)
    from reasonrl.studies import index

    claims = {"yue_pass1": index.Claim("Yue et al. 2025", "RL raises pass@1", "passk", "k001", 1),
              "zhang_edge": index.Claim("Zhang et al. 2025", "RL raises pass@k", "passk", "k256", 1),
              "shao_random": index.Claim("Shao et al. 2025", "a random reward raises accuracy", "hacking",
                                         "random_vs_base", 1),
              "yue_cross": index.Claim("Yue et al. 2025", "the base solves more at large k", "passk", "k256", -1)}
    cfg = index.Config(claims=claims, family=list(rows))
    table = index.md_rows(index.family_verdict_rows(cfg, metrics)).splitlines()[2:]
    assert table[0].endswith(f"| hop | hop | pass@1: {hop['estimate']['value']:+.3f} (≥ {hop['bound']:+.2f}) | "
                             f"{hop['raw_gain']:+.3f} | 3 of 3 | 0.90 | reproduced |")
    assert table[1].endswith(f"| shao | hop | b − a: {shao['estimate']['value']:+.3f} (≥ {shao['bound']:+.2f}) | "
                             f"{shao['raw_gain']:+.3f} | — | 0.50 | reproduced on cot_s6 |")
    assert table[2].endswith("| cross | hop | — | — | — | — | not testable here |")
    sections = index.family_claims_page(cfg, metrics, [], None)
    assert (f"- `cross` (hop, crossing test on the log error ratio, edge): **not testable here**; not read: out of "
            f"the family. Why: {cross['reason']}.") in sections
    assert [c for c, *_ in index.exploratory(cfg, metrics)] == ["zhang_edge"]  # the claim no row tests


def test_the_stage_in_dvc_yaml_reads_what_the_judge_reads():
    import yaml

    from reasonrl.studies.stage import load_config

    repo = Path(__file__).resolve().parents[1]
    stage = yaml.safe_load((repo / "dvc.yaml").read_text())["stages"]["report_primaries"]
    prm = yaml.safe_load((repo / "params.yaml").read_text())
    cfg = load_config(P, prm)
    deps = {d for d in stage["deps"] if not d.endswith(".py") and not d.startswith("reports/code/")}
    inputs = P.inputs(cfg, prm) + gate_readings.inputs(cfg.rows, G.gate_specs(prm))
    assert deps == {d for d in deps if any(p == d or p.startswith(d + "/") for p in inputs)}  # each is read from
    assert all(any(p == d or p.startswith(d + "/") for d in deps) for p in inputs)  # and every input is in one
    assert {next(iter(o)) for o in stage["outs"]} == set(P.outputs(cfg))
    # the params it reads: its section, the gates and claims it names, the passk arms and the runs' inits
    assert {"studies.primaries", "studies.gates", "studies.claims", "passk.arms", "passk.models"} <= set(
        stage["params"])
    assert {g for g in prm if g.startswith("runs")} <= set(stage["params"])
