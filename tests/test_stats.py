"""reasonrl.stats on hand-built outcomes: intervals that exclude or cover 0 as they should, pairing kept,
both seeds and problems resampled, the MDE formula and the wording rule."""

from __future__ import annotations

import numpy as np
import pytest

from reasonrl import stats

Z = 1.959964 + 0.841621  # z_{0.975} + z_{0.80}


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def first_k_correct(k: int, seeds: int = 3, problems: int = 200) -> np.ndarray:
    x = np.zeros((seeds, problems))
    x[:, :k] = 1.0
    return x


def test_pairing_matters_correlated_arms():
    # Both arms solve the same 100 problems on every seed; b also solves 10 more. Paired, the effect is
    # 1 on 10 of 200 problems: se = sqrt(0.05 * 0.95 / 200) = 0.0154, 95% CI ~ 0.05 +- 0.030. Unpaired,
    # each arm is a coin near 0.5 over problems: se = sqrt(2 * 0.25 / 200) = 0.050, CI ~ 0.05 +- 0.098.
    a, b = first_k_correct(100), first_k_correct(110)
    p = stats.paired(a, b, rng())
    assert (p.a, p.b, p.effect, p.seeds, p.problems) == (0.5, 0.55, pytest.approx(0.05), 3, 200)
    assert 0.015 <= p.ci_lo <= 0.03 and 0.07 <= p.ci_hi <= 0.085
    assert p.mde == pytest.approx(Z * 0.0154, rel=0.12)
    assert p.excludes_zero()
    u = stats.unpaired(a, b, rng())
    assert u.effect == pytest.approx(0.05)
    assert -0.07 <= u.ci_lo < 0 < 0.13 <= u.ci_hi <= 0.17
    assert not u.excludes_zero()


def test_known_difference_excludes_zero():
    # b = a + 0.3 + unit noise on 5 x 400 cells: the effect's se is 1/sqrt(2000) = 0.022 (up to sqrt(2)
    # wider from the crossed resampling), so the interval sits well away from 0.
    g = np.random.default_rng(1)
    a = g.normal(size=(5, 400))
    b = a + 0.3 + g.normal(size=(5, 400))
    c = stats.paired(a, b, rng())
    assert c.effect == pytest.approx(0.3, abs=0.05)
    assert 0.3 - 0.1 < c.ci_lo < c.effect < c.ci_hi < 0.3 + 0.1
    assert c.excludes_zero()
    assert stats.word(c, "A", "B").startswith(f"B > A by {c.effect:.3f} [")


def test_null_difference_covers_zero_with_its_mde():
    # b - a is +1 on 10 problems, -1 on 10 others, 0 elsewhere: effect 0, sd sqrt(20/200),
    # se = sqrt(0.1 / 200) = 0.0224, CI ~ +-0.044, MDE = 2.80 * 0.0224 = 0.063.
    a = np.zeros((1, 200))
    b = np.zeros((1, 200))
    b[0, :10], b[0, 10:20] = 1, -1
    c = stats.paired(a, b, rng())
    assert c.effect == 0.0 and c.ci_lo < 0 < c.ci_hi
    assert c.ci_lo == pytest.approx(-0.044, abs=0.008) and c.ci_hi == pytest.approx(0.044, abs=0.008)
    assert c.mde == pytest.approx(0.0627, rel=0.1)
    assert stats.word(c, "A", "B") == (f"no detectable difference between A and B (effect +0.000 "
                                       f"[{c.ci_lo:.3f}, {c.ci_hi:.3f}], MDE {c.mde:.3f})")


def test_seeds_are_resampled_too():
    # Every problem agrees within a seed; seeds disagree: per-seed effects 0.3, -0.1, 0.2, -0.2, 0.0
    # (mean 0.04, population sd 0.1855, se 0.083). Resampling problems alone would give [0.04, 0.04].
    b = np.repeat(np.array([[0.3], [-0.1], [0.2], [-0.2], [0.0]]), 50, axis=1)
    c = stats.paired(np.zeros_like(b), b, rng())
    assert c.effect == pytest.approx(0.04)
    assert c.ci_lo < -0.05 and c.ci_hi > 0.13
    assert c.mde == pytest.approx(Z * 0.083, rel=0.15)


