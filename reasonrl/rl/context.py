"""One RL run's state, which every step reads and advances: the job, the policy and its frozen reference, the
learned verifier, the run's three random streams, the plan (the step's memory and speed policy, layout.py), the
rollouts drawn so far, and the loop's hooks."""

from __future__ import annotations

import random
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field

import torch

from ..tasks.base import verified
from ..verifiers import score as verifier_score
from .job import Job
from .layout import Plan, plan_for


def _nothing() -> None:  # the default hook; memory.py returns it too (its name is tested)
    return None


def _plain_forward(model: torch.nn.Module) -> AbstractContextManager:
    return nullcontext()


@dataclass(frozen=True)
class Hooks:
    """Engineering the step runs at its phase boundaries, none of which moves a number. The step names where its
    phases meet; what happens there is decided outside the algorithm: the stages pass the memory policy
    (rl/memory.py), and the default does nothing."""
    # before each of the step's large transients (a verifier's forward, dynamic sampling's forward over everything
    # it drew, the training forward and backward, a second update), and by the loop after each step
    between_phases: Callable[[], object] = _nothing
    # wraps the forward over everything dynamic sampling drew, the one forward that would otherwise set the peak
    wide_forward: Callable[[torch.nn.Module], AbstractContextManager] = _plain_forward


@dataclass
class Context:
    job: Job
    policy: torch.nn.Module
    # the frozen reference; None runs without one, where beta is 0: no reference forward and no `losses/kl`
    # record (TRL's GRPOTrainer loads none at beta 0; benchmarks/peer_trl.py times that job too). train_rl always
    # passes one: the run's logs and the reports read `losses/kl`
    ref: torch.nn.Module | None
    verifier: object | None
    rng: random.Random  # training problems
    sample_gen: torch.Generator  # policy samples
    reward_gen: torch.Generator  # the random reward's coin flips
    shared_prefix: bool = True  # fast path (prefix-shared rollouts and training); False: the plain reference
    hooks: Hooks = field(default_factory=Hooks)
    # how the step is computed; by default plan_for(job, shared_prefix, verifier), decided here once per run
    plan: Plan | None = None
    rollouts: int = 0  # policy samples drawn so far in this run

    def __post_init__(self):
        if self.ref is None and self.job.beta > 0:
            raise ValueError(f"ref: a KL term (beta {self.job.beta}) needs the reference model; only beta 0 runs "
                             "without one")
        if self.plan is None:
            self.plan = plan_for(self.job, self.shared_prefix, self.verifier is not None)

    def verified(self, problems: list, responses: list[str]) -> list[bool]:
        """Each response's trace-verified correctness: the answer and every step right (the `verified` reward)."""
        return [verified(p, r) for p, r in zip(problems, responses)]

    def verifier_scores(self, problems: list, responses: list[str]) -> list[float]:
        """The learned verifier's score of each response (the `orm` and `prm_full` rewards)."""
        return verifier_score(self.verifier, problems, responses)
