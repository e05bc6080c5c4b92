"""Coverage of reasonrl.stats' intervals on simulated studies whose truth is known.

A simulated study has two arms evaluated on P problems. Problem p has a difficulty theta_p (logit),
drawn afresh for every dataset; run r of an arm lands at its own offset u (logit, sd `run_sd`), as
independent training runs do; paired runs also share an offset s_r (sd `shared_sd`: the base both start
from, or a seed); arm b adds `effect` logits. A cell is correct with probability
sigmoid(theta_p + s_r + u + arm effect). The true difference of the arms is the population one, over
problems and runs: E[sigmoid(Z + effect)] - E[sigmoid(Z)] with Z the sum of the normal terms, computed by
quadrature (scipy), so a covered interval covers what a new study of new problems and new runs estimates.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special
from scipy import stats as sps

from . import estimands, stats


@dataclass(frozen=True)
class Design:
    runs: int = 3  # runs per arm
    problems: int = 300
    effect: float = 0.0  # logit shift of arm b
    run_sd: float = 0.5  # per-run offset of each arm's run (independent between arms)
    shared_sd: float = 0.5  # offset shared by the two arms' runs of one pairing unit
    difficulty_mean: float = 1.5  # mean logit of a problem (about 0.8 correct)
    difficulty_sd: float = 1.5
    interaction_sd: float = 0.0  # per-problem spread of arm b's effect (logit)
    paired: bool = True  # paired: arms share problems and pairing units; else independent runs (unpaired)

    def truth(self) -> float:
        var = self.difficulty_sd ** 2 + self.run_sd ** 2 + self.shared_sd ** 2
        z_a = sps.norm(self.difficulty_mean, np.sqrt(var))
        z_b = sps.norm(self.difficulty_mean + self.effect, np.sqrt(var + self.interaction_sd ** 2))
        return float(z_b.expect(special.expit) - z_a.expect(special.expit))


def simulate(design: Design, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """One dataset: outcomes of arms a and b, each (runs, problems) of 0/1."""
    r, p = design.runs, design.problems
    theta = rng.normal(design.difficulty_mean, design.difficulty_sd, p)  # (P,)
    shared = rng.normal(0, design.shared_sd, (r, 1))  # (R, 1)
    effect = design.effect + rng.normal(0, design.interaction_sd, p)  # (P,)
    arms = []
    for shift in (np.zeros(p), effect):
        own = shared if design.paired else rng.normal(0, design.shared_sd, (r, 1))
        offset = rng.normal(0, design.run_sd, (r, 1)) + own  # (R, 1)
        logit = theta[None, :] + offset + shift[None, :]  # (R, P)
        arms.append((rng.random((r, p)) < special.expit(logit)).astype(float))
    return arms[0], arms[1]


def coverage(design: Design, datasets: int, seed: int = 0, confidence: float = stats.CONFIDENCE) -> float:
    """Share of `datasets` simulated studies whose interval for b - a covers the true difference."""
    rng = np.random.default_rng(seed)
    truth = design.truth()
    compare = stats.paired if design.paired else stats.unpaired
    hits = 0
    for _ in range(datasets):
        a, b = simulate(design, rng)
        c = compare(a, b, confidence=confidence)
        hits += c.ci_lo <= truth <= c.ci_hi
    return hits / datasets


# ----------------------------------------------------------------------------- run 2's estimands: three levels

@dataclass(frozen=True)
class ThreeLevel:
    """A simulated run-2 design with three levels: bases, RL seeds of a base, and problems of a finite test set.

    Base b has ability a_b ~ N(start, base_sd) (logit); RL seed s of base b has a_b + effect + u_bs, u ~ N(0,
    seed_sd); problem p has difficulty theta_p ~ N(0, difficulty_sd), drawn afresh for each dataset, and RL's shift
    on it varies by eta_p ~ N(0, interaction_sd), shared by every RL run. Each model draws `samples` samples of each
    of `problems` problems, each correct with probability sigmoid(ability + theta_p (+ eta_p for RL)); a model's
    per-problem share is its pass@1 on that problem. `single`: one base (drawn as above) with `units` RL seeds, the
    seed the unit; else `units` bases with `seeds` RL seeds each.

    The truth of a scale (reasonrl.estimands: f(e) = log((P e + 0.5) / (P + 1)) at P = `problems`, or the error
    itself for the raw gain) is the population value over problems, RL seeds and (cross-base) bases:
    E f(e(a)) - E f(e_RL(a + effect + u)), with e(x) = E_theta[1 - sigmoid(x + theta)] by Gauss-Hermite
    quadrature (scipy.special.roots_hermitenorm); a single base's truth is conditional on its ability."""

    units: int = 5
    seeds: int = 2
    start: float = 0.0  # mean logit of a base: -3.5 near 0 (pass@1 about 0.07), 0 mid, +3.5 near 1 (about 0.93)
    base_sd: float = 1.0
    effect: float = 3.0
    seed_sd: float = 0.5
    interaction_sd: float = 0.5
    problems: int = 248
    samples: int = 256
    difficulty_sd: float = 1.5
    single: bool = False

    def error(self, x, rl: bool = False) -> np.ndarray:
        """Population error e(x) of a model of ability x over the problems (RL: with its per-problem shift)."""
        z, w = special.roots_hermitenorm(NODES)
        sd = np.hypot(self.difficulty_sd, self.interaction_sd) if rl else self.difficulty_sd
        x = np.asarray(x, dtype=float)
        return (w * special.expit(-(x[..., None] + sd * z))).sum(axis=-1) / w.sum()

    def _f(self, scale: str):
        if scale == estimands.RAW:
            return lambda e: e
        return lambda e: np.log((self.problems * e + estimands.HALF) / (self.problems + 2 * estimands.HALF))

    def _mean(self, g, mean: float, sd: float) -> float:
        z, w = special.roots_hermitenorm(NODES)
        return float((w * g(mean + sd * z)).sum() / w.sum())

    def truth(self, scale: str, base: float | None = None) -> float:
        """The population value of `scale` (cross-base; with `base`, the ability of a single base: conditional on
        it)."""
        f = self._f(scale)

        def rl(y):
            return f(self.error(y, rl=True))

        if base is not None:
            return float(f(self.error(base))) - self._mean(rl, base + self.effect, self.seed_sd)
        return (self._mean(lambda x: f(self.error(x)), self.start, self.base_sd)
                - self._mean(rl, self.start + self.effect, float(np.hypot(self.base_sd, self.seed_sd))))

    def accuracy(self, rl: bool = False) -> float:
        """Mean pass@1 of a base (or of an RL run) over bases, seeds and problems."""
        mean = self.start + (self.effect if rl else 0.0)
        sd = float(np.hypot(self.base_sd, self.seed_sd)) if rl else self.base_sd
        return 1 - self._mean(lambda x: self.error(x, rl), mean, sd)