def test_single_arm_interval():
    # 0/1 outcomes, mean 0.5 over 3 identical seeds x 200 problems: se = sqrt(0.25 / 200) = 0.0354
    iv = stats.mean_ci(first_k_correct(100), rng())
    assert iv.mean == 0.5 and iv.se == pytest.approx(0.0354, rel=0.1)
    assert iv.lo == pytest.approx(0.5 - 0.069, abs=0.01) and iv.hi == pytest.approx(0.5 + 0.069, abs=0.01)
    one = stats.mean_ci([1.0, 1.0, 1.0, 1.0], rng())  # a 1-D array is one seed
    assert (one.mean, one.lo, one.hi) == pytest.approx((1.0, 1.0, 1.0))


def test_same_generator_same_numbers():
    g = np.random.default_rng(5)
    a, b = g.integers(0, 2, (3, 300)), g.integers(0, 2, (3, 300))
    assert stats.paired(a, b, rng(7)) == stats.paired(a, b, rng(7))
    assert stats.paired(a, b, rng(7)).ci_lo != stats.paired(a, b, rng(8)).ci_lo


def test_mde_formula():
    assert stats.mde(1.0) == pytest.approx(2.801585, abs=1e-5)
    assert stats.mde(0.01, alpha=0.05, power=0.5) == pytest.approx(0.0196, abs=1e-4)  # z_0.5 = 0
    assert stats.mde(0.0) == 0.0
    with pytest.raises(ValueError, match="se"):
        stats.mde(-1.0)


def test_wording_rule_by_hand():
    up = stats.Comparison(0.5, 0.6, 0.1, 0.05, 0.15, 0.07, 5, 1000)
    down = stats.Comparison(0.6, 0.5, -0.1, -0.15, -0.05, 0.07, 5, 1000)
    flat = stats.Comparison(0.5, 0.52, 0.02, -0.01, 0.05, 0.042, 5, 1000)
    assert stats.word(up, "base", "GRPO") == "GRPO > base by 0.100 [0.050, 0.150]"
    assert stats.word(down, "base", "GRPO") == "base > GRPO by 0.100 [0.050, 0.150]"
    assert stats.word(flat, "base", "GRPO") == ("no detectable difference between base and GRPO "
                                                "(effect +0.020 [-0.010, 0.050], MDE 0.042)")
    edge = stats.Comparison(0.5, 0.6, 0.1, 0.0, 0.2, 0.1, 5, 1000)  # an interval touching 0 does not exclude it
    assert not edge.excludes_zero() and stats.word(edge, "a", "b").startswith("no detectable")


def test_answer_json_has_exactly_the_shared_keys():
    d = stats.Comparison(0.5, 0.6, 0.1, 0.05, 0.15, 0.0712345678, 5, 1000).to_json()
    assert list(d) == ["a", "b", "effect", "ci_lo", "ci_hi", "mde", "seeds", "problems"]
    assert d["mde"] == 0.071235 and d["seeds"] == 5 and isinstance(d["problems"], int)


def test_bad_inputs_fail_naming_the_argument():
    with pytest.raises(ValueError, match="same"):
        stats.paired(np.zeros((2, 5)), np.zeros((3, 5)), rng())
    with pytest.raises(ValueError, match="NaN"):
        stats.mean_ci([[0.0, np.nan]], rng())
    with pytest.raises(ValueError, match="nothing to resample"):
        stats.mean_ci([[1.0]], rng())
    with pytest.raises(ValueError, match="b: expected"):
        stats.paired(np.zeros((2, 5)), np.zeros((2, 5, 1)), rng())
