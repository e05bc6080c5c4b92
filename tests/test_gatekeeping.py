"""reasonrl.studies.gatekeeping on hand-built p-values: the pre-registered sequence stopping at a failed claim and the
Holm family of the rest then reading "not reached"; the rest getting alpha once the whole sequence is reproduced;
a gate taking a row out before the run, and one failing in the run keeping its row at p = 1; Yue's crossing in
all four orders; the seven verdicts, the sequence's joint power and the legend."""

from __future__ import annotations

import pytest

from reasonrl import estimands as E
from reasonrl.studies import gatekeeping as G

CLIP = G.Gate("clip share", 0.001, before=0.0005)  # fails before the run
UPDATES = G.Gate("updates ratio", 0.95, before=1.0, run=0.5)  # passed before, fails in the run
HELD = G.Gate("updates ratio", 0.95, before=1.0, run=0.97)  # passes both


def slot(key: str, power: float = 0.9, **kw) -> G.Slot:
    return G.Slot(key, power, **kw)


def test_the_sequence_stops_at_a_failed_claim_and_the_rest_reads_not_reached():
    sequence = [slot("yue_pass1 hop"), slot("zhang_edge hop"), slot("zhang_new hop")]
    rest = [slot("shao_random"), slot("dapo_dynamic")]
    results = {"yue_pass1 hop": G.Result(0.001, 0.999, None),
               "zhang_edge hop": G.Result(0.20, 0.80, 0.40),  # not reproduced: the sequence stops here
               "zhang_new hop": G.Result(1e-6, 0.9999, None),  # would pass on its own
               "shao_random": G.Result(1e-6, 0.9999, None), "dapo_dynamic": G.Result(1e-6, 0.9999, None)}
    out = G.judge(sequence, rest, results)
    assert list(out) == ["yue_pass1 hop", "zhang_edge hop", "zhang_new hop", "shao_random", "dapo_dynamic"]
    first = out["yue_pass1 hop"]
    assert (first.verdict, first.p, first.level, first.family) == (G.REPRODUCED, pytest.approx(0.002), 0.025,
                                                                   "sequence")
    stop = out["zhang_edge hop"]
    # adjusted p: max(0.002, 2 x 0.20) = 0.40; joint power 0.9 x 0.9 = 0.81
    assert (stop.verdict, stop.p, stop.power) == (G.INCONCLUSIVE, pytest.approx(0.40), pytest.approx(0.81))
    for key in ("zhang_new hop", "shao_random", "dapo_dynamic"):
        assert out[key].verdict == G.NOT_REACHED and out[key].reason == "the sequence stopped at zhang_edge hop"
        assert out[key].p is None
    assert out["zhang_new hop"].family == "sequence" and out["shao_random"].family == "rest"


def test_the_rest_gets_alpha_only_after_the_whole_sequence_and_holm_adjusts_it():
    sequence = [slot("s1"), slot("s2")]
    rest = [slot("a"), slot("b"), slot("c")]
    results = {"s1": G.Result(0.001, 0.999), "s2": G.Result(0.01, 0.99),  # adjusted 0.002, then 0.02
               "a": G.Result(0.004, 0.996), "b": G.Result(0.009, 0.991), "c": G.Result(0.03, 0.97)}
    out = G.judge(sequence, rest, results)
    assert [out[k].verdict for k in ("s1", "s2")] == [G.REPRODUCED] * 2 and out["s2"].p == pytest.approx(0.02)
    # Holm over the rest's M = 6 one-sided hypotheses (two per claim): 6 x 0.004 = 0.024, 5 x 0.009 = 0.045 (both
    # rejected), 4 x 0.03 = 0.12 (stops); each raised to the sequence's 0.02 at least
    assert [out[k].p for k in "abc"] == [pytest.approx(0.024), pytest.approx(0.045), pytest.approx(0.12)]
    assert [out[k].level for k in "abc"] == [pytest.approx(0.05 / 6), pytest.approx(0.05 / 5), pytest.approx(0.05 / 4)]
    assert [out[k].verdict for k in "abc"] == [G.REPRODUCED, G.REPRODUCED, G.INCONCLUSIVE]
    # the sequence's adjusted p bounds the rest's from below: a sequence at 0.03 lifts a's 0.024 to 0.03
    results["s2"] = G.Result(0.015, 0.985)
    assert G.judge(sequence, rest, results)["a"].p == pytest.approx(0.03)
    # and a sequence claim at 2p = 0.06 > 0.05 holds the whole rest back
    results["s2"] = G.Result(0.03, 0.97)
    assert {G.judge(sequence, rest, results)[k].verdict for k in "abc"} == {G.NOT_REACHED}
    assert G.prerun_levels(sequence, rest) == {"s1": 0.025, "s2": 0.025, "a": pytest.approx(0.05 / 6),
                                               "b": pytest.approx(0.05 / 6), "c": pytest.approx(0.05 / 6)}


