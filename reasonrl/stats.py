"""Uncertainty of study answers: bootstrap intervals over seeds and problems, paired comparisons,
the minimal detectable effect of a design, and the wording rule of an answer.

An arm's outcomes are an array shaped (seeds, problems): one 0/1 outcome (or score) per seed of the
arm and per problem of a fixed test set. Two arms that share problems and seeds compare paired: the
effect array is `b - a` cell by cell, so what the two arms have in common (an easy problem, a lucky
seed) cancels before any resampling.

The interval is scipy's percentile bootstrap with the seeds and the problems resampled independently
of each other (a crossed, two-way bootstrap): scipy draws one index vector over seeds and one over
problems per resample, and the statistic is the mean of the effect over the drawn cells. A dimension of
size one is not resampled (a single seed gives an interval over problems only). Resampling both ways
counts the seed-by-problem noise twice (Owen's "pigeonhole" bootstrap), so the interval is
conservative: for pure cell noise its standard error is up to sqrt(2) too wide; for effects shared by
a problem across seeds, or by a seed across problems, it is about right.

Minimal detectable effect (two-sided level alpha, power 1 - beta):

    mde = (z_{1 - alpha/2} + z_{1 - beta}) * se        (1.96 + 0.84 = 2.80 times se at 0.05 / 80%)

where `se` is the bootstrap standard error of the effect. It is the true effect this design would
detect in 80% of reruns; an answer that finds no difference reports it as the design's resolution.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

CONFIDENCE = 0.95
RESAMPLES = 2000  # percentile intervals of a mean: the 2.5% / 97.5% quantiles settle to ~0.1 se here
POWER = 0.8
# The keys of every answer file reports/<study>/answers/<pair>.json: one schema, so `dvc metrics show` is a table
ANSWER_KEYS = ("a", "b", "effect", "ci_lo", "ci_hi", "mde", "seeds", "problems")


@dataclass(frozen=True)
class Interval:
    """A mean with its bootstrap interval and standard error."""

    mean: float
    lo: float
    hi: float
    se: float

    def excludes_zero(self) -> bool:
        return self.lo > 0 or self.hi < 0


@dataclass(frozen=True)
class Comparison:
    """Arm b against arm a, paired by seed and problem; the keys are those of the answer files."""

    a: float  # mean of arm a
    b: float  # mean of arm b
    effect: float  # b - a
    ci_lo: float
    ci_hi: float
    mde: float  # minimal detectable effect of the design
    seeds: int
    problems: int

    def excludes_zero(self) -> bool:
        return self.ci_lo > 0 or self.ci_hi < 0

    def to_json(self) -> dict:
        """The flat answer-file dict (ANSWER_KEYS), floats rounded to 6 places for stable diffs."""
        d = asdict(self)
        return {k: round(d[k], 6) if isinstance(d[k], float) else d[k] for k in ANSWER_KEYS}


def as_outcomes(x, name: str = "outcomes") -> np.ndarray:
    """A float array shaped (seeds, problems); a 1-D array is one seed. Rejects empty and non-finite."""
    arr = np.asarray(x, dtype=float)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.size == 0:
        raise ValueError(f"{name}: expected a non-empty (seeds, problems) array, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: contains NaN or infinite values")
    return arr


def _cell_means(arrays: list[np.ndarray], idx: list[np.ndarray], dims: list[tuple[int, int]]) -> np.ndarray:
    """Mean of each array over the resampled cells, one value per resample (B,).

    idx[j] holds resampled indices (B, size) for dimension dims[j] = (array, axis); a dimension that is
    not resampled keeps every index. Counting how often each index was drawn turns the mean over the
    drawn cells into w_seeds @ X @ w_problems, so no (B, seeds, problems) array is built."""
    out = []
    for i, x in enumerate(arrays):
        weights = []
        for axis in (0, 1):
            size = x.shape[axis]
            where = [j for j, d in enumerate(dims) if d == (i, axis)]
            if where:
                drawn = idx[where[0]].astype(int)  # (B, size)
                w = np.zeros((drawn.shape[0], size))
                np.add.at(w, (np.arange(drawn.shape[0])[:, None], drawn), 1.0)
                weights.append(w / size)
            else:
                weights.append(np.full((1, size), 1.0 / size))
        out.append(np.einsum("bs,sp,bp->b", weights[0], x, weights[1]))
    return np.stack(out)  # (len(arrays), B)


def _bootstrap(arrays: list[np.ndarray], combine, rng: np.random.Generator, resamples: int,
               confidence: float) -> Interval:
    """Bootstrap `combine(means of arrays)`; each array's seeds and problems resampled independently."""
    dims = [(i, axis) for i, x in enumerate(arrays) for axis in (0, 1) if x.shape[axis] > 1]
    point = float(combine(np.array([x.mean() for x in arrays])[:, None])[0])
    if not dims:
        raise ValueError("outcomes: one seed and one problem leave nothing to resample")
    data = [np.arange(arrays[i].shape[axis]) for i, axis in dims]

    def statistic(*idx, axis=-1):
        flat = [np.atleast_2d(j) for j in idx]  # (B, size) each
        return combine(_cell_means(arrays, flat, dims))

    res = stats.bootstrap(data, statistic, n_resamples=resamples, vectorized=True, paired=False,
                          confidence_level=confidence, method="percentile", rng=rng)
    return Interval(point, float(res.confidence_interval.low), float(res.confidence_interval.high),
                    float(res.standard_error))


