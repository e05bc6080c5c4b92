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

from . import stats


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
