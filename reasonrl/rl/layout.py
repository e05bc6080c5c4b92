"""How a step is computed, as against what it computes: the two layouts of an RL batch, and the run's `Plan`.

Both layouts give logprobs(model) -> (logp, ent), each (N, T), and a mask m (N, T) that is 1 exactly on the
response tokens; everything downstream (surrogate, KL, aggregation, records) is per token and masked, so
it does not care which columns hold which token. `Layout` bundles a layout with how its rollouts are drawn.

`Plan` is the step's memory and speed policy, decided once per run from the job (`plan_for`, which the run's
Context calls): the layout, PLAIN or FAST; whether a round keeps its prefill for the first training forward;
whether the training forward recomputes its blocks in backward rather than keep their activations; how many
groups a forward without a graph takes at a time; how many groups the reference scores for the KL record at
beta = 0. The step (algorithm.py) reads it and
holds no such decision itself.
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
    from .job import Job


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
    graph); it serves the next `logprobs` call only, which must be that model's, its weights unchanged.
    `recompute`: a forward with a graph keeps each half block's input only (shared_token_logprobs). `slice_groups`:
    a forward without a graph over more groups than this runs on that many groups at a time."""

    def __init__(self, prompts: torch.Tensor, lens: torch.Tensor, resp: torch.Tensor, temperature: float,
                 rows: torch.Tensor | None = None, prefilled: Prefill | None = None, recompute: bool = False,
                 slice_groups: int | None = None):
        self.prompts, self.lens, self.resp, self.temperature, self.rows = prompts, lens, resp, temperature, rows
        self.prefilled, self.recompute, self.slice_groups = prefilled, recompute, slice_groups
        m = (resp != PAD_ID).float().flatten(0, 1)  # (N, R)
        self.m = m if rows is None else m[rows]

    def logprobs(self, model) -> tuple[torch.Tensor, torch.Tensor]:
        pre, self.prefilled = self.prefilled, None  # once: after an update the weights have moved
        P, step = len(self.prompts), self.slice_groups
        if pre is None and step is not None and P > step and not torch.is_grad_enabled():
            # each group's rows attend to their own prompt only, so slicing the groups leaves every row's inputs
            # as they are (its numbers up to rounding: a product over fewer rows may round differently); the
            # slices keep the batch's response width, so the columns line up when joined
            parts = [shared_token_logprobs(model, self.prompts[i:i + step], self.lens[i:i + step],
                                           self.resp[i:i + step], self.temperature) for i in range(0, P, step)]
            logp, ent = torch.cat([lp for lp, _ in parts]), torch.cat([e for _, e in parts])
        else:
            logp, ent = shared_token_logprobs(model, self.prompts, self.lens, self.resp, self.temperature,
                                              None if pre is None else pre.of(model), self.recompute)
        return (logp, ent) if self.rows is None else (logp[self.rows], ent[self.rows])

    def head(self, n: int) -> SharedPrefix:
        """The first n rows, as whole groups: n must be a multiple of G (all rows when n >= N)."""
        G = self.resp.shape[1]
        if self.rows is not None or n % G:
            raise ValueError(f"head({n}): needs whole groups of {G} rows of an unselected batch")
        return SharedPrefix(self.prompts[:n // G], self.lens[:n // G], self.resp[:n // G], self.temperature,
                            recompute=self.recompute, slice_groups=self.slice_groups)

    def select(self, rows: torch.Tensor) -> SharedPrefix:
        # the forward still runs on whole groups (the prompt is shared); only the selected rows enter the loss
        return SharedPrefix(self.prompts, self.lens, self.resp, self.temperature,
                            rows if self.rows is None else self.rows[rows], recompute=self.recompute,
                            slice_groups=self.slice_groups)


def full_sequences(batch: Batch, device, temperature: float) -> FullSequences:
    X, M = encode_pairs(list(zip([p.prompt for p in batch.problems], batch.responses)), device)
    return FullSequences(X, M[:, 1:], temperature)  # m: 1 where the predicted token belongs to the response


def shared_prefix(batch: Batch, device, temperature: float, recompute: bool = False,
                  slice_groups: int | None = None) -> SharedPrefix:
    """The batch in the response layout; the sequences take the batch's kept prefill, if any, off it.
    `recompute` and `slice_groups` as in SharedPrefix."""
    G = batch.group
    prompts = [p.prompt for p in batch.problems[::G]]
    if any(p.prompt != prompts[i // G] for i, p in enumerate(batch.problems)):
        raise ValueError("batch: rows must come in groups of G with the same prompt")
    resp = pad_ids([encode(r) for r in batch.responses], device)  # (N, R)
    lens = torch.tensor([len(p) for p in prompts], device=device)
    prompt_ids = pad_ids([encode(p) for p in prompts], device)
    return SharedPrefix(prompt_ids, lens, resp.view(len(prompts), G, -1), temperature, prefilled=batch.take_prefill(),
                        recompute=recompute, slice_groups=slice_groups)


@dataclass(frozen=True)
class Layout:
    """One of the two computations of a step: how rollouts are drawn and how a batch meets the model."""
    shared: bool  # sample_responses(shared=...): prefix-shared rollouts
    # (batch, device, temperature) -> the sequences; the fast layout's also takes recompute= and slice_groups=
    build: Callable[..., FullSequences | SharedPrefix]
    # the forward that scores the rollouts keeps its graph and serves as the first update's forward, and it starts
    # from the rollout's prefill of the prompts where the rollout kept it (Plan.keep_prefill; the weights have
    # not moved yet, so each is the same computation)
    reuse_forward: bool


PLAIN = Layout(shared=False, build=full_sequences, reuse_forward=False)
FAST = Layout(shared=True, build=shared_prefix, reuse_forward=True)


# At beta = 0 the reference's log-probs feed only the `losses/kl` record, so the reference scores the batch's
# first 8 groups for it (64 of the default 256 responses): its forward over the whole batch was a sizeable share
# of a step (docs/performance.md, "Measurements the code cites").
KL_GROUPS = 8

# A run whose batch holds more response tokens than this (B x G x the longest response of its problems) recomputes
# its training forward's blocks in backward. The graph grows with those tokens: at 256 x 37 (a chain run) the
# training forward's graph took a run's peak RSS to 794-800 MB under tcmalloc, 973-1,019 MB under glibc's allocator,
# against the 600 MB target; every hop kind, at most 256 x 14, stays under it without. Recomputing costs a second
# forward of the blocks, 12% of a chain run's wall clock (docs/performance.md, "Measurements the code cites").
RECOMPUTE_ABOVE = 4096


@dataclass(frozen=True)
class Plan:
    """The step's memory and speed policy for one run. The trained weights do not depend on it beyond the
    layout's floating-point summation order; `kl_groups` sets which rows the `losses/kl` record reads at
    beta = 0, and nothing else."""
    layout: Layout
    # a round keeps its prefill of the prompts, with its graph, for the first training forward (the same
    # computation: the weights have not moved); sample_responses' `keep`
    keep_prefill: bool
    # at beta = 0 the reference scores the batch's first kl_groups groups, for the `losses/kl` record only; with
    # a KL term (beta > 0) it scores every row
    kl_groups: int
    # the training forward keeps only each half block's input and runs it again in backward (the same numbers);
    # the fast layout only: the plain one is the reference the fast one is tested against
    recompute: bool = False
    # a forward without a graph over more groups than this (dynamic sampling's over everything it drew, up to
    # (1 + max_resample) B groups) runs this many groups at a time, so its transients stay a training batch's;
    # None: in one piece. The fast layout only, like recompute
    slice_groups: int | None = None

    def __post_init__(self):
        if (self.recompute or self.slice_groups is not None) and not self.layout.shared:
            raise ValueError("Plan: recompute and slice_groups are choices of the fast layout; the plain one is "
                             "the reference")

    def build(self, batch: Batch, device, temperature: float) -> FullSequences | SharedPrefix:
        """The batch in the plan's layout, its forwards recomputing and sliced where the plan says so."""
        if not self.layout.shared:
            return self.layout.build(batch, device, temperature)
        return self.layout.build(batch, device, temperature, recompute=self.recompute, slice_groups=self.slice_groups)


def plan_for(job: Job, shared: bool = True, verifier: bool = False) -> Plan:
    """The plan of a run of `job` on the fast layout (`shared`) or the plain reference one, with or without a
    learned verifier scoring its batches.

    The prefill is kept on the fast layout only (the plain one prefills every row in its own forward), and
    only when the round is the batch (a dynamic-sampling round may be filtered out), the batch gets one update
    and no verifier scores it: with two updates, or under a verifier's forward, keeping it raised a stage's
    peak RSS past the 600 MB target (docs/performance.md, "Measurements the code cites"). The fast layout
    recomputes its blocks where the batch's response tokens exceed RECOMPUTE_ABOVE, and under dynamic sampling
    scores everything it drew B groups at a time (that forward peaked `dyneq` at 616-631 MB under tcmalloc, 642-742
    MB under glibc's allocator, with the heap trimmed after each of its layers: docs/performance.md)."""
    layout = FAST if shared else PLAIN
    keep = layout.reuse_forward and not job.dynamic_sampling and job.num_iterations == 1 and not verifier
    return Plan(layout=layout, keep_prefill=keep, kl_groups=KL_GROUPS,
                recompute=layout.shared and batch_tokens(job) > RECOMPUTE_ABOVE,
                slice_groups=job.B if layout.shared and job.dynamic_sampling else None)


def batch_tokens(job: Job) -> int:
    """The most response tokens a batch of `job` can hold: B x G x the longest response its problems allow."""
    return job.B * job.G * job.response_budget