NODES = 80  # Gauss-Hermite nodes of each quadrature


def simulate_three_level(design: ThreeLevel, rng: np.random.Generator):
    """One dataset: (abilities of the bases (B,), base shares (B, P), RL shares (B, S, P))."""
    d = design
    bases, seeds = (1, d.units) if d.single else (d.units, d.seeds)
    theta = rng.normal(0, d.difficulty_sd, d.problems)  # (P,)
    eta = rng.normal(0, d.interaction_sd, d.problems)  # (P,)
    a = rng.normal(d.start, d.base_sd, bases)  # (B,)
    u = rng.normal(0, d.seed_sd, (bases, seeds))  # (B, S)
    base = rng.binomial(d.samples, special.expit(a[:, None] + theta)) / d.samples
    rl = rng.binomial(d.samples, special.expit((a[:, None] + d.effect + u)[..., None] + theta + eta)) / d.samples
    return a, base, rl


def estimand_coverage(design: ThreeLevel, datasets: int, seed: int = 0) -> dict[str, dict[str, float]]:
    """Per scale of reasonrl.estimands, over `datasets` simulated datasets: the truth (cross-base; a single base's
    mean truth), the share of 95% intervals covering it, the share whose one-sided bound misses it in each tail at
    2.5% (`miss_low`: the lower bound above the truth, a false "RL raises"; `miss_high`) and at 5%, the same
    without the problem term (`nopt_`: per-unit summaries), and the exact sign test's one-sided rejections at 2.5%
    in each direction (`sign_up`, `sign_down`)."""
    rng = np.random.default_rng(seed)
    truth = {s: design.truth(s) for s in estimands.SCALES}
    keys = ("coverage", "miss_low", "miss_high", "miss_low_5", "miss_high_5", "nopt_miss_low", "nopt_miss_high",
            "sign_up", "sign_down", "se")
    tally = {s: dict.fromkeys(keys, 0.0) | {"truth": 0.0} for s in estimands.SCALES}
    q = {t: float(sps.t.ppf(1 - t, design.units - 1)) for t in (0.025, 0.05)}
    for _ in range(datasets):
        a, base, rl = simulate_three_level(design, rng)
        for s in estimands.SCALES:
            if design.single:
                est, tr = estimands.single_base(base[0], rl[0], s), design.truth(s, base=float(a[0]))
            else:
                est, tr = estimands.blocked(base, rl, s), truth[s]
            t = tally[s]
            lo, hi = est.value - q[0.025] * est.se, est.value + q[0.025] * est.se
            t["truth"] += tr
            t["coverage"] += lo <= tr <= hi
            t["miss_low"] += lo > tr
            t["miss_high"] += hi < tr
            t["miss_low_5"] += est.value - q[0.05] * est.se > tr
            t["miss_high_5"] += est.value + q[0.05] * est.se < tr
            t["nopt_miss_low"] += est.value - q[0.025] * est.se_units > tr
            t["nopt_miss_high"] += est.value + q[0.025] * est.se_units < tr
            t["sign_up"] += estimands.sign_test(est.values, 1).p <= 0.025
            t["sign_down"] += estimands.sign_test(est.values, -1).p <= 0.025
            t["se"] += est.se
    return {s: {k: v / datasets for k, v in t.items()} for s, t in tally.items()}
