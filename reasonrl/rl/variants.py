"""The named variants of the RL algorithm (algorithm.py), one small function each, chosen through registries:
the methods and how each weighs its rows, advantages, loss aggregations, KL estimators, optimizers, rewards.

Adding a variant means adding one function to one registry; the algorithm never branches on its name. The
job (job.py) validates its names against these tables, so this module imports neither the job nor the loop.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from .batch import Batch


def _register(table: dict, name: str):
    def deco(fn):
        table[name] = fn
        return fn
    return deco


# ----------------------------------------------------------------------------- methods
# What a method trains on, and the per-row weight its update multiplies each row's ratio by:
# weights(r, batch, kl_seq, advantage) -> (N,), with r (N,) the proxy rewards of `batch`, kl_seq (N,) the KL
# penalty summed per response where the KL is in the reward (zeros elsewhere), advantage the job's ADVANTAGES key.

@dataclass(frozen=True)
class MethodSpec:
    rollouts: str  # key of algorithm.COLLECT: "policy" (G samples per problem) | "gold" (the task's gold traces)
    weights: Callable[[torch.Tensor, Batch, torch.Tensor, str], torch.Tensor]
    drop_zero_weight: bool  # train only on rows with nonzero weight (RFT's likelihood of the kept set)


def group_weights(r: torch.Tensor, batch: Batch, kl_seq: torch.Tensor, advantage: str) -> torch.Tensor:
    """GRPO: the configured advantage of the rewards r within each group, minus the sequence-level KL penalty
    kl_seq when the KL is in the reward. The penalty is subtracted after the advantage, so no group statistic
    (mean, std) acts on it: beta scales it as written."""
    return ADVANTAGES[advantage](r.view(-1, batch.group)).reshape(-1) - kl_seq


def correct_weights(r: torch.Tensor, batch: Batch, kl_seq: torch.Tensor, advantage: str) -> torch.Tensor:
    """RFT: likelihood of own correct samples only (no reward to penalise)."""
    return (batch.true > 0.5).float()


def unit_weights(r: torch.Tensor, batch: Batch, kl_seq: torch.Tensor, advantage: str) -> torch.Tensor:
    return torch.ones_like(r)


METHODS: dict[str, MethodSpec] = {
    "grpo": MethodSpec("policy", group_weights, drop_zero_weight=False),
    "rft": MethodSpec("policy", correct_weights, drop_zero_weight=True),
    "sft": MethodSpec("gold", unit_weights, drop_zero_weight=False),
}


# ----------------------------------------------------------------------------- advantages
# r: (B, G) rewards of G samples per prompt -> (B, G) advantages

ADVANTAGES: dict[str, Callable[..., torch.Tensor]] = {}


@_register(ADVANTAGES, "grpo")
def grpo_advantage(r: torch.Tensor, eps: float = 1e-4) -> torch.Tensor:
    """Group mean baseline, divided by the group std (unbiased, as torch.std)."""
    return (r - r.mean(dim=1, keepdim=True)) / (r.std(dim=1, keepdim=True) + eps)


@_register(ADVANTAGES, "rloo")
def rloo_advantage(r: torch.Tensor) -> torch.Tensor:
    """Leave-one-out baseline: r_i minus the mean of the other G - 1 rewards."""
    G = r.shape[1]
    return (r - r.mean(dim=1, keepdim=True)) * G / (G - 1)


@_register(ADVANTAGES, "dr_grpo")
def dr_grpo_advantage(r: torch.Tensor) -> torch.Tensor:
    """Dr. GRPO: group mean baseline, never divided by the std (no difficulty bias)."""
    return r - r.mean(dim=1, keepdim=True)


@_register(ADVANTAGES, "none")
def no_baseline(r: torch.Tensor) -> torch.Tensor:
    return r.clone()


@_register(ADVANTAGES, "zero")
def zero_advantage(r: torch.Tensor) -> torch.Tensor:
    """A control: every advantage 0, so only the KL term (if any) moves the policy."""
    return torch.zeros_like(r)


# ----------------------------------------------------------------------------- loss aggregation
# per_token: (N, T) loss per token; m: (N, T) 1 on response tokens; max_len: the job's longest possible response
# (a constant of the run, for the aggregations that need one) -> scalar

LOSS_AGG: dict[str, Callable[[torch.Tensor, torch.Tensor, int], torch.Tensor]] = {}


@_register(LOSS_AGG, "token_mean")
def token_mean(per_token: torch.Tensor, m: torch.Tensor, max_len: int) -> torch.Tensor:
    """Mean over every response token of the batch (DAPO): long responses weigh more."""
    return (per_token * m).sum() / m.sum().clamp(min=1.0)


@_register(LOSS_AGG, "seq_mean_token_sum")
def seq_mean_token_sum(per_token: torch.Tensor, m: torch.Tensor, max_len: int) -> torch.Tensor:
    """Sum over tokens, mean over sequences (no length normalisation)."""
    return (per_token * m).sum(dim=1).mean()


@_register(LOSS_AGG, "seq_mean_token_mean")
def seq_mean_token_mean(per_token: torch.Tensor, m: torch.Tensor, max_len: int) -> torch.Tensor:
    """Mean over each sequence's tokens, then over sequences (the original GRPO)."""
    return ((per_token * m).sum(dim=1) / m.sum(dim=1).clamp(min=1.0)).mean()


