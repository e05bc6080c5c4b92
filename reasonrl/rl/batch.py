"""A step's batch: the problems drawn, one response per row (a policy sample, or the gold trace for SFT), and
each row's two rewards: the proxy the update trains on and the true one that is always recorded."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from ..tasks import Problem

if TYPE_CHECKING:
    from ..sampling import Prefill


@dataclass
class Batch:
    problems: list[Problem]  # one per sequence (N)
    responses: list[str]
    proxy: torch.Tensor  # (N,) reward used for training
    true: torch.Tensor  # (N,) verifiable reward
    group: int  # sequences per prompt (G, or 1 for gold)
    zero_frac: float  # fraction of the groups whose proxy rewards are all equal
    rollouts: int = 0  # policy samples drawn to make this batch (counted against the run's rollout budget)
    sampled: Batch | None = None  # dynamic sampling: every group sampled this step, before the filter
    # the rollout's prefill of the B prompts, with its graph, for the first training forward to reuse (where
    # Plan.keep_prefill); sample_groups' `keep`
    prefill: Prefill | None = None

    def take_prefill(self) -> Prefill | None:
        """The kept prefill, no longer held here: it serves one forward, and the batch outlives the step (the
        loop keeps it for its records), which would otherwise keep the prefill's graph alive into the next."""
        pre, self.prefill = self.prefill, None
        return pre

    def groups(self, idx: list[int]) -> Batch:
        """The batch of groups idx (in that order)."""
        G = self.group
        rows = [i * G + g for i in idx for g in range(G)]
        proxy = self.proxy[rows]
        return Batch([self.problems[i] for i in rows], [self.responses[i] for i in rows], proxy, self.true[rows], G,
                     float(zero_variance(proxy, G).float().mean()) if idx else 0.0)


def zero_variance(proxy: torch.Tensor, G: int) -> torch.Tensor:
    """(B,) whether each group of G rows has equal proxy rewards (nothing for a group advantage to learn from)."""
    return proxy.view(-1, G).std(dim=1) == 0
