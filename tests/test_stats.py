"""reasonrl.stats on hand-built outcomes: the run-level t-interval and its problem term worked out by hand,
pairing kept, bases as the unit, the MDE formula, the wording rule, Holm's adjustment, and the coverage of
the 95% interval on simulated studies with a per-run random offset (reasonrl.coverage)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from reasonrl import stats
from reasonrl.coverage import Design, coverage, simulate

T975_4, T80_4, T975_2, T975_199 = 2.776445, 0.940965, 4.302653, 1.971957  # scipy.stats.t.ppf


def test_run_level_interval_by_hand():
    # Every problem agrees within a run; runs disagree: per-run effects 0.3, -0.1, 0.2, -0.2, 0.0 (mean 0.04,
    # sample variance 0.172 / 4 = 0.043). The problem term is 0 (every problem mean is 0.04, no cell noise):
    # se = sqrt(0.043 / 5) = 0.092736, df = 4, half-width 2.776445 * se = 0.257477.
    b = np.repeat(np.array([[0.3], [-0.1], [0.2], [-0.2], [0.0]]), 50, axis=1)
    c = stats.paired(np.zeros_like(b), b)
    assert (c.effect, c.df, c.seeds, c.problems) == (pytest.approx(0.04), 4, 5, 50)
    assert c.se == pytest.approx(0.092736, abs=1e-6)
    assert (c.ci_lo, c.ci_hi) == pytest.approx((0.04 - 0.257477, 0.04 + 0.257477), abs=1e-6)
    assert c.mde == pytest.approx((T975_4 + T80_4) * 0.092736, abs=1e-5)  # 0.344738
    assert not c.excludes_zero()


def test_problem_term_counts_an_effect_concentrated_on_some_problems():
    # Three identical runs gain on the same 10 of 200 problems: the run means agree (run term 0) and there is
    # no cell noise, but a new test set would hold another share of such problems. Problem means: 10 ones,
    # 190 zeros, variance 9.5 / 199 = 0.047739; se = sqrt(0.047739 / 200) = 0.015450, df = runs - 1 = 2.
    x = np.zeros((3, 200))
    x[:, :10] = 1
    c = stats.paired(np.zeros_like(x), x)
    assert c.se == pytest.approx(0.015450, abs=1e-6) and c.df == 2
    assert (c.ci_lo, c.ci_hi) == pytest.approx((0.05 - T975_2 * 0.015450, 0.05 + T975_2 * 0.015450), abs=1e-5)


def test_cell_noise_is_a_floor_when_run_means_agree_by_chance():
    # [[1, 0], [0, 1]]: run means and problem means all 0.5, yet every cell varies. The residual mean square
    # is 1 (residuals +-0.5, one df), so se^2 >= 1 / (2 * 2): se = 0.5, never a zero-width interval.
    c = stats.paired(np.zeros((2, 2)), np.array([[1.0, 0.0], [0.0, 1.0]]))
    assert c.se == pytest.approx(0.5) and c.df == 1 and c.ci_lo < 0 < c.ci_hi


def test_one_run_is_an_interval_over_problems_only():
    # b - a is +1 on 10 problems, -1 on 10 others, 0 elsewhere: effect 0, variance 20 / 199,
    # se = sqrt(20 / 199 / 200) = 0.022417, df 199: half-width 1.971957 * se = 0.044205.
    a, b = np.zeros((1, 200)), np.zeros((1, 200))
    b[0, :10], b[0, 10:20] = 1, -1
    c = stats.paired(a, b)
    assert (c.effect, c.seeds, c.df) == (0.0, 1, 199)
    assert (c.ci_lo, c.ci_hi) == pytest.approx((-0.044205, 0.044205), abs=1e-6)
    assert stats.word(c, "A", "B") == ("no detectable difference between A and B (effect +0.000 [-0.044, 0.044], "
                                       f"MDE {c.mde:.3f}) (one run: over problems only)")


def test_pairing_matters_correlated_arms():
    # Runs of a pair share their level: run r of a solves 60, 100, 140 of 200 problems, b's run r the same
    # and 10 more. Paired, every run gains exactly 0.05 (run term 0); unpaired, the arms' run means
    # .3/.5/.7 and .35/.55/.75 spread by 0.2 each, and Welch's interval is an order of magnitude wider.
    a, b = np.zeros((3, 200)), np.zeros((3, 200))
    for r, solved in enumerate((60, 100, 140)):
        a[r, :solved], b[r, :solved + 10] = 1, 1
    p, u = stats.paired(a, b), stats.unpaired(a, b)
    assert p.effect == pytest.approx(0.05) and u.effect == pytest.approx(0.05)
    assert p.excludes_zero() and not u.excludes_zero()
    assert 10 * (p.ci_hi - p.ci_lo) < u.ci_hi - u.ci_lo


def test_bases_are_the_unit_when_runs_are_grouped():
    # Rows of group x average to [1, .5, 0, 0] and of y to [1, 1, 1, .5]: two units, means .375 and .875,
    # run term var([.375, .875]) / 2 = 0.0625, df = 1, whatever the number of runs in each base.
    x = np.array([[1, 1, 0, 0], [1, 0, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1.0]])
    iv = stats.mean_ci(x, groups=["x", "x", "y", "y"])
    assert (iv.mean, iv.df) == (0.625, 1)
    assert iv.se ** 2 == pytest.approx(0.078125)  # 0.0625 + the problem term 0.015625
    flat = stats.mean_ci(x)
    assert flat.df == 3 and flat.hi - flat.lo < iv.hi - iv.lo
    with pytest.raises(ValueError, match="groups: 3 labels for 4 rows"):
        stats.mean_ci(x, groups=["x", "x", "y"])


def test_analytic_interval_is_the_same_every_time():
    g = np.random.default_rng(5)
    a, b = g.integers(0, 2, (3, 300)), g.integers(0, 2, (3, 300))
    assert stats.paired(a, b) == stats.paired(a, b, np.random.default_rng(1))  # the rng is not used


def test_mde_formula():
    assert stats.mde(1.0) == pytest.approx(2.801585, abs=1e-5)  # df infinite: z_0.975 + z_0.8
    assert stats.mde(1.0, df=4) == pytest.approx(T975_4 + T80_4, abs=1e-5)
    assert stats.mde(0.01, alpha=0.05, power=0.5) == pytest.approx(0.0196, abs=1e-4)  # z_0.5 = 0
    assert stats.mde(0.0) is None  # no variance: no MDE, never "MDE 0.000"
    with pytest.raises(ValueError, match="se"):
        stats.mde(-1.0)


def cmp(effect, lo, hi, a=0.5, mde=0.07, seeds=5, constant=None):
    return stats.Comparison(a, a + effect, effect, lo, hi, 0.02, seeds - 1, 0.01, mde, seeds, 1000, constant)


def test_wording_rule_by_hand():
    assert stats.word(cmp(0.1, 0.05, 0.15), "base", "GRPO") == "GRPO > base by 0.100 [0.050, 0.150]"
    assert stats.word(cmp(-0.1, -0.15, -0.05), "base", "GRPO") == "base > GRPO by 0.100 [0.050, 0.150]"
    assert stats.word(cmp(0.02, -0.01, 0.05, mde=0.042), "base", "GRPO") == (
        "no detectable difference between base and GRPO (effect +0.020 [-0.010, 0.050], MDE 0.042)")
    # excludes 0 but reaches into +-0.01: a direction, flagged as possibly below the region's size
    assert stats.word(cmp(0.02, 0.005, 0.035), "a", "b") == "b > a by 0.020 [0.005, 0.035], possibly less than 0.01"
    # inside the region: never a winner by 0.001; an interval narrower than 0.01 prints four decimals
    assert stats.word(cmp(0.001, 0.0004, 0.0016), "SFT", "RFT") == (
        "SFT and RFT equivalent within ±0.01 (effect +0.0010 [0.0004, 0.0016])")
    assert stats.word(cmp(0.001, 0.0004, 0.0016), "a", "b", equivalence=0.0005).startswith("b > a by 0.0010")
    at_top = cmp(0.0, 0.0, 0.0, a=1.0, mde=None, constant=1.0)
    assert stats.word(at_top, "base", "SFT") == "not testable: both base and SFT at the ceiling"
    # the same difference in every cell (no variance, yet not constant): a fact, never an interval
    same = stats.paired(np.array([[0.0, 1.0], [1.0, 0.0]]), np.array([[0.0, 1.0], [1.0, 0.0]]))
    assert stats.word(same, "a", "b") == "a and b identical on every problem and run (no variance: no interval)"
    up = stats.paired(np.zeros((2, 3)), np.ones((2, 3)))
    assert stats.word(up, "a", "b") == "b > a by 1.000 on every problem and run (no variance: no interval)"
    assert stats.fmt_ci(-0.00004, -0.00003, 0.0001, ".4f", sign=True) == "+0.0000 [0.0000, 0.0001]"
    edge = cmp(0.1, 0.0, 0.2)  # an interval touching 0 does not exclude it
    assert not edge.excludes_zero() and stats.word(edge, "a", "b").startswith("no detectable")


def test_constant_arms_are_not_testable_and_have_no_mde():
    c = stats.paired(np.ones((3, 50)), np.ones((3, 50)))
    assert (c.constant, c.mde, c.effect, c.p) == (1.0, None, 0.0, 1.0)
    assert c.to_json()["mde"] is None


def test_holm_by_hand():
    # sorted 0.01, 0.03, 0.04, 0.5 -> 4 * 0.01, 3 * 0.03, max(0.09, 2 * 0.04), max(0.09, 0.5): one rejected at
    # 0.05, its interval at 1 - 0.05 / 4; the procedure stops there, the rest at 1 - 0.05 / 3
    adjusted, levels = stats.holm([0.01, 0.04, 0.03, 0.5])
    assert adjusted == pytest.approx([0.04, 0.09, 0.09, 0.5])
    assert levels == pytest.approx([1 - 0.05 / 4, 1 - 0.05 / 3, 1 - 0.05 / 3, 1 - 0.05 / 3])
    # 0.003 and 0.04 rejected (at 1 - 0.05/3 and 1 - 0.05/2); 0.9 not, at 1 - 0.05/(3 - 2)
    adjusted, levels = stats.holm([0.001, 0.02, 0.9])
    assert adjusted == pytest.approx([0.003, 0.04, 0.9]) and levels == pytest.approx([1 - 0.05 / 3, 0.975, 0.95])
    assert stats.holm([0.9, 0.8])[0] == [1.0, 1.0]  # 2 * 0.8 capped at 1, then the running maximum


def test_p_value_against_zero_and_beyond_a_margin():
    # effect 0.05, se 0.02, 4 df: against 0, t = 2.5 (p 0.0668); beyond +-0.01, t = 2.0 (p 0.1161)
    assert stats.p_value(0.05, 0.02, 4) == pytest.approx(0.06677, abs=1e-4)
    assert stats.p_value(-0.05, 0.02, 4, margin=0.01) == pytest.approx(0.11612, abs=1e-4)
    assert stats.p_value(0.005, 0.02, 4, margin=0.01) == 1.0  # inside the margin: capped
    assert (stats.p_value(0.2, 0.0, 4, 0.01), stats.p_value(0.0, 0.0, 4)) == (0.0, 1.0)


def test_unpaired_by_hand_and_its_cell_noise_floor():
    # two runs per arm whose means agree exactly while every cell varies: the cell noise (MS_res 1 per arm,
    # 1 / 4 each) stands in for the vanished terms, never a zero-width interval
    a, b = np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[0.0, 1.0], [1.0, 0.0]])
    c = stats.unpaired(a, b)
    assert c.effect == 0 and c.se == pytest.approx(np.sqrt(0.5)) and c.ci_lo < 0 < c.ci_hi
    # Welch over the runs: a's run means 0.2, 0.4 (var 0.02), b's 0.5, 0.9 (var 0.08): v = 0.01 + 0.04,
    # df = 0.05^2 / (0.01^2 + 0.04^2) = 1.47; the problem term is 0 (every problem gains the same on average)
    a = np.repeat(np.array([[0.2], [0.4]]), 10, axis=1)
    b = np.repeat(np.array([[0.5], [0.9]]), 10, axis=1)
    c = stats.unpaired(a, b)
    assert c.effect == pytest.approx(0.4) and c.se == pytest.approx(np.sqrt(0.05))
    assert c.df == pytest.approx(1.4706, abs=1e-3)
    with pytest.raises(ValueError, match="shared_problems=False"):
        stats.unpaired(np.zeros((2, 5)), np.zeros((2, 6)))
    assert stats.unpaired(np.zeros((2, 5)), np.ones((2, 6)), shared_problems=False).effect == 1.0


def test_grouped_means_are_the_effects_own():
    # base x has runs at 0 and 1 (b - a), base y one run at 1: per base 0.5 and 1, effect 0.75, and the
    # arms' means weigh bases the same way (b: 0.75, a: 0), not the three rows (b: 2/3)
    a, b = np.zeros((3, 4)), np.array([[0.0] * 4, [1.0] * 4, [1.0] * 4])
    c = stats.paired(a, b, groups=["x", "x", "y"])
    assert (c.a, c.b, c.effect, c.seeds, c.df) == (0.0, 0.75, 0.75, 2, 1)


def test_at_level_widens_with_the_level():  # the index's Holm-adjusted intervals come from it
    c = stats.paired(np.zeros((5, 50)), np.repeat(np.array([[0.3], [-0.1], [0.2], [-0.2], [0.0]]), 50, axis=1))
    assert c.at_level(0.95) == pytest.approx((c.ci_lo, c.ci_hi))
    lo, hi = c.at_level(0.99)
    assert lo < c.ci_lo and hi > c.ci_hi


def test_answer_json_has_exactly_the_shared_keys():
    d = cmp(0.1, 0.05, 0.15, mde=0.0712345678).to_json()
    assert list(d) == ["a", "b", "effect", "ci_lo", "ci_hi", "se", "df", "p", "mde", "seeds", "problems", "se_run",
                       "run_sd"]
    assert d["mde"] == 0.0712346 and d["seeds"] == 5 and isinstance(d["problems"], int)


def test_a_difference_equal_up_to_rounding_has_no_variance():
    # per-seed differences 0.7-0.6, 0.4-0.3, 0.3-0.2: one value up to the last bit of a float
    a, b = np.array([[0.6], [0.3], [0.2]]), np.array([[0.7], [0.4], [0.3]])
    assert len({float(x) for x in (b - a).ravel()}) > 1
    c = stats.paired(a, b)
    assert c.se == 0 and c.ci_lo == c.ci_hi == c.effect == pytest.approx(0.1) and c.mde is None
    assert stats.paired(a, b + np.array([[0.0], [0.0], [1e-9]])).se > 0  # a real spread stays


def test_kept_holds_six_places_and_six_digits():
    # the claims are judged again from these numbers: a small se keeps its digits, none reads as zero
    assert stats.kept(0.123456789) == 0.123457 and stats.kept(12.3456789) == 12.345679
    assert stats.kept(0.0000623456789) == 0.0000623457 and stats.kept(-4.2e-7) == -4.2e-7
    assert stats.kept(0.0) == 0.0 and stats.kept(0.1) == 0.1 and stats.kept(0.0999999999) == 0.1


def test_bad_inputs_fail_naming_the_argument():
    with pytest.raises(ValueError, match="same"):
        stats.paired(np.zeros((2, 5)), np.zeros((3, 5)))
    with pytest.raises(ValueError, match="NaN"):
        stats.mean_ci([[0.0, np.nan]])
    with pytest.raises(ValueError, match="no variance to estimate"):
        stats.mean_ci([[1.0]])
    with pytest.raises(ValueError, match="b: expected"):
        stats.paired(np.zeros((2, 5)), np.zeros((2, 5, 1)))


# ----------------------------------------------------------------------------- coverage in simulation

def test_simulated_truth_by_quadrature():
    assert Design(effect=0.0).truth() == pytest.approx(0.0, abs=1e-12)
    d = Design(effect=0.5, run_sd=0.0, shared_sd=0.0, difficulty_sd=0.01, difficulty_mean=0.0)
    assert d.truth() == pytest.approx(1 / (1 + np.exp(-0.5)) - 0.5, abs=1e-4)  # 0.122459
    # the run offsets widen the difficulty spread the arms are averaged over: Monte Carlo agrees within 1e-3
    d = Design(effect=0.5, run_sd=1.0, shared_sd=1.0, difficulty_sd=0.5, difficulty_mean=0.0)
    z = np.random.default_rng(0).normal(0.0, np.sqrt(0.5 ** 2 + 1 + 1), 2_000_000)
    mc = float(np.mean(1 / (1 + np.exp(-(z + 0.5))) - 1 / (1 + np.exp(-z))))
    assert d.truth() == pytest.approx(mc, abs=1e-3)
    fixed_runs = Design(effect=0.5, run_sd=0.0, shared_sd=0.0, difficulty_sd=0.5, difficulty_mean=0.0)
    assert d.truth() < fixed_runs.truth() - 0.01  # 0.088 against 0.116
    a, b = simulate(Design(runs=4, problems=30), np.random.default_rng(0))
    assert a.shape == b.shape == (4, 30) and set(np.unique(a)) <= {0.0, 1.0}


@pytest.mark.parametrize("runs", [3, 5])
@pytest.mark.parametrize("effect", [0.0, 0.5])
@pytest.mark.parametrize("paired", [True, False])
def test_interval_covers_the_truth_with_few_runs(runs, effect, paired):
    # Independent runs land at different accuracies (logit offset sd 0.5 per run, 0.5 shared by a pair),
    # problems differ in difficulty, and the effect varies over problems: 500 datasets of 300 problems.
    design = Design(runs=runs, effect=effect, run_sd=0.5, shared_sd=0.5, interaction_sd=0.5, paired=paired)
    assert 0.93 <= coverage(design, 500, seed=runs) <= 0.99  # holds, and not by being uselessly wide


def test_unpaired_problem_term_and_units_by_hand():
    # two identical runs per arm (run term 0): a solves problem 4, b problems 1, 2 and 4. The per-problem
    # difference of the arm means is [1, 1, 0, 0]: variance 1/3, over 4 problems 1/12, no cell noise.
    a = np.array([[0.0, 0.0, 0.0, 1.0]] * 2)
    b = np.array([[1.0, 1.0, 0.0, 1.0]] * 2)
    c = stats.unpaired(a, b)
    assert (c.effect, c.seeds, c.problems) == (0.5, 2, 4)
    assert c.se == pytest.approx(np.sqrt(1 / 12))
    assert stats.unpaired(a[:1], b).seeds == 1  # one run in an arm: that run's interval only
    with pytest.raises(ValueError, match="a: expected"):
        stats.unpaired(np.zeros((2, 5, 1)), np.zeros((2, 5)))
    with pytest.raises(ValueError, match="b: contains NaN"):
        stats.unpaired(np.zeros((2, 5)), np.full((2, 5), np.nan))


def test_constant_arms_are_named_by_where_they_sit():
    floor = stats.paired(np.zeros((3, 4)), np.zeros((3, 4)))
    half = stats.paired(np.full((3, 4), 0.5), np.full((3, 4), 0.5))
    assert stats.word(floor, "a", "b") == "not testable: both a and b at the floor"
    assert stats.word(half, "a", "b") == "not testable: both a and b at 0.5 on every problem and run"


def test_unpaired_cell_noise_scalar_arms_and_mixed_run_counts():
    # run means agree within each arm (no run term); the per-problem difference [.5, .5, .5, -.5] has variance
    # 1/4 over 4 problems = 1/16, less than the cell noise 1/24 + 1/24 (MS_res 1/3 per arm over 8 cells):
    # the net problem term is 0, so the cell noise stands in: se = sqrt(1/12)
    a = np.array([[1.0, 0, 0, 1], [0, 1, 0, 1]])
    b = np.array([[1.0, 1, 0, 1], [1, 1, 1, 0]])
    c = stats.unpaired(a, b)
    assert c.effect == 0.25 and c.se == pytest.approx(np.sqrt(1 / 12))
    # one number per run (P = 1): the runs alone, Welch over 0.1, 0.3, 0.2 and 0.5, 0.6, 0.7
    c = stats.unpaired([[0.1], [0.3], [0.2]], [[0.5], [0.6], [0.7]])
    assert c.se == pytest.approx(np.sqrt(0.01 / 3 + 0.01 / 3)) and c.df == pytest.approx(4.0)
    # three runs each on two problems: three units; an arm of one run cannot share the problem term
    assert stats.unpaired(np.zeros((3, 2)), np.eye(3, 2)).seeds == 3
    two, one = np.array([[0.0, 1, 1, 0], [1, 1, 0, 0]]), np.array([[1.0, 1, 1, 0]])
    # a's run term 0 (means .5, .5); problem terms added, not shared: a's (var of [.5, 1, .5, 0] / 4 less
    # its noise) and b's one run (var of [1, 1, 1, 0] / 4 = 1/16)
    c = stats.unpaired(two, one)
    a_terms = stats._terms(two)
    assert c.se ** 2 == pytest.approx(a_terms[1] + 1 / 16)


def test_seeds_for_projects_the_run_term_and_keeps_the_problem_term():
    # se 0.03 from 5 seeds: run term 0.0008 of se^2 = 0.0009 (0.004 per run), problem term 0.0001. With n
    # seeds se = sqrt(0.004 / n + 0.0001); (t_0.975 + t_0.8)(n - 1 df) * se first reaches 0.05 at n = 22
    c = stats.Comparison(0.5, 0.55, 0.05, 0.0, 0.1, 0.03, 4, 0.1, stats.mde(0.03, 4), 5, 300, None, math.sqrt(0.0008),
                         math.sqrt(0.004))
    assert stats.seeds_for(c, 0.05) == 22
    assert stats.mde(math.sqrt(0.004 / 21 + 0.0001), 20) > 0.05 >= stats.mde(math.sqrt(0.004 / 22 + 0.0001), 21)
    # 3 seeds: se = sqrt(0.004 / 3 + 0.0001) = 0.0379, (4.303 + 1.061) x se = 0.203; 4 seeds: 4.160 x 0.0332
    assert stats.seeds_for(c, 0.2) == 4 and stats.seeds_for(c, 0.21) == 3
    # a problem term of 0.0004 alone gives mde >= 2.8 x 0.02 = 0.056: no number of seeds reaches 0.05
    assert stats.seeds_for(replace(c, se_run=math.sqrt(0.0005), run_sd=math.sqrt(0.0025)), 0.05) is None
    assert stats.seeds_for(replace(c, seeds=1), 0.05) is None and stats.seeds_for(replace(c, se=0.0), 0.05) is None


def test_power_is_the_noncentral_t_and_matches_the_mde():
    from scipy import stats as sps

    # at the MDE (above the margin) a test with a huge df finds the effect in 80% of reruns: nct ~ normal
    assert stats.power(0.01, 1e7, 0.02 + stats.mde(0.01), 0.02) == pytest.approx(0.8, abs=1e-3)
    # 4 df, se 0.04, 0.1 beyond +-0.01 at 0.05 / 8: both signs of the noncentral t past t_{1 - 0.05/16, 4}
    crit = sps.t.ppf(1 - 0.05 / 16, 4)
    both = sps.nct.sf(crit, 4, 0.09 / 0.04) + sps.nct.sf(crit, 4, -0.11 / 0.04)
    assert stats.power(0.04, 4, 0.1, 0.01, 0.05 / 8) == pytest.approx(both) and 0.05 < both < 0.2
    assert stats.power(0.04, 4, -0.1, 0.01, 0.05 / 8) == pytest.approx(both)  # the sign of the effect is moot
    assert stats.power(0.0, 4, 0.1, 0.01) == 1.0 and stats.power(0.0, 4, 0.005, 0.01) == 0.0
    # an effect inside the margin: the test rejects less often than alpha
    assert stats.power(0.01, 30, 0.0, 0.01) < 0.05


def test_seeds_for_power_is_the_first_count_that_reaches_the_target():
    # the comparison of the test above: run_sd^2 0.004, problem term 0.0001
    c = stats.Comparison(0.5, 0.55, 0.05, 0.0, 0.1, 0.03, 4, 0.1, stats.mde(0.03, 4), 5, 300, None, math.sqrt(0.0008),
                         math.sqrt(0.004))
    n = stats.seeds_for_power(c, 0.1, 0.01, 0.005)
    assert n is not None and n > 5

    def at(k):
        return stats.power(math.sqrt(0.004 / k + 0.0001), k - 1, 0.1, 0.01, 0.005)

    assert at(n) >= 0.8 > at(n - 1)
    # a problem term that alone leaves power below 0.8: none
    assert stats.seeds_for_power(replace(c, se=0.045, se_run=0.0), 0.1, 0.01, 0.005) is None
    assert stats.seeds_for_power(replace(c, seeds=1), 0.1, 0.01, 0.005) is None


def test_comparisons_carry_their_run_term():
    a = np.array([[0, 1, 0, 1], [1, 1, 0, 0], [0, 0, 1, 1]], dtype=float)
    b = a + np.array([[0.1], [0.3], [0.2]])  # b - a: run means 0.1, 0.3, 0.2 on every problem
    cmp = stats.paired(a, b)
    assert cmp.se_run == pytest.approx(math.sqrt(0.01 / 3)) and cmp.se == pytest.approx(cmp.se_run)
    assert cmp.run_sd == pytest.approx(0.1) and cmp.to_json()["se_run"] == stats.kept(cmp.se_run)
    assert stats.paired(a[:1], b[:1]).se_run == 0.0  # one run: no run term


def test_an_unpaired_comparison_keeps_each_arms_run_spread():
    # arm a: 3 runs at 0, 0.1, 0.2 on every problem (run variance 0.01); arm b: 6 runs at 0.5, 0.6, 0.7
    # twice (0.008). The run term is 0.01 / 3 + 0.008 / 6; one run per arm adds 0.01 + 0.008
    a = np.repeat(np.array([[0.0], [0.1], [0.2]]), 4, axis=1)
    b = np.repeat(np.array([[0.5], [0.6], [0.7]] * 2), 4, axis=1)
    cmp = stats.unpaired(a, b)
    assert cmp.se_run == pytest.approx(math.sqrt(0.01 / 3 + 0.008 / 6)) and cmp.se == pytest.approx(cmp.se_run)
    assert cmp.run_sd == pytest.approx(math.sqrt(0.018)) and cmp.seeds == 3
    # with n runs per arm: se = sqrt(0.018 / n), mde with n - 1 df: n = 11 gives 0.126, n = 12 3.077 x 0.0387 = 0.119
    assert stats.seeds_for(cmp, 0.125) == 12