def mean_ci(x, rng: np.random.Generator, resamples: int = RESAMPLES, confidence: float = CONFIDENCE) -> Interval:
    """The mean of one arm's (seeds, problems) outcomes with its bootstrap interval."""
    return _bootstrap([as_outcomes(x)], lambda m: m[0], rng, resamples, confidence)


def mde(se: float, alpha: float = 1 - CONFIDENCE, power: float = POWER) -> float:
    """Minimal detectable effect from the standard error of an effect: (z_{1-alpha/2} + z_power) * se."""
    if se < 0:
        raise ValueError(f"se={se}: must be >= 0")
    return float((stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)) * se)


def paired(a, b, rng: np.random.Generator, resamples: int = RESAMPLES,
           confidence: float = CONFIDENCE) -> Comparison:
    """Arm b against arm a on the same seeds and problems: the bootstrap of the mean of b - a."""
    a, b = as_outcomes(a, "a"), as_outcomes(b, "b")
    if a.shape != b.shape:
        raise ValueError(f"a, b: paired arms need the same (seeds, problems) shape, got {a.shape} and {b.shape}")
    iv = _bootstrap([b - a], lambda m: m[0], rng, resamples, confidence)
    return Comparison(float(a.mean()), float(b.mean()), iv.mean, iv.lo, iv.hi, mde(iv.se, 1 - confidence),
                      a.shape[0], a.shape[1])


def unpaired(a, b, rng: np.random.Generator, resamples: int = RESAMPLES,
             confidence: float = CONFIDENCE) -> Comparison:
    """Arm b against arm a resampled independently (arms that share neither seeds nor problems)."""
    a, b = as_outcomes(a, "a"), as_outcomes(b, "b")
    iv = _bootstrap([a, b], lambda m: m[1] - m[0], rng, resamples, confidence)
    return Comparison(float(a.mean()), float(b.mean()), iv.mean, iv.lo, iv.hi, mde(iv.se, 1 - confidence),
                      min(a.shape[0], b.shape[0]), min(a.shape[1], b.shape[1]))


def fmt_ci(value: float, lo: float, hi: float, spec: str = ".3f", sign: bool = False) -> str:
    """'0.123 [0.101, 0.145]' (sign: '+0.123 [...]')."""
    head = f"{value:+{spec}}" if sign else f"{value:{spec}}"
    return f"{head} [{lo:{spec}}, {hi:{spec}}]"


def word(cmp: Comparison, a: str, b: str, spec: str = ".3f") -> str:
    """The answer's wording: "B > A by x [lo, hi]" only when the interval excludes 0, else
    "no detectable difference between A and B (effect x [lo, hi], MDE m)"."""
    if cmp.ci_lo > 0:
        return f"{b} > {a} by {cmp.effect:{spec}} [{cmp.ci_lo:{spec}}, {cmp.ci_hi:{spec}}]"
    if cmp.ci_hi < 0:
        return f"{a} > {b} by {-cmp.effect:{spec}} [{-cmp.ci_hi:{spec}}, {-cmp.ci_lo:{spec}}]"
    effect = fmt_ci(cmp.effect, cmp.ci_lo, cmp.ci_hi, spec, sign=True)
    return f"no detectable difference between {a} and {b} (effect {effect}, MDE {cmp.mde:{spec}})"
