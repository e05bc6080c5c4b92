"""The numbers a compared pair carries beside its effect (`answers.Answer.extra`, the keys of
`reasonrl.studies.ANSWER_EXTRA`): whether a claim's mechanism acted in the runs behind the comparison
(`claims.no_mechanism`), read from each run's training history (reports/rl/<task>/<run>.csv, one row per step).

An arm is a list of runs (one per seed); each number is a per-run value averaged over the arm's runs."""

from __future__ import annotations

import math

from .runs import Run

CLIP = "losses/clip_frac"  # share of the step's response tokens whose ratio the clip cut, mean over its updates
GRAD = "losses/grad_norm"  # the step's gradient norm before clipping (0: the step updated nothing)


def arm_mean(arm: list[Run], value) -> float:
    """The mean over the arm's runs of value(run)."""
    return sum(float(value(r)) for r in arm) / len(arm)


def run_clip(run: Run) -> float:
    """The run's clip fraction averaged over its steps."""
    return float(run.history[CLIP].mean())


def run_updates(run: Run) -> float:
    """num_iterations x the steps whose gradient was non-zero: a step whose groups all had equal rewards (what
    dynamic sampling could not replace) or an RFT step without a correct sample updates nothing."""
    return run.job["num_iterations"] * int((run.history[GRAD] > 0).sum())


def run_wrong(run: Run) -> float:
    """The share of the run's training responses that were wrong: 1 - reward/true (the step's mean over every
    response it sampled, 1 right, 0 wrong) averaged over its steps weighted by rollout/count (a dynamic-sampling
    step samples several rounds)."""
    h = run.history
    return 1.0 - float((h["reward/true"] * h["rollout/count"]).sum() / h["rollout/count"].sum())


def finite(values: dict[str, float | None]) -> dict[str, float]:
    """The values that were measured (a ratio over no updates is not)."""
    return {k: v for k, v in values.items() if v is not None and math.isfinite(v)}


def clip_extra(a: list[Run] | None, b: list[Run] | None) -> dict[str, float]:
    """clip_frac of arm b and clip_frac_a of arm a, for whichever of them has runs (a base has none)."""
    return finite({"clip_frac": arm_mean(b, run_clip) if b else None,
                   "clip_frac_a": arm_mean(a, run_clip) if a else None})


def ablation_extra(a: list[Run], b: list[Run]) -> dict[str, float]:
    """Arm b against arm a: both arms' clip fractions, b's updates over a's, and a's share of wrong responses."""
    ua = arm_mean(a, run_updates)
    return clip_extra(a, b) | finite({"updates_ratio": arm_mean(b, run_updates) / ua if ua > 0 else None,
                                      "wrong_share": arm_mean(a, run_wrong)})
