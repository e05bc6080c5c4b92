"""The RL algorithm, one step of GRPO, RFT or SFT and their variants, top to bottom.

GRPO reads end to end in two files: this one (the step) and variants.py (the named variants: methods and how
each weighs its rows, advantages, loss aggregations, KL estimators, optimizers, rewards, through registries;
the step never branches on a variant's name). The loop that runs the steps is train.py.

A step (`rl_step`): draw B problems and collect responses (G samples per problem from the policy, or the gold
trace for SFT; under dynamic sampling, zero-variance groups dropped and fresh ones drawn), each scored by the
proxy reward (trained on) and the true one (recorded); score the batch under the sampling policy and the
reference; turn the rewards into per-sequence weights (group advantages, a correct-only mask, or ones:
variants.METHODS); then take `num_iterations` clipped policy-gradient updates on that batch (`update`:
surrogate, KL term, aggregation, clipped gradient step). With one iteration the ratio is exactly 1 and the
update is REINFORCE with a group baseline. The KL penalty (`KLPenalty`, decided from the job) is either a term
of the loss or, summed per response, subtracted from the advantage after the group normalisation.

How the step is computed is not decided here. It receives the run's plan, `ctx.plan` (layout.py, `Plan`,
built once per run by `plan_for` from the job): the layout, whether a round keeps its prefill for the first
training forward, whether that forward recomputes its blocks in backward and a forward without a graph runs in
slices of groups (`Plan.build`), and how many groups the reference scores for the KL record at beta = 0. Two
layouts compute the same step:
- fast (default): the G samples of a group are drawn against one prefill of their prompt
  (`sample_groups`), and trained with the prompt computed once per group and the G responses attending
  to it (`shared_token_logprobs`); the forward that scores the rollouts under the policy keeps its graph
  and is the first update's forward, and it starts from the rollout's own prefill of the prompts where the
  plan keeps it (`Plan.keep_prefill`; the weights have not moved, so each is the same computation).
- plain: every sequence is prompt + response, computed in full (`sample`, `token_logprobs`). It is
  the reference the fast path is tested against (tests/test_perf.py): same responses and generator
  state, and losses and gradients equal up to floating-point summation order.

The step calls `ctx.hooks.between_phases()` where one large transient ends and the next begins, and runs
the forward over everything dynamic sampling drew under `ctx.hooks.wide_forward`; what they do (the memory
policy, rl/memory.py) is decided by whoever runs the loop, and moves no number. What a step records is
records.py's.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..sampling import sample_responses
from ..tasks import Problem, get_task
from .batch import Batch, zero_variance
from .context import Context
from .job import Job
from .layout import FullSequences, SharedPrefix
from .records import rollout_record, step_record
from .variants import KL_ESTIMATORS, LOSS_AGG, METHODS, REWARDS, guard, kl_k3, length_penalty, overlong_penalty


def rl_step(ctx: Context, opt: torch.optim.Optimizer, step: int) -> tuple[dict, Batch]:
    """Collect and score one batch, weigh its rows, and update the policy on it; returns (record, batch)."""
    job, method, kl = ctx.job, METHODS[ctx.job.method], KLPenalty.of(ctx.job)
    batch = COLLECT[method.rollouts](ctx)
    device = next(ctx.policy.parameters()).device
    unfiltered = unfiltered_record(ctx, batch, device)
    ctx.hooks.between_phases()  # next: the training forward and its backward, the step's largest transient
    # the policy trained is the one sampled from: softmax(logits / temperature), for log-probs, ratio, KL, entropy
    seqs = ctx.plan.build(batch, device, job.temperature)
    scored = score_policy(ctx, seqs, grad=ctx.plan.layout.reuse_forward)
    m = seqs.m
    w = method.weights(batch.proxy.to(m.device), batch, kl.in_reward(scored, m), job.advantage).to(m.device)
    own = rollout_record(batch, scored.ent, scored.kl, m)
    record = {**step_record(unfiltered, own), "rollout/count": batch.rollouts}
    if method.drop_zero_weight:
        rows = torch.nonzero(w != 0).squeeze(1)
        if len(rows) == 0:  # RFT with no correct sample skips the update
            return {**record, **NO_UPDATE}, batch
        if len(rows) < len(w):
            seqs, w, scored = seqs.select(rows), w[rows], scored.select(rows)
    return {**record, **update(ctx, opt, seqs, w, scored, step)}, batch


# ----------------------------------------------------------------------------- collecting the batch
# COLLECT holds the two ways a method gets its rows (variants.METHODS names one per method): G samples per
# problem from the policy, or the task's gold traces.

def draw_problems(rng: random.Random, job: Job, count: int) -> list[Problem]:
    task, spec = get_task(job.task), job.spec
    return [task.sample(rng, spec) for _ in range(count)]


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


def sample_round(ctx: Context) -> Batch:
    """B fresh problems, G policy samples each, scored."""
    job, G = ctx.job, ctx.job.G
    probs = draw_problems(ctx.rng, job, job.B)
    keep = [] if ctx.plan.keep_prefill else None
    groups = sample_responses(ctx.policy, probs, G, job.temperature, ctx.sample_gen, shared=ctx.plan.layout.shared,
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


# ----------------------------------------------------------------------------- the batch under policy and reference

def unfiltered_record(ctx: Context, batch: Batch, device) -> dict | None:
    """Under dynamic sampling, the rollout records of everything sampled this step (the filter selects groups,
    so the kept ones say little about the policy); None otherwise. Taken before the kept batch's forward,
    whose graph would otherwise stay alive under this forward over up to (1 + max_resample) B G rows (the peak
    RSS of a dynamic-sampling run, hence its hooks)."""
    if batch.sampled is None:
        return None
    ctx.hooks.between_phases()
    seqs = ctx.plan.build(batch.sampled, device, ctx.job.temperature)
    with ctx.hooks.wide_forward(ctx.policy):
        scored = score_policy(ctx, seqs)
    return rollout_record(batch.sampled, scored.ent, scored.kl, seqs.m)


@dataclass
class Scored:
    """The batch under the sampling policy and the reference: everything computed before the first update."""
    old_logp: torch.Tensor  # (N, T) the sampling policy's log-probs, detached
    ent: torch.Tensor  # (N, T) its entropies, detached
    ref_logp: torch.Tensor | None  # (N, T) when a KL term needs it (beta > 0), else None
    first: torch.Tensor | None  # old_logp with its graph when the layout reuses this forward, else None
    kl: float | None  # the `losses/kl` record: k3 KL(policy || reference) per response token (Plan.kl_groups);
    # None without a reference

    def select(self, rows: torch.Tensor) -> Scored:
        return Scored(self.old_logp[rows], self.ent[rows], None if self.ref_logp is None else self.ref_logp[rows],
                      None if self.first is None else self.first[rows], self.kl)


def score_policy(ctx: Context, seqs: FullSequences | SharedPrefix, grad: bool = False) -> Scored:
    """Log-probs and entropies of `seqs` under the policy (with their graph when `grad`), the reference's
    log-probs where a KL term needs them, and the KL record: over every row with a KL term, else over the
    plan's first kl_groups groups (the reference's log-probs then feed nothing else), or none in a run without
    a reference."""
    with torch.set_grad_enabled(grad):
        logp, ent = seqs.logprobs(ctx.policy)
    old = logp.detach()
    with torch.no_grad():
        if KLPenalty.of(ctx.job).needs_reference:
            ref_logp, _ = seqs.logprobs(ctx.ref)
            kl = token_mean_kl(ref_logp, old, seqs.m)
        elif ctx.ref is None:  # a run without a reference (beta 0) records no KL
            ref_logp, kl = None, None
        else:
            head = seqs.head(ctx.plan.kl_groups * ctx.job.G)
            ref_logp, kl = None, token_mean_kl(head.logprobs(ctx.ref)[0], old[:len(head.m)], head.m)
    return Scored(old, ent.detach(), ref_logp, logp if grad else None, kl)


def token_mean_kl(ref_logp: torch.Tensor, logp: torch.Tensor, m: torch.Tensor) -> float:
    """The k3 estimate of KL(policy || reference) averaged over the response tokens (m: (N, T) mask)."""
    return float((kl_k3(ref_logp - logp) * m).sum() / m.sum())


@dataclass(frozen=True)
class KLPenalty:
    """The KL penalty towards the reference, decided from the job: where it acts ("loss", "reward", or "none"
    when beta is 0), its coefficient and its per-token estimator."""
    where: str
    beta: float
    estimator: Callable[[torch.Tensor], torch.Tensor]

    @classmethod
    def of(cls, job: Job) -> KLPenalty:
        return cls(job.kl_in if job.beta > 0 else "none", job.beta, KL_ESTIMATORS[job.kl_estimator])

    @property
    def needs_reference(self) -> bool:
        """Whether every row needs the reference's log-probs (else only the `losses/kl` record's few)."""
        return self.where != "none"

    def per_token(self, logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
        """beta times the per-token estimate of KL(policy || reference), (N, T)."""
        return self.beta * self.estimator(ref_logp - logp)

    def in_reward(self, scored: Scored, m: torch.Tensor) -> torch.Tensor:
        """(N,) the penalty summed over each response, to subtract from the advantage; zeros elsewhere."""
        if self.where != "reward":
            return m.new_zeros(len(m))
        return (self.per_token(scored.old_logp, scored.ref_logp) * m).sum(dim=1)

    def in_loss(self, logp: torch.Tensor, ref_logp: torch.Tensor | None, agg: Callable, m: torch.Tensor):
        """The loss term: the penalty aggregated like the policy-gradient term; a zero scalar elsewhere."""
        if self.where != "loss":
            return logp.new_zeros(())
        return agg(self.per_token(logp, ref_logp), m)


# ----------------------------------------------------------------------------- the update

NO_UPDATE = dict.fromkeys(("losses/pg", "losses/kl_term", "losses/clip_frac", "losses/grad_norm"), 0.0)


def update(ctx: Context, opt: torch.optim.Optimizer, seqs: FullSequences | SharedPrefix, w: torch.Tensor,
           scored: Scored, step: int) -> dict:
    """num_iterations clipped updates on one batch (seqs.m and scored's tensors: (N, T); w: (N,)); returns
    losses/* means. The first iteration uses scored.first as its forward when there is one."""
    job, kl = ctx.job, KLPenalty.of(ctx.job)
    agg = functools.partial(LOSS_AGG[job.loss_agg], max_len=job.response_budget)
    m = seqs.m
    stats = dict(NO_UPDATE)
    n = job.num_iterations
    ctx.policy.train()
    for it in range(n):
        logp = scored.first if it == 0 and scored.first is not None else seqs.logprobs(ctx.policy)[0]  # (N, T)
        per_token, clipped = clipped_surrogate(logp, scored.old_logp, w, job.eps_low, job.eps_high)
        pg = agg(per_token, m)
        kl_term = kl.in_loss(logp, scored.ref_logp, agg, m)
        loss = pg + kl_term
        if not torch.isfinite(loss):
            raise FloatingPointError(f"step {step}: loss is {loss.item()} (pg {pg.item()}, kl {kl_term.item()})")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(ctx.policy.parameters(), job.grad_clip)
        opt.step()
        stats["losses/pg"] += pg.item() / n
        stats["losses/kl_term"] += kl_term.item() / n
        stats["losses/clip_frac"] += float((clipped.float() * m).sum() / m.sum().clamp(min=1)) / n
        stats["losses/grad_norm"] += float(gn) / n
        if it < n - 1:  # the next forward and backward: a phase of their own (the loop's hook runs after the last)
            ctx.hooks.between_phases()
    ctx.policy.eval()
    return stats


def clipped_surrogate(logp, old_logp, adv, eps_low: float, eps_high: float):
    """Per-token PPO loss -min(ratio * A, clip(ratio) * A) and the mask of clipped tokens.
    logp, old_logp: (N, T); adv: (N,)."""
    ratio = torch.exp(logp - old_logp)
    A = adv[:, None]
    loss = -torch.minimum(ratio * A, ratio.clamp(1 - eps_low, 1 + eps_high) * A)
    clipped = ((ratio > 1 + eps_high) & (A > 0)) | ((ratio < 1 - eps_low) & (A < 0))
    return loss, clipped
