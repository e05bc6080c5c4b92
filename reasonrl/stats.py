"""Uncertainty of study answers: intervals whose unit is the independent training run, paired
comparisons, the minimal detectable effect of a design, the wording rule of an answer, and Holm's
adjustment across the claims.

An arm's outcomes are an array shaped (runs, problems): one 0/1 outcome (or score) per run of the arm
and per problem of a fixed test set. Two arms that share problems and runs (a run and its own base, or
two methods with the same seed) compare paired: the effect array is `b - a` cell by cell, so what the
two have in common (an easy problem, a lucky base) cancels before anything else.

The interval is analytic: a t-interval whose unit is the run. The run and the problem are two crossed
random factors, and the standard error of the mean of a (runs R, problems P) array is

    se^2 = var(run means) / R  +  max(0, var(problem means) / P - MS_res / (R * P))
    df   = R - 1

The first term is the spread of independent training runs (it also holds the run-by-problem noise once);
the second is the test set's own sampling, the part of the per-problem spread that the cell noise
(MS_res, the residual mean square of the two-way table) does not explain: it matters when an effect is
concentrated on some problems. Where both terms are 0 while cells vary (run means that agree exactly, by
chance), the cell noise alone, MS_res / (R * P), stands in. The degrees of freedom are the runs': with
3-10 runs a run counts as one draw, not as its 300 problems. `groups` labels the rows by the independent
unit above them (the base each run started from): rows of a group are averaged first, so bases are the
random draws and runs within a base only sharpen the base's value. One row (one run or one base) leaves
no run term: the interval is over problems only (df = P - 1) and holds for that run alone (`seeds` == 1
says so). docs/studies.md gives the coverage this keeps in simulation (reasonrl.coverage), and why df is
not Satterthwaite's.

Minimal detectable effect (two-sided level alpha, power 1 - beta), with the design's own df:

    mde = (t_{1 - alpha/2, df} + t_{1 - beta, df}) * se

It is the true effect this design would detect in 80% of reruns. With no variance there is no such
number (`mde` is None): the answer is then "not testable" or "identical", never "MDE 0".
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

CONFIDENCE = 0.95
POWER = 0.8
EQUIVALENCE = 0.01  # default half-width of the region of practical equivalence (params: studies.equivalence)
# The keys of every answer file reports/<study>/answers/<pair>.json: one schema, so `dvc metrics show` is a table
ANSWER_KEYS = ("a", "b", "effect", "ci_lo", "ci_hi", "se", "df", "p", "mde", "seeds", "problems", "se_run",
               "run_sd")


@dataclass(frozen=True)
class Interval:
    """A mean with its t-interval, standard error and degrees of freedom."""

    mean: float
    lo: float
    hi: float
    se: float
    df: float

    def excludes_zero(self) -> bool:
        return self.lo > 0 or self.hi < 0


@dataclass(frozen=True)
class Comparison:
    """Arm b against arm a; the keys are those of the answer files."""

    a: float  # mean of arm a
    b: float  # mean of arm b
    effect: float  # b - a
    ci_lo: float
    ci_hi: float
    se: float
    df: float
    p: float  # two-sided p-value of effect = 0
    mde: float | None  # minimal detectable effect of the design; None without variance
    seeds: int  # independent units behind the interval (bases, or runs of one base); 1: over problems only
    problems: int
    constant: float | None = None  # the one value every cell of both arms takes (no variance at all), else None
    se_run: float = 0.0  # the run term's part of se (sqrt of its variance): the part more seeds would shrink
    run_sd: float = 0.0  # sqrt of the variance one run per arm adds: the run term with n runs per arm is run_sd^2 / n

    def excludes_zero(self) -> bool:
        return self.ci_lo > 0 or self.ci_hi < 0

    def at_level(self, confidence: float) -> tuple[float, float]:
        """The interval at another confidence level (Holm's adjusted levels), from the same se and df."""
        half = t_quantile(confidence, self.df) * self.se
        return self.effect - half, self.effect + half

    def to_json(self) -> dict:
        """The flat answer-file dict (ANSWER_KEYS), floats `kept` for stable diffs."""
        d = asdict(self)
        return {k: kept(d[k]) if isinstance(d[k], float) else d[k] for k in ANSWER_KEYS}


def kept(x: float) -> float:
    """x to 6 places and 6 significant digits at least: claims are judged again from answer files (se 6e-05)."""
    return float(f"{x:.6g}") if 0 < abs(x) < 0.1 else round(x, 6)


def as_outcomes(x, name: str = "outcomes") -> np.ndarray:
    """A float array shaped (runs, problems); a 1-D array is one run. Rejects empty and non-finite."""
    arr = np.asarray(x, dtype=float)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.size == 0:
        raise ValueError(f"{name}: expected a non-empty (runs, problems) array, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: contains NaN or infinite values")
    return arr


def by_group(x: np.ndarray, groups, name: str = "groups") -> np.ndarray:
    """Rows averaged within each group label (first-seen order): (groups, problems)."""
    if groups is None:
        return x
    labels = list(groups)
    if len(labels) != x.shape[0]:
        raise ValueError(f"{name}: {len(labels)} labels for {x.shape[0]} rows")
    order = list(dict.fromkeys(labels))
    return np.stack([x[[i for i, g in enumerate(labels) if g == key]].mean(axis=0) for key in order])


def t_quantile(confidence: float, df: float) -> float:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence={confidence}: must be in (0, 1)")
    q = 0.5 + confidence / 2
    return float(stats.t.ppf(q, df)) if math.isfinite(df) else float(stats.norm.ppf(q))


def _residual_ms(x: np.ndarray) -> float:
    """Residual mean square of a two-way (runs, problems) table: the run-by-problem cell noise."""
    r, p = x.shape
    res = x - x.mean(axis=1, keepdims=True) - x.mean(axis=0, keepdims=True) + x.mean()
    return float((res ** 2).sum()) / ((r - 1) * (p - 1))


def _terms(x: np.ndarray) -> tuple[float, float, float]:
    """(variance of the run term, variance of the problem term, df) of one (runs, problems) array."""
    r, p = x.shape
    if r == 1 and p == 1:
        raise ValueError("outcomes: one run and one problem leave no variance to estimate")
    if np.ptp(x) <= TIE * max(1.0, float(np.abs(x).max())):  # one value (0.7 - 0.6 vs 0.4 - 0.3): no t of 1e17
        return 0.0, 0.0, (p if r == 1 else r) - 1
    if r == 1:  # one run: the spread over problems, conditional on that run
        return 0.0, float(x[0].var(ddof=1)) / p, p - 1
    v_run = float(x.mean(axis=1).var(ddof=1)) / r
    if p == 1:
        return v_run, 0.0, r - 1
    noise = _residual_ms(x) / (r * p)
    v_prob = max(0.0, float(x.mean(axis=0).var(ddof=1)) / p - noise)
    return v_run, _floored(v_run, v_prob, noise), r - 1


TIE = 1e-12  # relative: cells this close hold one value, the rest is rounding
FLOOR = 1e-9  # relative: a variance this far below the cell noise's is a tie by chance, not a measurement


def _floored(v_run: float, v_prob: float, noise: float) -> float:
    """The problem term, raised so that the two terms are at least the cell noise's share where they
    vanish (run means that agree exactly or to rounding, by chance, while cells vary)."""
    return noise - v_run if v_run + v_prob < FLOOR * noise else v_prob


def _t_interval(point: float, var: float, df: float, confidence: float) -> Interval:
    if var <= 0:
        return Interval(point, point, point, 0.0, df)
    half = t_quantile(confidence, df) * math.sqrt(var)
    return Interval(point, point - half, point + half, math.sqrt(var), df)


def mean_ci(x, rng=None, confidence: float = CONFIDENCE, groups=None) -> Interval:
    """The mean of one arm's (runs, problems) outcomes with its t-interval (`rng`: unused, the
    interval is analytic; kept so older callers work)."""
    x = by_group(as_outcomes(x), groups)
    v_run, v_prob, df = _terms(x)
    return _t_interval(float(x.mean()), v_run + v_prob, df, confidence)


def mde(se: float, df: float = math.inf, alpha: float = 1 - CONFIDENCE, power: float = POWER) -> float | None:
    """Minimal detectable effect: (t_{1-alpha/2, df} + t_{power, df}) * se; None when se is 0."""
    if se < 0:
        raise ValueError(f"se={se}: must be >= 0")
    if se == 0:
        return None
    t = stats.t(df) if math.isfinite(df) else stats.norm()
    return float((t.ppf(1 - alpha / 2) + t.ppf(power)) * se)


def _compare(a: np.ndarray, b: np.ndarray, iv: Interval, confidence: float, units: int, v_run: float,
             per_run: float, means: tuple[float, float] | None = None) -> Comparison:
    """`v_run`: the run term's variance in iv.se^2; `per_run`: what one run per arm adds to it (v_run times
    the runs, per arm); `means`: the arms' means as the effect weighs them (group-averaged), when not the
    cells' means."""
    both = np.concatenate([a.ravel(), b.ravel()])
    constant = float(both[0]) if np.all(both == both[0]) else None
    mean_a, mean_b = means or (float(a.mean()), float(b.mean()))
    return Comparison(mean_a, mean_b, iv.mean, iv.lo, iv.hi, iv.se, iv.df, p_value(iv.mean, iv.se, iv.df),
                      mde(iv.se, iv.df, 1 - confidence), units, a.shape[1], constant, math.sqrt(v_run),
                      math.sqrt(per_run))


def p_value(effect: float, se: float, df: float, margin: float = 0.0) -> float:
    """Two-sided p of |effect| <= margin against |effect| > margin (margin 0: effect = 0), by t; se 0: 0 or 1."""
    excess = abs(effect) - margin
    if se == 0:
        return 0.0 if excess > 0 else 1.0
    return float(min(1.0, 2 * stats.t.sf(excess / se, df)))


def paired(a, b, rng=None, confidence: float = CONFIDENCE, groups=None) -> Comparison:
    """Arm b against arm a on the same runs and problems: the t-interval of the mean of b - a.

    Row i of a and of b belong together (a run and its own base, or two arms' runs of one seed);
    `groups`: one label per row naming its independent unit (its base), averaged first. `rng` is unused
    (the interval is analytic)."""
    a, b = as_outcomes(a, "a"), as_outcomes(b, "b")
    if a.shape != b.shape:
        raise ValueError(f"a, b: paired arms need the same (runs, problems) shape, got {a.shape} and {b.shape}")
    d = by_group(b - a, groups)
    v_run, v_prob, df = _terms(d)
    means = (float(by_group(a, groups).mean()), float(by_group(b, groups).mean()))
    iv = _t_interval(float(d.mean()), v_run + v_prob, df, confidence)
    return _compare(a, b, iv, confidence, d.shape[0], v_run, v_run * d.shape[0], means)


def unpaired(a, b, rng=None, confidence: float = CONFIDENCE, shared_problems: bool = True) -> Comparison:
    """Arm b against arm a from independent runs: Welch over the runs' terms (Welch-Satterthwaite df).
    Arms on the same problems (`shared_problems`, column j of a and of b one problem) share the problem
    term: the per-problem difference of the arm means, less the cell noise. Arms on different problems
    add each their own. An arm of one run has no run term: the interval then holds for that run (`seeds`
    is 1). `rng` is unused."""
    a, b = as_outcomes(a, "a"), as_outcomes(b, "b")
    if shared_problems and a.shape[1] != b.shape[1]:
        raise ValueError(f"a, b: arms on shared problems need the same number of them, got {a.shape[1]} and "
                         f"{b.shape[1]} (shared_problems=False for arms on different problems)")
    terms = [_terms(x) for x in (a, b)]
    runs = [(v, df) for x, (v, _, df) in zip((a, b), terms) if x.shape[0] > 1 and v > 0]
    if shared_problems and min(a.shape[0], b.shape[0]) > 1 and a.shape[1] > 1:
        diff = b.mean(axis=0) - a.mean(axis=0)  # (P,)
        noise = sum(_residual_ms(x) / x.size for x in (a, b))
        v_prob = _floored(sum(v for v, _ in runs), max(0.0, float(diff.var(ddof=1)) / diff.size - noise), noise)
    else:
        v_prob = sum(vp for _, vp, _ in terms)
    var = sum(v for v, _ in runs) + v_prob
    # Welch-Satterthwaite; a single run on each side: conditional on the two runs, over problems
    df = sum(v for v, _ in runs) ** 2 / sum(v ** 2 / d for v, d in runs) if runs else min(d for _, _, d in terms)
    iv = _t_interval(float(b.mean() - a.mean()), var, df, confidence)
    per_run = sum(v * x.shape[0] for x, (v, _, _) in zip((a, b), terms) if x.shape[0] > 1 and v > 0)
    return _compare(a, b, iv, confidence, min(a.shape[0], b.shape[0]), sum(v for v, _ in runs), per_run)


def seeds_for(cmp: Comparison, target: float, most: int = 1000) -> int | None:
    """Seeds per arm that would bring the design's (unadjusted) MDE to `target`, projected from one
    comparison: the run term becomes run_sd^2 / n with n runs per arm while the test set's problem term
    stays, and df = n - 1 (a paired design's; an unpaired one's Welch df is larger, so this errs towards
    more seeds). The run spread is the one measured on the comparison's seeds, taken as known. None when
    nothing can be projected (one seed measures no run term; no variance) or when `most` seeds do not
    reach it (the problem term alone is too large: a larger test set would)."""
    if cmp.seeds < 2 or cmp.se == 0:
        return None
    return next((n for n in range(2, most + 1) if mde(projected_se(cmp, n), n - 1) <= target), None)


def projected_se(cmp: Comparison, n: int) -> float:
    """The comparison's se with n seeds per arm: its run term run_sd^2 / n, its problem term (se^2 - se_run^2)
    as measured."""
    return math.sqrt(cmp.run_sd ** 2 / n + max(0.0, cmp.se ** 2 - cmp.se_run ** 2))


def power(se: float, df: float, effect: float, margin: float = 0.0, alpha: float = 1 - CONFIDENCE) -> float:
    """Probability that `p_value(.., margin) < alpha` when the true effect is `effect`: the t-statistic
    (|d| - margin) / se is noncentral t with df and noncentrality (|effect| - margin) / se (scipy's nct), and
    either sign of d can exceed the margin. With se 0 the test is exact: 1 or 0."""
    if se == 0:
        return float(abs(effect) > margin)
    crit = stats.t.ppf(1 - alpha / 2, df)
    return float(sum(stats.nct.sf(crit, df, (s * abs(effect) - margin) / se) for s in (1, -1)))


def seeds_for_power(cmp: Comparison, effect: float, margin: float, alpha: float, target: float = POWER,
                    most: int = 400) -> int | None:
    """Seeds per arm that give `target` power (`power`) to find `effect` beyond `margin` at `alpha`, projected as
    `seeds_for` does; None when nothing can be projected or `most` seeds do not reach it."""
    if cmp.seeds < 2 or cmp.se == 0:
        return None
    return next((n for n in range(2, most + 1)
                 if power(projected_se(cmp, n), n - 1, effect, margin, alpha) >= target), None)


# ----------------------------------------------------------------------------- wording

def _num(x: float, spec: str) -> str:
    """x formatted, without the sign of a value that rounds to zero ("-0.000" reads as a difference)."""
    text = f"{x:{spec}}"
    return text.replace("-", "", 1) if float(text) == 0 else text


SHARE = (0.0, 1.0)  # the range of a level that is a share (accuracy, think rate, pass@k)
SHARE_DIFF = (-1.0, 1.0)  # the range of a difference of two shares


def clip(lo: float, hi: float, bounds: tuple[float, float] | None) -> tuple[float, float]:
    """An interval cut to its measure's range where it is printed: a t-interval of few seeds near a floor or
    ceiling overshoots it, and a bound no value can take reads as a measurement (docs/studies.md)."""
    return (lo, hi) if bounds is None else (min(max(lo, bounds[0]), bounds[1]), max(min(hi, bounds[1]), bounds[0]))


def fmt_ci(value: float, lo: float, hi: float, spec: str = ".3f", sign: bool = False,
           bounds: tuple[float, float] | None = None) -> str:
    """'0.123 [0.101, 0.145]' (sign: '+0.123 [...]'), the interval cut to `bounds` (`clip`)."""
    lo, hi = clip(lo, hi, bounds)
    head = _num(value, spec)
    head = "+" + head if sign and not head.startswith("-") else head
    return f"{head} [{_num(lo, spec)}, {_num(hi, spec)}]"


def fmt_effect(cmp: Comparison, bounds: tuple[float, float] | None = None) -> str:
    """The effect b - a with its interval, signed, at `precision`, cut to `bounds`."""
    return fmt_ci(cmp.effect, cmp.ci_lo, cmp.ci_hi, precision(cmp), sign=True, bounds=bounds)


def fmt_share(iv: Interval) -> str:
    """A share's mean with its interval cut to [0, 1]."""
    return fmt_ci(iv.mean, iv.lo, iv.hi, bounds=SHARE)


def fmt_mde(cmp: Comparison) -> str:
    """The MDE for a table: three decimals, or "—" where nothing varies (no MDE to state)."""
    return "—" if cmp.mde is None else f"{cmp.mde:.3f}"


def precision(cmp: Comparison) -> str:
    """The format spec of an effect: three decimals, four when the interval is narrower than 0.01 so that
    its bounds stay distinct from each other, and more (up to six) while a bound off 0 would print as 0:
    "[0.000, 0.012]" would read as an interval touching 0 where the test says it excludes it."""
    places = 4 if 0 < cmp.ci_hi - cmp.ci_lo < 0.01 else 3
    while places < 6 and any(b != 0 and float(f"{b:.{places}f}") == 0 for b in (cmp.ci_lo, cmp.ci_hi)):
        places += 1
    return f".{places}f"


def describe_constant(value: float) -> str:
    return "the ceiling" if value == 1 else "the floor" if value == 0 else f"{value:g} on every problem and run"


def word(cmp: Comparison, a: str, b: str, equivalence: float = EQUIVALENCE,
         bounds: tuple[float, float] | None = None) -> str:
    """The answer's wording (docs/studies.md):

    - both arms without variance: "not testable: both A and B at the ceiling";
    - interval inside [-e, e]: "A and B equivalent within ±e (effect ...)";
    - interval covering 0: "no detectable difference between A and B (effect ..., MDE m)";
    - otherwise the direction and size, "B > A by x [lo, hi]", and when the interval reaches into
      [-e, e], that the difference may be below e.

    Printed intervals are cut to `bounds` (the measure's range, `clip`); the verdict is the uncut one's."""
    spec = precision(cmp)
    effect = fmt_effect(cmp, bounds)
    one = " (one run: over problems only)" if cmp.seeds == 1 else ""
    if cmp.constant is not None:
        return f"not testable: both {a} and {b} at {describe_constant(cmp.constant)}"
    if cmp.se == 0:  # the difference is the same in every cell: a fact about these problems, not an interval
        if cmp.effect == 0:
            return f"{a} and {b} identical on every problem and run (no variance: no interval)"
        hi_name, lo_name = (b, a) if cmp.effect > 0 else (a, b)
        return f"{hi_name} > {lo_name} by {abs(cmp.effect):{spec}} on every problem and run (no variance: no interval)"
    if -equivalence <= cmp.ci_lo and cmp.ci_hi <= equivalence:
        return f"{a} and {b} equivalent within ±{equivalence:g} (effect {effect}){one}"
    if not cmp.excludes_zero():
        return f"no detectable difference between {a} and {b} (effect {effect}, MDE {fmt_mde(cmp)}){one}"
    lo, hi = clip(cmp.ci_lo, cmp.ci_hi, bounds)
    hi_name, lo_name, size, lo, hi = ((b, a, cmp.effect, lo, hi) if cmp.ci_lo > 0 else (a, b, -cmp.effect, -hi, -lo))
    small = f", possibly less than {equivalence:g}" if lo < equivalence else ""
    return f"{hi_name} > {lo_name} by {size:{spec}} [{lo:{spec}}, {hi:{spec}}]{small}{one}"


# ----------------------------------------------------------------------------- several claims

def holm(pvalues: list[float], alpha: float = 1 - CONFIDENCE) -> tuple[list[float], list[float]]:
    """Holm's step-down adjustment: (adjusted p-values, the confidence level of each one's interval).

    Sorted by p ascending, the hypothesis of rank i (from 0) is tested at alpha / (m - i) while every one
    before it was rejected; its adjusted p is the running maximum of (m - i) * p, capped at 1. A rejected
    hypothesis's interval is at 1 - alpha / (m - i); once one is not rejected the procedure stops, and
    every hypothesis not rejected gets 1 - alpha / (m - r), r being how many were."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted, running = [1.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    rejected = sum(adjusted[i] < alpha for i in order)
    levels = [1.0] * m
    for rank, i in enumerate(order):
        levels[i] = 1 - alpha / (m - rank if rank < rejected else m - rejected)
    return adjusted, levels
