"""What every task shares: the response format, and the two protocols the rest of the library programs
against. A task module (hop.py) implements them; nothing outside it knows what a problem is made of.

A response is `<trace><ANSWER_MARK><answer><END>`: the steps of the reasoning (possibly none), then the
answer. Samplers stop at END; the reward, the verifiers and the evaluation read the rest through the
problem that was asked.

A sample is *verified* (`verified`) when its answer is right and its trace is right step by step: the
primary correctness of every evaluation (accuracy, sampled accuracy, pass@k). `Problem.is_correct`, a right
answer whatever the trace, is the secondary, answer-only correctness: a guess passes it, never `verified`.
"""

from __future__ import annotations

import random
import re
from typing import Protocol

ANSWER_MARK, END = "|", "$"
MODES = ("cot", "direct")  # targets with the trace, and the answer alone


def trace_of(response: str) -> str:
    """The part of a response before its first ANSWER_MARK (a trailing END of an unfinished one dropped)."""
    head = response.split(ANSWER_MARK, 1)[0]
    return head[:-1] if ANSWER_MARK not in response and head.endswith(END) else head


class Problem(Protocol):
    """One problem of a task: frozen, comparable, and written to data files with `to_dict`."""

    prompt: str  # the text the model conditions on
    trace: str  # the gold reasoning steps, one character each
    answer: str

    @property
    def task(self) -> Task: ...  # the task that made it

    @property
    def difficulty(self) -> int: ...  # the value of task.difficulty results are grouped by

    @property
    def budget(self) -> int: ...  # characters a sampler draws for it: the gold response and room to overshoot

    @property
    def key(self) -> str: ...  # identity independent of presentation order: keeps validation off test sets

    def target(self, mode: str) -> str: ...  # the gold response, with trace ("cot") or without ("direct")

    def is_correct(self, response: str) -> bool: ...  # the answer is right, whatever the trace (answer-only)

    def step_labels(self, trace: str) -> list[bool]: ...  # one per trace character: is that step right?
    # `verified(problem, response)` below is read through is_correct, step_labels and trace: a task says how
    # its traces are checked by what step_labels calls right, and the gold trace's length

    def classify(self, response: str) -> str: ...  # the outcome type, one of task.failure_types

    def random_guess(self, k: int) -> float: ...  # pass@k of guessing among the answers the prompt allows

    def to_dict(self) -> dict: ...


def verified(problem: Problem, response: str) -> bool:
    """A right answer after a trace exactly as long as the gold trace with every step right. For hop and
    chain this is `trace_of(response) == problem.trace` and a right answer (each step label pins its
    character given the ones before it; tests/test_verified.py): stated through the labels so a task
    whose gold trace is not the only right one can say so. A direct answer (no trace) is never verified."""
    trace = trace_of(response)
    return (problem.is_correct(response) and len(trace) == len(problem.trace)
            and all(problem.step_labels(trace)))


class Task(Protocol):
    """A reasoning task: how to draw its problems at a difficulty, and how to read a response to one."""

    name: str
    chars: str  # every character its prompts and responses use (the vocabulary is their union over tasks)
    difficulty: str  # the name of the per-problem difficulty (outcome column, "by_<difficulty>" keys)
    failure_types: tuple[str, ...]  # the outcome types of `Problem.classify`, "correct" first
    example_spec: dict  # a distribution spec and an evaluation cell (holding `difficulty`) the
    example_cell: dict  # conformance tests draw from
    example_narrow: dict  # ... and a spec with k_min: difficulties from k_min to k_max only

    def sample(self, rng: random.Random, spec: dict) -> Problem: ...  # one problem from the difficulty spec

    def check_spec(self, spec: dict) -> None: ...  # ConfigError naming the spec key that is out of range

    def max_budget(self, spec: dict) -> int: ...  # the largest Problem.budget under spec

    def longest(self, spec: dict, response: str) -> int: ...  # longest prompt + response under spec

    def eval_set(self, spec: dict, count: int, seed: int, exclude: frozenset[str]) -> list[Problem]: ...

    def from_dict(self, d: dict) -> Problem: ...

    def parse_answer(self, response: str) -> str | None: ...

    def thinks(self, response: str) -> bool: ...  # does it write at least one trace step before its answer?

    def well_formed(self, response: str) -> bool: ...  # a trace, the mark, one answer, the end: nothing else

    def probes(self, problem: Problem, rng: random.Random) -> dict[str, str]: ...  # one response per outcome type


class PatternTask:
    """`thinks` and `well_formed` from two patterns of the task's response format (a mixin for tasks)."""

    thinks_pattern: re.Pattern  # matches a response that writes a trace step before its answer mark
    well_formed_pattern: re.Pattern  # matches exactly a trace, the mark, one answer and the end

    def thinks(self, response: str) -> bool:
        return bool(self.thinks_pattern.match(response))

    def well_formed(self, response: str) -> bool:
        return bool(self.well_formed_pattern.match(response))
