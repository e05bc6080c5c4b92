"""Run 2's estimands (issue 70): the per-base log error ratio with the raw effect beside it, the exact sign test
across bases, each scale's correlation with the start, the single-base interval whose unit is the RL seed, Yue's
crossing as an intersection-union test, and the power and seeds of a claim on its own scale.

**The log error ratio.** A model's error on a set is e = 1 - accuracy (pass@1 or pass@k); RL's gain over its base
on this scale is log(e_base / e_RL): +log 2 halves the error wherever the base starts. Run 1's raw gains (RL at
0.985-0.990 from bases at 0.23-0.90) were mostly the base's headroom (correlation with the start about -1); the
log error ratio compares a base at 0.2 with one at 0.9 on one footing.

**At 0 and 1: count problems, not samples.** An error of 0 (RL solves every problem of 248, or every sample)
makes log(e_base / 0) infinite. The error is measured on P problems, and P, not P x N samples, is the number of
independent draws behind it (samples of one problem share its difficulty). So the error is read as a count of
unsolved problems, P x e (fractional for pass@1: a share of each problem's samples), with half a problem added
(the Haldane-Anscombe correction of a log of a count, which also makes E[log(X + 0.5)] close to log E[X] for a
Poisson count of a few):

    error_rate(accuracy, P) = (P (1 - accuracy) + 0.5) / (P + 1)

0 of 248 unsolved reads 0.5 / 249 = 0.0020, inside the one-sided 95% Clopper-Pearson bound 0.0120 that 0 of 248
allows (`error_upper_bound`), and all 248 unsolved reads 248.5 / 249 = 0.998. So the log error ratio of one pair
lies in [-log(2P + 1), log(2P + 1)] = [-6.21, 6.21] at P = 248, finite and bounded. The estimand is defined on this
scale at the registered P: log of the population error plus half a problem, L(e) = log((P e + 0.5) / (P + 1)). It
is a monotone function of the error, so its sign is the sign of log(e_base / e_RL), and above a few problems' worth
of error it is that ratio (at e = 0.04, ten problems of 248, the two differ by 0.045 in log). Margins of a claim on
this scale are stated on it. `problems=None` gives the uncorrected ratio of sample rates (infinite at an error of
0: it raises there).

**Units and intervals.** Cross-base (`blocked`): each base is one block; within it the value is the mean over its
RL seeds (>= 2 by default) of L(e_base) - L(e_seed); the estimate is the mean over bases with a t-interval on
df = bases - 1. Single-base (`single_base`): the RL seed is the unit, df = seeds - 1. Where per-problem shares are
given ((units, problems) arrays), the test set's own sampling is added as in `reasonrl.stats`: the per-problem
influence of each unit's value (the delta method: L'(e) (e_p - e) for each arm, the base minus its seeds' mean) is
a (units, problems) table whose rows average 0; its problem term is var(column means) / P less the residual mean
square / (units P), floored at 0 (the cell noise and the unit-by-problem spread are in the unit term already). On
the raw scale this is exactly `stats.paired` with the seeds grouped by base. With per-unit summaries only (a share
per unit) there is no problem term: the interval then holds for this test set.

**One-sided.** A claim with a direction is tested one-sided at `TAIL` = 0.025 per direction (the tail of a two-sided
95% interval: the direction a claim names and the opposite one together spend 0.05; reasonrl.studies.gatekeeping).
`Estimate.p_beyond(margin, direction)` is the p of "the effect is at most `margin` in `direction`", by t.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

LOG_ERROR_RATIO = "log error ratio"
RAW = "raw gain"
SCALES = (LOG_ERROR_RATIO, RAW)
TAIL = 0.025  # one-sided level of every directional test: the tail of a two-sided 95% interval
POWER = 0.8
HALF = 0.5  # problems added to the unsolved count (and 2 x HALF to the problems): the rule at 0 and 1


def error_rate(accuracy, problems: int):
    """The error 1 - accuracy measured on `problems` problems, read as unsolved problems plus half a problem:
    (P (1 - accuracy) + 0.5) / (P + 1). Finite and in (0, 1) at accuracy 0 and 1."""
    acc = _shares(accuracy, "accuracy")
    if problems is None or problems < 1:
        raise ValueError(f"problems={problems!r}: the error is counted on >= 1 problems")
    return (problems * (1 - acc) + HALF) / (problems + 2 * HALF)


def log_error_ratio(base, rl, problems: int | None):
    """log(e_base / e_RL): > 0 where RL errs less. `problems`: the set's problem count, for the rule at 0 and 1
    (`error_rate`); None: the uncorrected ratio of the sample rates, which raises where an error is 0."""
    if problems is None:
        e_b, e_r = 1 - _shares(base, "base"), 1 - _shares(rl, "rl")
        if np.any(e_b == 0) or np.any(e_r == 0):
            raise ValueError("an error of 0 has no log: give `problems` (the rule at 0 and 1, count problems)")
        return np.log(e_b) - np.log(e_r)
    return np.log(error_rate(base, problems)) - np.log(error_rate(rl, problems))


def error_upper_bound(unsolved: int, problems: int, tail: float = 0.05) -> float:
    """The one-sided (1 - tail) Clopper-Pearson upper bound of an error rate from `unsolved` of `problems`
    problems (scipy.stats.binomtest): 0 of 248 at 5% gives 0.0120."""
    ci = stats.binomtest(unsolved, problems).proportion_ci(confidence_level=1 - 2 * tail, method="exact")
    return float(ci.high)


@dataclass(frozen=True)
class Estimate:
    """One claim's estimate on its scale: the mean over `units` independent units (bases, or one base's RL seeds)
    with its se and df, the per-unit values and the base accuracy each unit started from."""

    scale: str
    value: float
    se: float
    df: float
    unit: str  # "base" (cross-base, blocked) or "RL seed" (single base)
    values: tuple[float, ...]  # per unit: a base's mean over its seeds, or one seed's value
    starts: tuple[float, ...]  # per unit: its base's accuracy
    se_units: float = 0.0  # the between-unit part of se (more units shrink it)
    se_problems: float = 0.0  # the test set's part (0: per-unit summaries, no problem term)

    @property
    def units(self) -> int:
        return len(self.values)

    def p_beyond(self, margin: float = 0.0, direction: int = 1) -> float:
        """One-sided p of "direction x effect <= margin" against "> margin" (t on df); se 0: 0 or 1."""
        _direction(direction)
        excess = direction * self.value - margin
        if self.se == 0:
            return 0.0 if excess > 0 else 1.0
        return float(stats.t.sf(excess / self.se, self.df))

    def p_equivalent(self, margin: float) -> float:
        """Two one-sided tests of |effect| >= margin (TOST): the larger p; below a level the (1 - 2 level)
        interval lies inside +-margin."""
        return max(self.p_beyond(-margin, 1), self.p_beyond(-margin, -1))

    def bound(self, tail: float = TAIL, direction: int = 1) -> float:
        """The one-sided (1 - tail) bound a claim in `direction` must clear: the lower bound for +1, the upper for
        -1. `p_beyond(m, direction) <= tail` exactly when direction x bound > m."""
        _direction(direction)
        return self.value - direction * _t(1 - tail, self.df) * self.se

    def interval(self, tail: float = TAIL) -> tuple[float, float]:
        """The two-sided interval with `tail` in each tail (0.025: 95%)."""
        return self.bound(tail, 1), self.bound(tail, -1)


def _t(q: float, df: float) -> float:
    return float(stats.t.ppf(q, df)) if math.isfinite(df) else float(stats.norm.ppf(q))


def _direction(direction: int) -> None:
    if direction not in (1, -1):
        raise ValueError(f"direction={direction!r}: +1 (RL above the base) or -1 (below)")


def _shares(x, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=float)
    if arr.size == 0 or not np.all(np.isfinite(arr)) or np.any(arr < 0) or np.any(arr > 1):
        raise ValueError(f"{name}: shares in [0, 1] expected, got {x!r}")
    return arr


def _scale(scale: str, problems: int | None):
    """(f, f') of the scale on errors: the effect of a pair is f(e_base) - f(e_RL)."""
    if scale == RAW:
        return (lambda e: e), (lambda e: np.ones_like(e))
    if scale != LOG_ERROR_RATIO:
        raise ValueError(f"scale={scale!r}: one of {SCALES}")
    if problems is None:  # uncorrected sample rates (summaries only)
        return _log_positive, (lambda e: 1 / e)
    return (lambda e: np.log((problems * e + HALF) / (problems + 2 * HALF))), (lambda e: problems / (problems * e
                                                                                                       + HALF))


def _log_positive(e):
    if np.any(np.asarray(e) == 0):
        raise ValueError("an error of 0 has no log: give `problems` (the rule at 0 and 1, count problems)")
    return np.log(e)


def _arms(base, rl, problems: int | None, single: bool):
    """Base errors as a list of (P,) or () arrays, RL errors as a list of (S, P) or (S,) arrays, and P (the
    per-problem count, or `problems` for summaries)."""
    base = _shares(base, "base")
    if single:
        base, rl = base[None], [rl]
    rl = [_shares(r, "rl") for r in rl]
    per_problem = base.ndim == 2
    if len(rl) != base.shape[0]:
        raise ValueError(f"rl: {len(rl)} bases of RL runs for {base.shape[0]} bases")
    for r in rl:
        if r.ndim != (2 if per_problem else 1) or (per_problem and r.shape[1] != base.shape[1]) or r.shape[0] == 0:
            raise ValueError(f"rl: each base's runs as (seeds,{' problems' if per_problem else ''}), got {r.shape}"
                             f" beside a base of shape {base.shape[1:]}")
    if per_problem:
        if problems is not None and problems != base.shape[1]:
            raise ValueError(f"problems={problems}: the shares are given on {base.shape[1]} problems")
        problems = base.shape[1]
    return [1 - b for b in base], [1 - r for r in rl], problems


def _means(eb: np.ndarray, er: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A base's error and its seeds' (S,) errors: averaged over problems where given per problem."""
    return (eb.mean(), er.mean(axis=1)) if eb.ndim == 1 else (eb, er)


def _estimate(scale: str, unit: str, values: np.ndarray, influence: np.ndarray | None, starts) -> Estimate:
    """Mean of the per-unit values with se^2 = var(values) / R + the problem term of `influence` (R, P)."""
    r = len(values)
    if r < 2:
        raise ValueError(f"{r} {unit}: an interval over {unit}s needs >= 2")
    v_units = float(np.var(values, ddof=1)) / r
    v_prob = 0.0
    if influence is not None and influence.shape[1] > 1:
        p = influence.shape[1]
        col = influence.mean(axis=0)
        ms_res = float(((influence - col) ** 2).sum()) / ((r - 1) * (p - 1))
        v_prob = max(0.0, float(np.var(col, ddof=1)) / p - ms_res / (r * p))
    return Estimate(scale, float(np.mean(values)), math.sqrt(v_units + v_prob), r - 1, unit,
                    tuple(float(v) for v in values), tuple(float(s) for s in starts), math.sqrt(v_units),
                    math.sqrt(v_prob))


def blocked(base, rl: Sequence, scale: str = LOG_ERROR_RATIO, problems: int | None = None,
            min_seeds: int = 2) -> Estimate:
    """Cross-base: RL against its own base with the base as the block. `base`: (bases,) accuracies or (bases,
    problems) per-problem shares; `rl`: per base, its RL seeds' (seeds,) accuracies or (seeds, problems) shares.
    Each base's value is the mean over its seeds of f(e_base) - f(e_seed) (the log error ratio, or the raw gain
    accuracy_RL - accuracy_base); the estimate is the mean over bases, df = bases - 1, with the problem term where
    shares are per problem. `problems`: the problem count behind summaries, for the log scale's rule at 0 and 1
    (None with summaries: the uncorrected log of the sample rates, which raises at an error of 0)."""
    e_base, e_rl, problems = _arms(base, rl, problems, single=False)
    if min(len(r) for r in e_rl) < min_seeds:
        raise ValueError(f"rl: a base with {min(len(r) for r in e_rl)} RL seeds; the design needs >= {min_seeds} "
                         f"per base (min_seeds)")
    f, df = _scale(scale, problems)
    values, rows = [], []
    for eb, er in zip(e_base, e_rl):
        mb, mr = _means(eb, er)
        values.append(float(f(mb) - f(mr).mean()))
        if eb.ndim == 1:
            rows.append(df(mb) * (eb - mb) - (df(mr)[:, None] * (er - mr[:, None])).mean(axis=0))
    starts = [1 - float(np.mean(eb)) for eb in e_base]
    return _estimate(scale, "base", np.array(values), np.array(rows) if rows else None, starts)


def single_base(base, rl, scale: str = LOG_ERROR_RATIO, problems: int | None = None) -> Estimate:
    """Single base: its RL seeds are the units. `base`: its accuracy, or (problems,) shares; `rl`: (seeds,)
    accuracies or (seeds, problems) shares. Each seed's value is f(e_base) - f(e_seed); df = seeds - 1. The base's
    own measurement is common to every seed: with per-problem shares it is in the problem term."""
    e_base, e_rl, problems = _arms(base, rl, problems, single=True)
    f, df = _scale(scale, problems)
    eb, er = e_base[0], e_rl[0]
    mb, mr = _means(eb, er)
    values = f(mb) - f(mr)
    rows = df(mb) * (eb - mb) - df(mr)[:, None] * (er - mr[:, None]) if eb.ndim == 1 else None
    return _estimate(scale, "RL seed", np.atleast_1d(values), rows, [1 - float(mb)] * len(mr))


@dataclass(frozen=True)
class SignTest:
    """The exact sign test across units: how many lie beyond the margin in the claimed direction, how many short
    of it, how many exactly at it (dropped), and the one-sided binomial p (scipy.stats.binomtest, 1/2)."""

    beyond: int
    short: int
    ties: int
    p: float


def sign_test(values, direction: int = 1, margin: float = 0.0) -> SignTest:
    """Exact one-sided sign test that the units' values lie beyond `margin` in `direction` more often than not:
    8 of 8 gives p = 0.5^8 = 0.0039. An `Estimate` gives its per-unit values."""
    _direction(direction)
    v = direction * np.asarray(values.values if isinstance(values, Estimate) else values, dtype=float) - margin
    beyond, short = int((v > 0).sum()), int((v < 0).sum())
    n = beyond + short
    p = float(stats.binomtest(beyond, n, 0.5, alternative="greater").pvalue) if n else 1.0
    return SignTest(beyond, short, len(v) - n, p)


def start_correlation(est: Estimate) -> float | None:
    """Pearson's r across units between the estimate's per-unit values and the base accuracy each started from
    (scipy.stats.pearsonr): how much a scale reads the start rather than RL. None with fewer than 3 units or a
    side that does not vary (one base: every seed starts from it)."""
    v, s = np.array(est.values), np.array(est.starts)
    if len(v) < 3 or np.ptp(v) == 0 or np.ptp(s) == 0:
        return None
    return float(stats.pearsonr(v, s).statistic)


@dataclass(frozen=True)
class Crossing:
    """Yue's crossing as an intersection-union test: RL above the base at k = 1 (p_low) AND the base above RL at
    the largest k (p_high), each one-sided at `tail`. It rejects only when both do; its p is the larger."""

    p_low: float
    p_high: float
    tail: float = TAIL

    @property
    def p(self) -> float:
        return iut(self.p_low, self.p_high)

    @property
    def low_passes(self) -> bool:
        return self.p_low <= self.tail

    @property
    def high_passes(self) -> bool:
        return self.p_high <= self.tail

    @property
    def rejected(self) -> bool:
        return self.p <= self.tail


def iut(*pvalues: float) -> float:
    """The p of an intersection-union test: the largest of its parts' (each tested at the full level)."""
    if not pvalues:
        raise ValueError("an intersection-union test needs at least one part")
    return max(pvalues)


def crossing(low: Estimate, high: Estimate, margin_low: float = 0.0, margin_high: float = 0.0,
             tail: float = TAIL) -> Crossing:
    """The IUT from RL-minus-base estimates at k = 1 (`low`, claimed > margin_low) and at the largest k (`high`,
    claimed < -margin_high), each on its own scale."""
    return Crossing(low.p_beyond(margin_low, 1), high.p_beyond(margin_high, -1), tail)


# ----------------------------------------------------------------------------- power, before the run

def headroom(starts, scale: str = LOG_ERROR_RATIO, direction: int = 1, problems: int | None = None) -> float:
    """The largest effect the scale allows in `direction` from these base accuracies, averaged over the bases: raw,
    1 - start (or start, for RL below the base); the log error ratio, L(e_base) - L(0) (or L(1) - L(e_base)) with
    L(e) = log((P e + 0.5) / (P + 1)). A claim's `power_for` is capped at it."""
    _direction(direction)
    e = 1 - _shares(starts, "starts")
    f, _ = _scale(scale, problems)
    room = f(e) - f(np.zeros_like(e)) if direction > 0 else f(np.ones_like(e)) - f(e)
    return float(np.mean(room))


def claim_power(se: float, df: float, power_for: float, margin: float = 0.0, tail: float = TAIL,
                headroom: float | None = None) -> float:
    """Pre-run power of the one-sided test at `tail` that the effect exceeds `margin` (on the claim's scale), when
    the true effect is `power_for` capped at `headroom`: the t-statistic is noncentral t with df and noncentrality
    (effect - margin) / se (scipy.stats.nct). With se 0 the test is exact: 1 or 0."""
    effect = power_for if headroom is None else min(power_for, headroom)
    if se < 0:
        raise ValueError(f"se={se}: must be >= 0")
    if se == 0:
        return float(effect > margin)
    return float(stats.nct.sf(_t(1 - tail, df), df, (effect - margin) / se))


def blocked_se(between_sd: float, within_sd: float, bases: int, seeds: int, problem_se: float = 0.0) -> float:
    """The se of a blocked estimate with `bases` bases of `seeds` RL seeds each, from pilot variance components:
    the between-base sd of a base's value, the sd between one base's RL seeds, and the problem term (which more
    runs do not shrink): sqrt((between^2 + within^2 / seeds) / bases + problem_se^2)."""
    return math.sqrt((between_sd ** 2 + within_sd ** 2 / seeds) / bases + problem_se ** 2)


@dataclass(frozen=True)
class SeedPlan:
    """A design that reaches the target power: `bases` bases with `seeds` RL seeds each (bases = 1: a single-base
    claim, seeds its units), the RL runs that takes, and its power."""

    bases: int
    seeds: int
    runs: int
    power: float


def seeds_for_power(between_sd: float, within_sd: float, power_for: float, margin: float = 0.0,
                    tail: float = TAIL, problem_se: float = 0.0, headroom: float | None = None,
                    target: float = POWER, seeds: Sequence[int] = (2, 3, 4), most_bases: int = 200,
                    base_cost: float = 1.0) -> SeedPlan | None:
    """The cheapest cross-base design (bases x RL seeds per base, each choice in `seeds`, >= 2) whose blocked test
    has `target` power for `power_for` (capped at `headroom`) beyond `margin` at `tail`, df = bases - 1, from pilot
    variance components (`blocked_se`). The cost of a design is bases x (base_cost + seeds): a base is trained
    once, as `base_cost` RL runs. None when `most_bases` bases do not reach it (the problem term alone is too large,
    or the headroom is within the margin)."""
    plans = []
    for s in seeds:
        if s < 2:
            raise ValueError(f"seeds={seeds!r}: a cross-base design takes >= 2 RL seeds per base")
        for b in range(2, most_bases + 1):
            pw = claim_power(blocked_se(between_sd, within_sd, b, s, problem_se), b - 1, power_for, margin, tail,
                             headroom)
            if pw >= target:
                plans.append(SeedPlan(b, s, b * s, pw))
                break
    return min(plans, key=lambda p: (p.bases * (base_cost + p.seeds), p.runs), default=None)


def seeds_for_power_single(within_sd: float, power_for: float, margin: float = 0.0, tail: float = TAIL,
                           problem_se: float = 0.0, headroom: float | None = None, target: float = POWER,
                           most: int = 400) -> SeedPlan | None:
    """RL seeds of one base (the unit, df = seeds - 1) that give `target` power, as `seeds_for_power`; None past
    `most`."""
    for s in range(2, most + 1):
        pw = claim_power(math.sqrt(within_sd ** 2 / s + problem_se ** 2), s - 1, power_for, margin, tail, headroom)
        if pw >= target:
            return SeedPlan(1, s, s, pw)
    return None
