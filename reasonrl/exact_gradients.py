"""Gradients of the exact toy's objective (reasonrl.exact): the exact one (autograd through the enumerated
sum) and the sampled policy-gradient estimators the demonstrations check against it: a baseline of
`BASELINES` and a KL placement of `KL_MODE_LOSSES`, with the RL loop's own k1 and k3 estimators."""

from __future__ import annotations

from collections.abc import Callable

import torch

from .exact import (
    Toy,
    ToyPolicy,
    all_logprobs,
    exact_objective,
    gather_tokens,
    sample,
    sequence_logprob,
    token_logprobs,
)
from .rl.variants import KL_ESTIMATORS

KL_MODES = ("reward_k1", "loss_k3")  # where the KL penalty goes (keys of KL_MODE_LOSSES)


# ----------------------------------------------------------------------------- sampled estimators
# A baseline maps the returns of one group of samples (B,) to their advantages (B,). The RL loop's
# rl.variants.ADVANTAGES work on (prompts, G) with another epsilon; these four keep the toy's own epsilon
# (its committed results depend on it), and `mean` is the batch-mean (Dr. GRPO) baseline.

def _adv_none(ret: torch.Tensor) -> torch.Tensor:
    return ret


def _adv_mean(ret: torch.Tensor) -> torch.Tensor:
    # The batch mean includes the sample itself, which shrinks the expected gradient by (B - 1) / B.
    return ret - ret.mean()


def _adv_rloo(ret: torch.Tensor) -> torch.Tensor:
    # The baseline of sample i is the mean of the other B - 1: independent of sample i, hence unbiased.
    b = ret.numel()
    return ret - (ret.sum() - ret) / (b - 1)


def _adv_grpo(ret: torch.Tensor) -> torch.Tensor:
    return (ret - ret.mean()) / (ret.std() + 1e-6)


BASELINES: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "none": _adv_none, "mean": _adv_mean, "rloo": _adv_rloo, "grpo": _adv_grpo,
}


def advantages(ret: torch.Tensor, estimator: str) -> torch.Tensor:
    """Advantages of one group of returns (B,) under a baseline of BASELINES: (B,)."""
    return BASELINES[estimator](ret)


def _loss_reward_k1(policy: ToyPolicy, toy: Toy, idx: torch.Tensor, beta: float,
                    estimator: str) -> torch.Tensor:
    lp = sequence_logprob(policy, idx)  # (B,)
    # Sequence-level k1 in the return, treated as a constant: E[(R - b) ∇log pi] is then exactly ∇J.
    ret = toy.reward[idx] - beta * KL_ESTIMATORS["k1"](toy.ref_lp[idx] - lp.detach())
    return -(advantages(ret, estimator) * lp).mean()


def _loss_loss_k3(policy: ToyPolicy, toy: Toy, idx: torch.Tensor, beta: float,
                  estimator: str) -> torch.Tensor:
    tok = token_logprobs(policy, idx)  # (B, 6)
    k3 = KL_ESTIMATORS["k3"](gather_tokens(toy.ref_table, idx) - tok)  # (B, 6), 0 at padding
    # Summed over the tokens of a response, averaged over responses: only the KL placement differs from
    # reward_k1, not the weighting of long and short responses.
    pg = -(advantages(toy.reward[idx], estimator) * tok.sum(1)).mean()
    return pg + beta * k3.sum(1).mean()


KL_MODE_LOSSES: dict[str, Callable[..., torch.Tensor]] = {
    "reward_k1": _loss_reward_k1, "loss_k3": _loss_loss_k3,
}


def surrogate_loss(policy: ToyPolicy, toy: Toy, idx: torch.Tensor, beta: float, estimator: str,
                   kl_mode: str = "reward_k1") -> torch.Tensor:
    """The loss whose negative gradient is the sampled policy-gradient estimate for responses idx (B,)."""
    return KL_MODE_LOSSES[kl_mode](policy, toy, idx, beta, estimator)


def flat_grad(policy: ToyPolicy) -> torch.Tensor:
    """All parameter gradients as one vector (D,)."""
    return torch.cat([p.grad.reshape(-1) for p in policy.parameters()]).clone()


def exact_gradient(policy: ToyPolicy, toy: Toy, beta: float) -> tuple[torch.Tensor, float]:
    """∇J by autograd through the sum over all responses: (gradient (D,), J)."""
    policy.zero_grad()
    obj = exact_objective(all_logprobs(policy), toy, beta)
    obj.backward()
    return flat_grad(policy), float(obj.detach())


def sampled_gradient(policy: ToyPolicy, toy: Toy, beta: float, batch: int, gen: torch.Generator,
                     estimator: str, kl_mode: str = "reward_k1") -> torch.Tensor:
    """One estimate of the ascent direction from `batch` sampled responses: (D,)."""
    idx = sample(policy, batch, gen)
    policy.zero_grad()
    (-surrogate_loss(policy, toy, idx, beta, estimator, kl_mode)).backward()
    return flat_grad(policy)