def test_contradicted_and_equivalent_stop_the_sequence_too():
    sequence = [slot("s1"), slot("s2")]
    out = G.judge(sequence, [], {"s1": G.Result(0.995, 0.005, 0.6), "s2": G.Result(1e-6, 0.9999)})
    assert out["s1"].verdict == G.CONTRADICTED and "opposite" in out["s1"].reason  # 2 x 0.005 = 0.01
    assert out["s2"].verdict == G.NOT_REACHED
    out = G.judge(sequence, [], {"s1": G.Result(0.4, 0.6, 0.02), "s2": G.Result(1e-6, 0.9999)})
    assert out["s1"].verdict == G.NOT_REPRODUCED and out["s1"].reason.startswith("equivalent")  # 2 x 0.02
    # at 0.03 one-sided the opposite test does not pass at 0.025 (2 x 0.03 = 0.06)
    out = G.judge(sequence, [], {"s1": G.Result(0.97, 0.03, None), "s2": G.Result(1e-6, 0.9999)})
    assert out["s1"].verdict == G.INCONCLUSIVE


def test_equivalence_in_the_rest_is_read_at_the_level_holm_stopped_at():
    # nothing rejected among M = 4: the rows are held at 0.05 / 4 per side, so TOST's p is multiplied by 4
    rest = [slot("a"), slot("b")]
    out = G.judge([], rest, {"a": G.Result(0.4, 0.6, 0.01), "b": G.Result(0.5, 0.5, 0.02)})
    assert out["a"].verdict == G.NOT_REPRODUCED and "0.04" in out["a"].reason
    assert out["b"].verdict == G.INCONCLUSIVE  # 4 x 0.02 = 0.08
    assert out["a"].level == out["b"].level == pytest.approx(0.0125)


def test_a_gate_failing_before_the_run_takes_its_row_out():
    rest = [slot("a"), slot("shao_random", gates=(CLIP,)), slot("c")]
    results = {"a": G.Result(0.01, 0.99), "c": G.Result(0.5, 0.5)}  # no result is needed from a row taken out
    out = G.judge([], rest, results)
    assert out["shao_random"] == G.Judgement("shao_random", G.NOT_TESTABLE,
                                             "not testable here: clip share measured 0.0005, needs ≥ 0.001")
    # M = 4 without it: 4 x 0.01 = 0.04 (reproduced); with it in the family M = 6 would give 0.06
    assert out["a"].p == pytest.approx(0.04) and out["a"].verdict == G.REPRODUCED
    assert G.prerun_levels([], rest) == {"a": 0.0125, "shao_random": None, "c": 0.0125}
    # a sequence claim taken out before the run leaves the sequence, which goes on without it
    out = G.judge([slot("s1", gates=(CLIP,)), slot("s2")], [], {"s2": G.Result(0.001, 0.999)})
    assert out["s1"].verdict == G.NOT_TESTABLE and out["s2"].verdict == G.REPRODUCED
    assert out["s2"].power == 0.9  # its joint power no longer counts the claim taken out
    # a gate at most (<=) a threshold
    low = G.Gate("guess share", 0.01, before=0.02, at_least=False)
    assert G.judge([], [slot("x", gates=(low,))], {})["x"].reason == ("not testable here: guess share measured "
                                                                       "0.02, needs ≤ 0.01")


def test_a_gate_failing_in_the_run_keeps_its_row_at_p_1():
    rest = [slot("a"), slot("dapo_dynamic", gates=(UPDATES,)), slot("c")]
    results = {"a": G.Result(0.01, 0.99), "dapo_dynamic": G.Result(1e-6, 0.9999), "c": G.Result(0.5, 0.5)}
    out = G.judge([], rest, results)
    row = out["dapo_dynamic"]
    # held at p = 1 however small its own p: a verdict by power, the gate named
    assert (row.verdict, row.p, row.family) == (G.INCONCLUSIVE, 1.0, "rest")
    assert row.reason.startswith("updates ratio measured 0.5, needs ≥ 0.95 in the run (it passed before): held at "
                                 "p = 1")
    # it still counts in Holm's M = 6: a's 0.01 adjusts to 0.06, not reproduced (with the row out it would be 0.04)
    assert out["a"].p == pytest.approx(0.06) and out["a"].verdict == G.INCONCLUSIVE
    assert G.judge([], [slot("low", 0.5, gates=(UPDATES,))], {"low": G.Result(1e-6, 0.9999)})["low"].verdict == \
        G.UNDERPOWERED
    # a gate that holds in the run changes nothing
    assert G.judge([], [slot("d", gates=(HELD,))], {"d": G.Result(1e-6, 0.9999)})["d"].verdict == G.REPRODUCED
    # in the sequence it stops the sequence there
    out = G.judge([slot("s1", gates=(UPDATES,)), slot("s2")], [slot("r")],
                  {"s1": G.Result(1e-6, 0.9999), "s2": G.Result(1e-6, 0.9999), "r": G.Result(1e-6, 0.9999)})
    assert [out[k].verdict for k in ("s1", "s2", "r")] == [G.INCONCLUSIVE, G.NOT_REACHED, G.NOT_REACHED]


