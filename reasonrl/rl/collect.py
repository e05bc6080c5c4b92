"""Collecting a step's batch: problems drawn, responses sampled (or the gold traces for SFT), each scored by
the proxy and the true reward.

`COLLECT` holds the two ways a method gets its rows (variants.METHODS names one per method): G samples per
problem from the policy, or the task's gold traces.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TYPE_CHECKING

import torch

from ..sampling import sample_responses
from ..tasks import Problem, get_task
from .batch import Batch, zero_variance
from .variants import REWARDS, guard, length_penalty, overlong_penalty

if TYPE_CHECKING:
    from .context import Context
    from .job import Job


def draw_problems(rng: random.Random, job: Job, count: int) -> list[Problem]:
    task, spec = get_task(job.task), job.spec
    return [task.sample(rng, spec) for _ in range(count)]


def response_budget(job: Job) -> int:
    """The most characters a response of this job can have: sample_responses' max_new for the hardest problem."""
    return get_task(job.task).max_budget(job.spec)


def rollout_budget(job: Job) -> int:
    """Policy samples a run may draw: `rollouts`, by default what `steps` steps of B x G take. Dynamic sampling
    spends it faster and so takes fewer steps (equal rollouts); a larger `rollouts` lets it take every step
    (equal updates)."""
    return job.rollouts if job.rollouts is not None else job.steps * job.B * job.G


def score(ctx: Context, problems: list[Problem], responses: list[str], max_new: int):
    """(proxy, true) rewards, each (N,); guard, then length penalty, then overlong penalty on proxy."""
    job = ctx.job
    true = REWARDS["true"](problems, responses, ctx)
    proxy = true.clone() if job.reward == "true" else REWARDS[job.reward](problems, responses, ctx)
    if job.guard:
        proxy = guard(proxy, problems, responses)
    if job.len_pen:
        proxy = length_penalty(proxy, responses, job.len_pen)
    if job.overlong:
        proxy = overlong_penalty(proxy, responses, [max_new] * len(responses), job.overlong)
    return proxy, true


def keeps_prefill(ctx: Context) -> bool:
    """Whether a round keeps its prefill for the step's first training forward: on the fast layout, when the round
    is the batch (a dynamic-sampling round may be filtered out), the batch gets one update and no verifier scores
    it (with two updates, or under a verifier's forward, keeping it raised a stage's peak RSS by 12-58 MB, past
    the 600 MB mark: docs/performance.md)."""
    job = ctx.job
    return ctx.layout.reuse_forward and not job.dynamic_sampling and job.num_iterations == 1 and ctx.verifier is None


def sample_round(ctx: Context) -> Batch:
    """B fresh problems, G policy samples each, scored."""
    job, G = ctx.job, ctx.job.G
    probs = draw_problems(ctx.rng, job, job.B)
    keep = [] if keeps_prefill(ctx) else None
    groups = sample_responses(ctx.policy, probs, G, job.temperature, ctx.sample_gen, shared=ctx.layout.shared,
                              keep=keep)
    flat_p = [p for p in probs for _ in range(G)]
    flat_r = [r for rs in groups for r in rs]
    if ctx.verifier is not None:  # its forward over the whole batch is a phase of its own
        ctx.hooks.between_phases()
    proxy, true = score(ctx, flat_p, flat_r, max(p.budget for p in probs))
    ctx.rollouts += len(flat_r)
    return Batch(flat_p, flat_r, proxy, true, G, float(zero_variance(proxy, G).float().mean()), len(flat_r),
                 prefill=keep[0] if keep else None)


def collect_samples(ctx: Context) -> Batch:
    """G policy samples per problem. With dynamic sampling, zero-variance groups are dropped and fresh problems
    sampled for up to max_resample extra rounds, while the run's rollout budget lasts; the batch keeps the
    unfiltered samples of every round as `sampled`."""
    job = ctx.job
    if not job.dynamic_sampling:
        return sample_round(ctx)
    rounds = [sample_round(ctx)]
    per_round = job.B * job.G
    kept = lambda b: [i for i, z in enumerate(zero_variance(b.proxy, b.group).tolist()) if not z]  # noqa: E731
    while (sum(len(kept(b)) for b in rounds) < job.B and len(rounds) <= job.max_resample
           and ctx.rollouts + per_round <= rollout_budget(job)):
        rounds.append(sample_round(ctx))
    sampled = Batch([p for b in rounds for p in b.problems], [r for b in rounds for r in b.responses],
                    torch.cat([b.proxy for b in rounds]), torch.cat([b.true for b in rounds]), job.G, 0.0,
                    sum(b.rollouts for b in rounds))
    sampled.zero_frac = float(zero_variance(sampled.proxy, job.G).float().mean())
    idx = kept(sampled)[: job.B]
    if not idx:  # every group of every round had equal rewards: nothing to learn from; train on the last round
        idx = list(range(len(sampled.problems) // job.G - job.B, len(sampled.problems) // job.G))
    batch = sampled.groups(idx)
    batch.rollouts, batch.sampled = sampled.rollouts, sampled
    return batch


def collect_gold(ctx: Context) -> Batch:
    probs = draw_problems(ctx.rng, ctx.job, ctx.job.B)
    ones = torch.ones(len(probs))
    return Batch(problems=probs, responses=[p.target("cot") for p in probs],
                 proxy=ones, true=ones.clone(), group=1, zero_frac=0.0)


COLLECT: dict[str, Callable[[Context], Batch]] = {"policy": collect_samples, "gold": collect_gold}
