"""reasonrl.estimands on hand-built numbers: the log error ratio at 0 and 1 (problems counted, half a problem added),
run 1's hop bases, the blocked and single-base intervals with their problem term worked out by hand, one-sided p
and bounds, the exact sign test, each scale's correlation with the start, Yue's crossing as an IUT in all four
orders, pre-run power capped at the headroom and the seeds it takes (the coverage of their intervals in simulation:
tests/test_estimand_coverage.py)."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest
from scipy import stats as sps

from reasonrl import estimands as E
from reasonrl import stats

T975_7, T975_4, T975_2, T95_2 = 2.364624, 2.776445, 4.302653, 2.919986  # scipy.stats.t.ppf

# Run 1 (issue 70): the 8 hop bases' verified edge pass@1, and GRPO from each at 0.985-0.990
HOP_BASES = [0.227, 0.790, 0.752, 0.809, 0.415, 0.898, 0.827, 0.820]
HOP_RL = [0.988, 0.985, 0.990, 0.987, 0.989, 0.986, 0.990, 0.988]


# ----------------------------------------------------------------------------- the rule at 0 and 1

def test_log_error_ratio_at_0_and_1_counts_problems():
    # 0 of 248 unsolved: (0 + 0.5) / 249 = 0.002008; all 248 unsolved: 248.5 / 249 = 0.997992
    assert E.error_rate(1.0, 248) == pytest.approx(0.5 / 249) == pytest.approx(0.0020080, abs=1e-7)
    assert E.error_rate(0.0, 248) == pytest.approx(248.5 / 249)
    # the one-sided 95% Clopper-Pearson bound of 0 of 248 is 1 - 0.05^(1/248) = 0.0120: the corrected error lies in it
    assert E.error_upper_bound(0, 248) == pytest.approx(1 - 0.05 ** (1 / 248)) == pytest.approx(0.01201, abs=1e-5)
    assert 0 < E.error_rate(1.0, 248) < E.error_upper_bound(0, 248)
    # RL at 1 from a base at 0.5: log(124.5 / 0.5) = log(249) = 5.517; from 0: log(497) = log(2P + 1) = 6.209, the
    # largest value the scale can take; both at 1: 0
    assert E.log_error_ratio(0.5, 1.0, 248) == pytest.approx(math.log(249)) == pytest.approx(5.5175, abs=1e-4)
    assert E.log_error_ratio(0.0, 1.0, 248) == pytest.approx(math.log(2 * 248 + 1)) == pytest.approx(6.2086, abs=1e-4)
    assert E.log_error_ratio(1.0, 0.0, 248) == pytest.approx(-math.log(497))
    assert E.log_error_ratio(1.0, 1.0, 248) == 0
    # counted on samples instead (248 problems x 256 samples) the same pair would read log(2 x 63488 + 1) = 11.75
    assert E.log_error_ratio(0.0, 1.0, 248 * 256) > 11
    # away from the ends it is the plain ratio: at errors 0.2 and 0.05 (50 and 12.4 problems), within 0.03
    assert E.log_error_ratio(0.8, 0.95, 248) == pytest.approx(math.log(4), abs=0.03)
    with pytest.raises(ValueError, match="count problems"):
        E.log_error_ratio(0.5, 1.0, None)
    with pytest.raises(ValueError, match="shares in"):
        E.error_rate(1.2, 248)


def test_run1_hop_bases_on_the_log_error_ratio():
    # on the sample rates: per base log((1 - b) / (1 - r)), mean 3.028, sd 0.728 (t = 11.8, df 7)
    by_hand = [math.log((1 - b) / (1 - r)) for b, r in zip(HOP_BASES, HOP_RL)]
    assert statistics.mean(by_hand) == pytest.approx(3.0276, abs=1e-4)
    est = E.blocked(HOP_BASES, [[r] for r in HOP_RL], problems=None, min_seeds=1)
    assert est.values == pytest.approx(by_hand) and est.value == pytest.approx(3.0276, abs=1e-4)
    assert (est.df, est.units, est.unit, est.se_problems) == (7, 8, "base", 0)
    assert est.se == pytest.approx(statistics.stdev(by_hand) / math.sqrt(8)) == pytest.approx(0.25734, abs=1e-5)
    assert est.interval() == pytest.approx((3.0276 - T975_7 * 0.25734, 3.0276 + T975_7 * 0.25734), abs=1e-4)
    # with the rule at 0 and 1 on 248 problems: each error gains half a problem, the ratio shrinks to 2.881
    counted = E.blocked(HOP_BASES, [[r] for r in HOP_RL], problems=248, min_seeds=1)
    assert counted.value == pytest.approx(2.8808, abs=1e-4)
    # the raw gain beside it: mean 0.296, sd 0.239; it reads the start (r = -1.000), the log error ratio less (-0.938)
    raw = E.blocked(HOP_BASES, [[r] for r in HOP_RL], scale=E.RAW, min_seeds=1)
    assert raw.value == pytest.approx(0.295625) and raw.se == pytest.approx(0.238547 / math.sqrt(8), abs=1e-6)
    assert E.start_correlation(raw) == pytest.approx(-0.99997, abs=1e-5)
    assert E.start_correlation(est) == pytest.approx(-0.93752, abs=1e-5)
    # every base gains: the exact sign test gives 8 of 8, p = 1 / 256 = 0.0039 (one-sided)
    assert E.sign_test(est) == E.SignTest(8, 0, 0, pytest.approx(0.00390625))
    # a single RL seed per base is below the design's 2
    with pytest.raises(ValueError, match="needs >= 2"):
        E.blocked(HOP_BASES, [[r] for r in HOP_RL], problems=248)


# ----------------------------------------------------------------------------- intervals by hand

def test_blocked_averages_seeds_within_a_base_first():
    # Two bases at 0.5 and 0.8 (P = 248); base 1's seeds at 0.9, 0.9 and base 2's at 0.95, 0.95, 0.95 on the raw
    # scale: per-base gains 0.4 and 0.15, mean 0.275 (not the pooled mean over the five runs, 0.25), df = 1.
    est = E.blocked([0.5, 0.8], [[0.9, 0.9], [0.95, 0.95, 0.95]], scale=E.RAW)
    assert est.values == pytest.approx((0.4, 0.15)) and est.value == pytest.approx(0.275) and est.df == 1
    assert est.se == pytest.approx(0.125)  # sd of (0.4, 0.15) = 0.17678, / sqrt(2)
    # on the log scale with seeds that differ: base 1's value is the mean of its two seeds' log ratios
    est = E.blocked([0.5, 0.8], [[0.9, 0.8], [0.95, 0.95]], problems=248)
    f = [math.log((248 * (1 - a) + 0.5) / 249) for a in (0.5, 0.8, 0.9, 0.8, 0.95)]
    assert est.values == pytest.approx(((f[0] - f[2] + f[0] - f[3]) / 2, f[1] - f[4]))
    with pytest.raises(ValueError, match="2 RL seeds per base|bases of RL runs"):
        E.blocked([0.5, 0.8], [[0.9, 0.8]], problems=248)


def test_problem_term_of_the_log_error_ratio_by_hand():
    # Two identical bases, each with two identical RL seeds, on 4 problems: the unit term is 0. Base errors per
    # problem [1, 1, 0, 0] (mean 0.5), RL [0, 1, 0, 0] (0.25). On L(e) = log((4e + 0.5) / 5) the value is
    # log(2.5 / 1.5) = 0.5108; L'(0.5) = 1.6, L'(0.25) = 8/3, so each unit's influence row is
    # 1.6 [0.5, 0.5, -0.5, -0.5] - 8/3 [-0.25, 0.75, -0.25, -0.25] = [22/15, -6/5, -2/15, -2/15]; no residual.
    # se^2 = var([22/15, -6/5, -2/15, -2/15]) / 4 = (816/225 / 3) / 4 = 0.302222: se 0.549747.
    base = np.array([[0.0, 0.0, 1.0, 1.0]] * 2)
    rl = np.array([[[1.0, 0.0, 1.0, 1.0]] * 2] * 2)
    est = E.blocked(base, rl)
    assert est.value == pytest.approx(math.log(2.5 / 1.5))
    assert (est.se_units, est.se) == (0, pytest.approx(0.549747, abs=1e-6)) and est.se_problems == est.se
    # the raw gain's problem term: the error differences [1, 0, 0, 0] - 0.25, variance 0.25, / 4 problems
    raw = E.blocked(base, rl, scale=E.RAW)
    assert (raw.value, raw.se) == (pytest.approx(0.25), pytest.approx(0.25))
    with pytest.raises(ValueError, match="given on 4 problems"):
        E.blocked(base, rl, problems=248)


def test_blocked_raw_gain_is_stats_paired_with_seeds_grouped_by_base():
    rng = np.random.default_rng(0)
    base, rl = rng.random((4, 30)), rng.random((4, 3, 30))
    est = E.blocked(base, rl, scale=E.RAW)
    c = stats.paired(np.repeat(base, 3, axis=0), rl.reshape(12, 30), groups=np.repeat(np.arange(4), 3))
    assert (est.value, est.se, est.df) == (pytest.approx(c.effect), pytest.approx(c.se), c.df)
    assert est.se_problems > 0


def test_single_base_has_the_seed_as_unit():
    # One base at 0.5, three RL seeds at 0.9, 0.95, 0.92 (P = 248): values L(0.5) - L(seed), df = 2
    est = E.single_base(0.5, [0.9, 0.95, 0.92], problems=248)
    f = lambda a: math.log((248 * (1 - a) + 0.5) / 249)  # noqa: E731
    by_hand = [f(0.5) - f(a) for a in (0.9, 0.95, 0.92)]
    assert est.values == pytest.approx(by_hand) and (est.df, est.unit) == (2, "RL seed")
    se = statistics.stdev(by_hand) / math.sqrt(3)
    assert est.se == pytest.approx(se)
    assert est.bound(0.025, 1) == pytest.approx(statistics.mean(by_hand) - T975_2 * se)
    assert est.bound(0.05, 1) == pytest.approx(statistics.mean(by_hand) - T95_2 * se)
    assert E.start_correlation(est) is None  # every seed starts from the one base
    # with per-problem shares, the base's own measurement (common to every seed) is in the problem term
    rng = np.random.default_rng(1)
    est = E.single_base(rng.random(40), rng.random((3, 40)))
    assert est.se_problems > 0 and est.se == pytest.approx(math.hypot(est.se_units, est.se_problems))


def test_one_sided_p_bound_and_equivalence():
    est = E.Estimate(E.LOG_ERROR_RATIO, 2.0, 1.0, 4, "base", (1.0, 3.0), (0.5, 0.5))
    # one-sided: t.sf(2, 4) = 0.05806 (two-sided would be 0.1161); beyond a margin of 0.5: t.sf(1.5, 4) = 0.10400
    assert est.p_beyond(0.0, 1) == pytest.approx(0.0580583, abs=1e-6)
    assert est.p_beyond(0.5, 1) == pytest.approx(0.1039999, abs=1e-6)
    assert est.p_beyond(0.0, -1) == pytest.approx(1 - 0.0580583, abs=1e-6)
    assert est.bound(0.025, 1) == pytest.approx(2 - T975_4) and est.bound(0.025, -1) == pytest.approx(2 + T975_4)
    # p <= tail exactly when the bound clears the margin
    for margin in (-1.0, -0.7, 0.0):
        assert (est.p_beyond(margin, 1) <= 0.025) == (est.bound(0.025, 1) > margin)
    # TOST of |effect| >= 3: max(t.sf(5, 4), t.cdf(-1, 4)) = t.sf(1, 4) = 0.18695
    assert est.p_equivalent(3.0) == pytest.approx(0.1869505, abs=1e-6)
    flat = E.Estimate(E.RAW, 0.1, 0.0, 4, "base", (0.1, 0.1), (0.5, 0.5))
    assert (flat.p_beyond(0.05, 1), flat.p_beyond(0.2, 1)) == (0.0, 1.0)
    with pytest.raises(ValueError, match="direction"):
        est.p_beyond(0.0, 0)


def test_sign_test_counts_units_beyond_the_margin():
    assert E.sign_test([0.3] * 8) == E.SignTest(8, 0, 0, pytest.approx(1 / 256))
    assert E.sign_test([0.3] * 7 + [-0.1]).p == pytest.approx(9 / 256)  # 7 of 8: (1 + 8) / 256 = 0.0352
    assert E.sign_test([0.3] * 7 + [0.0]) == E.SignTest(7, 0, 1, pytest.approx(1 / 128))  # a tie is dropped
    assert E.sign_test([-0.3] * 6, direction=-1).p == pytest.approx(1 / 64)
    assert E.sign_test([-0.3] * 6, direction=1).p == 1.0
    assert E.sign_test([0.3, 0.3, 0.1], margin=0.2) == E.SignTest(2, 1, 0, pytest.approx(0.5))
    assert E.sign_test([0.3] * 5).p == pytest.approx(1 / 32) and 1 / 32 > E.TAIL  # 5 units never pass at 0.025


# ----------------------------------------------------------------------------- Yue's crossing

def _est(value: float, se: float = 0.1, df: int = 7) -> E.Estimate:
    return E.Estimate(E.LOG_ERROR_RATIO, value, se, df, "base", (value,) * 2, (0.5, 0.5))


@pytest.mark.parametrize(("low", "high", "low_ok", "high_ok"), [
    (0.5, -0.5, True, True),     # both pass: RL above at k = 1, the base above at the largest k
    (0.5, 0.0, True, False),     # only k = 1
    (0.0, -0.5, False, True),    # only the largest k
    (0.0, 0.0, False, False),    # neither
])
def test_crossing_rejects_only_when_both_parts_do(low, high, low_ok, high_ok):
    c = E.crossing(_est(low), _est(high))
    assert (c.low_passes, c.high_passes, c.rejected) == (low_ok, high_ok, low_ok and high_ok)
    assert c.p == max(c.p_low, c.p_high) == E.iut(c.p_low, c.p_high)
    # each part one-sided at the full 0.025: t.sf(5, 7) = 0.00078 passes, t.sf(0, 7) = 0.5 does not
    assert c.p_low == pytest.approx(sps.t.sf(low / 0.1, 7)) and c.p_high == pytest.approx(sps.t.sf(-high / 0.1, 7))
    # a margin on each part's own scale: 0.5 beyond 0.3 is t = 2, which passes neither at 0.025 (t.sf(2, 7) = 0.043)
    assert not E.crossing(_est(0.5), _est(-0.5), margin_low=0.3).rejected


# ----------------------------------------------------------------------------- power and seeds

def test_claim_power_is_one_sided_and_capped_at_the_headroom():
    # df large: power = Phi((effect - margin) / se - z_0.975) = Phi(2.8 - 1.95996) = Phi(0.84004) = 0.79955
    assert E.claim_power(1.0, 1e7, 2.8) == pytest.approx(0.79955, abs=1e-4)
    assert E.claim_power(1.0, 1e7, 3.0, margin=0.2) == pytest.approx(0.79955, abs=1e-4)
    # two-sided at 0.05 (stats.power) adds the far tail only; one-sided at 0.05 would be Phi(2.8 - 1.645) = 0.876
    assert E.claim_power(1.0, 1e7, 2.8, tail=0.05) == pytest.approx(0.8759, abs=1e-4)
    # capped at the headroom: from bases at 0.5 and 0.9 the raw gain has 0.3 of room on average
    room = E.headroom([0.5, 0.9], E.RAW)
    assert room == pytest.approx(0.3)
    assert E.claim_power(0.1, 1e7, 5.0, headroom=room) == E.claim_power(0.1, 1e7, 0.3)
    # the log error ratio's room from a base at 0.5 on 248 problems: L(0.5) - L(0) = log(124.5 / 0.5) = log(249)
    assert E.headroom([0.5], problems=248) == pytest.approx(math.log(249))
    assert E.headroom([0.5], problems=248, direction=-1) == pytest.approx(math.log(248.5 / 124.5))
    assert E.claim_power(0.0, 5, 0.2, margin=0.1) == 1.0 and E.claim_power(0.0, 5, 0.2, margin=0.3) == 0.0


def test_seeds_for_power_from_pilot_variance_components():
    # between-base sd 0.5, RL-seed sd 0.3, power for 0.5 beyond 0: the cheapest design and one base fewer
    plan = E.seeds_for_power(0.5, 0.3, 0.5)
    assert plan.power >= 0.8 and plan.seeds >= 2 and plan.runs == plan.bases * plan.seeds
    se = E.blocked_se(0.5, 0.3, plan.bases - 1, plan.seeds)
    assert E.claim_power(se, plan.bases - 2, 0.5) < 0.8
    assert E.blocked_se(0.5, 0.3, 4, 2) == pytest.approx(math.sqrt((0.25 + 0.09 / 2) / 4))
    # at 2 seeds per base: se^2 = 0.295 / B; B = 12 (df 11) gives 0.827, B = 11 (df 10) 0.786
    two = E.seeds_for_power(0.5, 0.3, 0.5, seeds=(2,))
    assert (two.bases, two.seeds, two.power) == (12, 2, pytest.approx(0.8268, abs=1e-4))
    # few bases, where df = bases - 1 matters: between sd 0.3, seeds' 0.2, for 1.0: se^2 = 0.11 / B; B = 3 (df 2)
    # gives 0.749 (0.919 were df 3), B = 4 (df 3) 0.968
    few = E.seeds_for_power(0.3, 0.2, 1.0, seeds=(2,))
    assert (few.bases, few.power) == (4, pytest.approx(0.9682, abs=1e-4))
    # a problem term larger than the effect can reach: no design
    assert E.seeds_for_power(0.5, 0.3, 0.5, problem_se=0.5) is None
    # single base: seeds of sd 0.3, power for 0.5
    single = E.seeds_for_power_single(0.3, 0.5)
    assert single.bases == 1 and single.power >= 0.8
    assert E.claim_power(0.3 / math.sqrt(single.seeds - 1), single.seeds - 2, 0.5) < 0.8
