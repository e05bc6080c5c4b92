"""reasonrl.studies.primaries on hand-made per-problem counts: a blocked row's log error ratio, raw gain and sign
test written out by hand (RL seeds grouped under the base they started from, whatever their order in the arm); the
family stopping at a failed sequence claim with the rest "not reached"; a gate taking a row out before the run (its
data never read) and one failing in the run holding its row at p = 1; bad keys and names failing with their key."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest

from reasonrl import estimands as E
from reasonrl.config import ConfigError, from_dict
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