@pytest.mark.parametrize(("p_low", "p_high", "expected"), [
    (0.001, 0.002, G.REPRODUCED),    # both pass: the IUT's p is 0.002, 2 x 0.002 = 0.004
    (0.001, 0.300, G.INCONCLUSIVE),  # only k = 1
    (0.300, 0.001, G.INCONCLUSIVE),  # only the largest k
    (0.300, 0.400, G.INCONCLUSIVE),  # neither
])
def test_yue_crossing_as_an_iut_in_all_four_orders(p_low, p_high, expected):
    c = E.Crossing(p_low, p_high)
    assert c.rejected == (expected == G.REPRODUCED) and c.p == max(p_low, p_high)
    res = G.result_from_crossing(c)
    assert (res.p_claimed, res.p_opposite, res.p_equivalent) == (max(p_low, p_high), None, None)
    out = G.judge([slot("yue_cross", opposite=False), slot("next")], [],
                  {"yue_cross": res, "next": G.Result(1e-6, 0.9999)})
    assert out["yue_cross"].verdict == expected and out["yue_cross"].p == pytest.approx(2 * max(p_low, p_high))
    assert out["next"].verdict == (G.REPRODUCED if expected == G.REPRODUCED else G.NOT_REACHED)
    # in the rest it is one hypothesis of Holm's M (a directional claim holds two)
    assert G.prerun_levels([], [slot("yue_cross", opposite=False), slot("x")]) == {
        "yue_cross": pytest.approx(0.05 / 3), "x": pytest.approx(0.05 / 3)}


def test_verdict_order_power_and_the_level_boundary():
    assert G.verdict(0.05, 0.99, None, 0.1) == (G.REPRODUCED, "adjusted p 0.05 ≤ 0.05 in the claimed direction")
    assert G.verdict(0.0501, 0.99, None, 0.8)[0] == G.INCONCLUSIVE
    assert G.verdict(0.0501, 0.99, None, 0.7999)[0] == G.UNDERPOWERED
    assert G.verdict(0.9, 0.04, 0.01, 0.9)[0] == G.CONTRADICTED  # the opposite direction before equivalence
    assert G.verdict(0.9, None, 0.01, 0.1)[0] == G.NOT_REPRODUCED
    assert G.verdict(0.001, 0.99, None, 0.9, stopped_at="s1") == (G.NOT_REACHED, "the sequence stopped at s1")
    assert G.verdict(0.001, 0.99, None, 0.9, gates=(CLIP,))[0] == G.NOT_TESTABLE


def test_sequence_power_is_the_joint_probability():
    assert G.sequence_power([0.9, 0.8, 0.5]) == pytest.approx([0.9, 0.72, 0.36])
    # a claim with 0.9 of its own after one with 0.85 has 0.765 joint: underpowered when not reproduced
    out = G.judge([slot("s1", 0.85), slot("s2", 0.9)], [], {"s1": G.Result(0.001, 0.999), "s2": G.Result(0.3, 0.7)})
    assert out["s2"].power == pytest.approx(0.765) and out["s2"].verdict == G.UNDERPOWERED
    with pytest.raises(ValueError, match="outside"):
        G.sequence_power([1.2])


def test_result_from_an_estimate_with_margins_and_the_sign_test():
    est = E.Estimate(E.LOG_ERROR_RATIO, 1.0, 0.2, 4, "base", (0.8, 0.9, 1.0, 1.1, 1.2), (0.5,) * 5)
    r = G.result_from_estimate(est, 1, margin=0.1)
    assert (r.p_claimed, r.p_opposite) == (est.p_beyond(0.1, 1), est.p_beyond(0.1, -1))
    assert r.p_equivalent == est.p_equivalent(0.1)
    assert G.result_from_estimate(est, 1).p_equivalent is None  # no equivalence test without a margin
    # with the sign test as well: 5 of 5 gives 1/32, larger than the t's p, so it decides
    signed = G.result_from_estimate(est, 1, with_sign=True)
    assert signed.p_claimed == pytest.approx(1 / 32) and signed.p_opposite == 1.0
    down = G.result_from_estimate(est, -1)
    assert (down.p_claimed, down.p_opposite) == (est.p_beyond(0.0, -1), est.p_beyond(0.0, 1))


def test_legend_holds_the_seven_verdicts_and_inputs_are_checked():
    assert list(G.VERDICTS) == [G.REPRODUCED, G.CONTRADICTED, G.NOT_REPRODUCED, G.INCONCLUSIVE, G.UNDERPOWERED,
                                G.NOT_REACHED, G.NOT_TESTABLE]
    assert G.legend().count("\n- *") == 6 and G.legend().startswith("- *reproduced*: ")
    with pytest.raises(ValueError, match="unique"):
        G.judge([slot("a")], [slot("a")], {})
    with pytest.raises(KeyError, match="no result"):
        G.judge([slot("a")], [], {})
    with pytest.raises(ValueError, match="power must be fixed"):
        G.judge([G.Slot("a")], [], {"a": G.Result(0.1, 0.9)})
    with pytest.raises(ValueError, match="opposite test"):
        G.judge([slot("a", opposite=False)], [], {"a": G.Result(0.1, 0.9)})
