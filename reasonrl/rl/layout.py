"""The two layouts of an RL batch: how a step's rollouts meet the model.

Both give logprobs(model) -> (logp, ent), each (N, T), and a mask m (N, T) that is 1 exactly on the
response tokens; everything downstream (surrogate, KL, aggregation, records) is per token and masked, so
it does not care which columns hold which token. `Layout` bundles a layout with how its rollouts are drawn;
the run (context.py) picks one, PLAIN or FAST, once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from ..logprobs import shared_token_logprobs, token_logprobs
from ..tasks import PAD_ID, encode
from ..tokens import encode_pairs, pad_ids

if TYPE_CHECKING:
    from ..sampling import Prefill
    from .batch import Batch


class FullSequences:
    """Plain layout: row i is prompt + response, right-padded; column t predicts character t + 1."""

    def __init__(self, X: torch.Tensor, m: torch.Tensor, temperature: float):
        self.X, self.m, self.temperature = X, m, temperature  # (N, T + 1), (N, T)

    def logprobs(self, model) -> tuple[torch.Tensor, torch.Tensor]:
        return token_logprobs(model, self.X, self.temperature)

    def select(self, rows: torch.Tensor) -> FullSequences:
        return FullSequences(self.X[rows], self.m[rows], self.temperature)

    def head(self, n: int) -> FullSequences:
        """The first n rows (whole groups when n is a multiple of G)."""
        return FullSequences(self.X[:n], self.m[:n], self.temperature)


class SharedPrefix:
    """Response layout: P prompts (P, L) computed once each; the G responses of group p (P, G, R) attend to it;
    column j of row p*G + g is response token j. `rows` (optional) keeps a subset of the N = P*G rows.
    `prefilled` (optional): the rollout's prefill of the prompts by the policy (a `sampling.Prefill`, with its
    graph); it serves the next `logprobs` call only, which must be that model's, its weights unchanged."""

    def __init__(self, prompts: torch.Tensor, lens: torch.Tensor, resp: torch.Tensor, temperature: float,
                 rows: torch.Tensor | None = None, prefilled: Prefill | None = None):
        self.prompts, self.lens, self.resp, self.temperature, self.rows = prompts, lens, resp, temperature, rows
        self.prefilled = prefilled
        m = (resp != PAD_ID).float().flatten(0, 1)  # (N, R)
        self.m = m if rows is None else m[rows]

    def logprobs(self, model) -> tuple[torch.Tensor, torch.Tensor]:
        pre, self.prefilled = self.prefilled, None  # once: after an update the weights have moved
        logp, ent = shared_token_logprobs(model, self.prompts, self.lens, self.resp, self.temperature,
                                          None if pre is None else pre.of(model))
        return (logp, ent) if self.rows is None else (logp[self.rows], ent[self.rows])

    def head(self, n: int) -> SharedPrefix:
        """The first n rows, as whole groups: n must be a multiple of G (all rows when n >= N)."""
        G = self.resp.shape[1]
        if self.rows is not None or n % G:
            raise ValueError(f"head({n}): needs whole groups of {G} rows of an unselected batch")
        return SharedPrefix(self.prompts[:n // G], self.lens[:n // G], self.resp[:n // G], self.temperature)

    def select(self, rows: torch.Tensor) -> SharedPrefix:
        # the forward still runs on whole groups (the prompt is shared); only the selected rows enter the loss
        return SharedPrefix(self.prompts, self.lens, self.resp, self.temperature,
                            rows if self.rows is None else self.rows[rows])


def full_sequences(batch: Batch, device, temperature: float) -> FullSequences:
    X, M = encode_pairs(list(zip([p.prompt for p in batch.problems], batch.responses)), device)
    return FullSequences(X, M[:, 1:], temperature)  # m: 1 where the predicted token belongs to the response


def shared_prefix(batch: Batch, device, temperature: float) -> SharedPrefix:
    G = batch.group
    prompts = [p.prompt for p in batch.problems[::G]]
    if any(p.prompt != prompts[i // G] for i, p in enumerate(batch.problems)):
        raise ValueError("batch: rows must come in groups of G with the same prompt")
    resp = pad_ids([encode(r) for r in batch.responses], device)  # (N, R)
    lens = torch.tensor([len(p) for p in prompts], device=device)
    prompt_ids = pad_ids([encode(p) for p in prompts], device)
    return SharedPrefix(prompt_ids, lens, resp.view(len(prompts), G, -1), temperature, prefilled=batch.prefill)


@dataclass(frozen=True)
class Layout:
    """One of the two computations of a step: how rollouts are drawn and how a batch meets the model."""
    shared: bool  # sample_responses(shared=...): prefix-shared rollouts
    build: Callable[[Batch, torch.device, float], FullSequences | SharedPrefix]
    # the forward that scores the rollouts keeps its graph and serves as the first update's forward, and it starts
    # from the rollout's prefill of the prompts where the rollout kept it (collect.keeps_prefill; the weights have
    # not moved yet, so each is the same computation)
    reuse_forward: bool


PLAIN = Layout(shared=False, build=full_sequences, reuse_forward=False)
FAST = Layout(shared=True, build=shared_prefix, reuse_forward=True)