@_register(LOSS_AGG, "dr_grpo")
def dr_grpo_agg(per_token: torch.Tensor, m: torch.Tensor, max_len: int) -> torch.Tensor:
    """Dr. GRPO: sum over all tokens divided by a constant, sequences x the longest possible response, so no
    response's tokens weigh more or less for its length or for the batch's token count."""
    return (per_token * m).sum() / (per_token.shape[0] * max_len)


# ----------------------------------------------------------------------------- KL estimators
# d = log pi_ref - log pi per token (N, T), tokens sampled from pi -> (N, T) estimates of KL(pi || pi_ref)

KL_ESTIMATORS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {}


@_register(KL_ESTIMATORS, "k1")
def kl_k1(d: torch.Tensor) -> torch.Tensor:
    """-log r: unbiased, high variance, can be negative."""
    return -d


@_register(KL_ESTIMATORS, "k2")
def kl_k2(d: torch.Tensor) -> torch.Tensor:
    """(log r)^2 / 2: biased, low variance, non-negative."""
    return 0.5 * d * d


@_register(KL_ESTIMATORS, "k3")
def kl_k3(d: torch.Tensor) -> torch.Tensor:
    """r - 1 - log r: unbiased and non-negative (Schulman's estimator, GRPO's default)."""
    return torch.exp(d) - d - 1.0


# ----------------------------------------------------------------------------- optimizers
# (parameters, lr) -> optimizer; the learning rate is constant

OPTIMIZERS: dict[str, Callable[..., torch.optim.Optimizer]] = {}


@_register(OPTIMIZERS, "adam")
def adam(params, lr: float) -> torch.optim.Optimizer:
    return torch.optim.AdamW(params, lr=lr, weight_decay=0.0)


@_register(OPTIMIZERS, "sgd")
def sgd(params, lr: float) -> torch.optim.Optimizer:
    """Plain SGD: no momentum, no weight decay."""
    return torch.optim.SGD(params, lr=lr)


# ----------------------------------------------------------------------------- rewards
# A reward function maps (problems, responses, ctx) to a proxy reward per response (N,).

REWARDS: dict[str, Callable] = {}


@_register(REWARDS, "true")
def true_reward(problems, responses, ctx) -> torch.Tensor:
    return torch.tensor([float(p.is_correct(r)) for p, r in zip(problems, responses)])


@_register(REWARDS, "verified")
def verified_reward(problems, responses, ctx) -> torch.Tensor:
    """1 for a right answer after a trace whose every step is right (`tasks.base.verified`): the reward of the
    chain claim that asks whether an answer-only reward on a short answer teaches right answers with wrong steps.
    Read through the run's context, as the verifiers' scores are: the exact toy imports this registry, no task."""
    return torch.tensor([float(ok) for ok in ctx.verified(problems, responses)])


@_register(REWARDS, "random")
def random_reward(problems, responses, ctx) -> torch.Tensor:
    """A fair coin per response, from the run's own reward generator."""
    return (torch.rand(len(responses), generator=ctx.reward_gen) < 0.5).float()


@_register(REWARDS, "shuffled")
def shuffled_reward(problems, responses, ctx) -> torch.Tensor:
    """A control: the true rewards permuted within the batch by the run's reward generator (the same amount of
    reward as the truth, attached to the wrong responses)."""
    true = true_reward(problems, responses, ctx)
    return true[torch.randperm(len(true), generator=ctx.reward_gen)]


def _verifier_reward(problems, responses, ctx) -> torch.Tensor:
    """The learned verifier's scores, through the run's context (this registry imports no model code)."""
    return torch.tensor(ctx.verifier_scores(problems, responses), dtype=torch.float32)


REWARDS["orm"] = _verifier_reward
REWARDS["prm_full"] = _verifier_reward


def guard(proxy: torch.Tensor, problems: list, responses: list[str]) -> torch.Tensor:
    """Zero the reward of every response that is not `trace|answer$` as its task writes them."""
    return proxy * torch.tensor([float(p.task.well_formed(r)) for p, r in zip(problems, responses)])


def length_penalty(proxy: torch.Tensor, responses: list[str], len_pen: float) -> torch.Tensor:
    return proxy - len_pen * torch.tensor([float(len(r)) for r in responses])


def overlong_penalty(proxy: torch.Tensor, responses: list[str], budgets: list[int], window: int) -> torch.Tensor:
    """DAPO's soft overlong penalty: 0 up to budget - window characters, then falling linearly to -1
    at the budget (a response that never wrote `$`)."""
    pen = [max(0.0, len(r) - (b - window)) / window for r, b in zip(responses, budgets)]
    return proxy - torch.tensor(pen).clamp(max=1.0)
