"""What every task shares: the token alphabet, the response format, the spec keys, the two protocols the rest
of the library programs against, and `SizedTask`, the code hop and chain share. A task module (hop.py)
implements the protocols; nothing outside it knows what a problem is made of.

A response is `<trace><ANSWER_MARK><answer><END>`: the steps of the reasoning (possibly none), then the
answer. Samplers stop at END; the reward, the verifiers and the evaluation read the rest through the
problem that was asked.

A sample is *verified* (`verified`) when its answer is right and its trace is right step by step: the
primary correctness of every evaluation (accuracy, sampled accuracy, pass@k). `Problem.is_correct`, a right
answer whatever the trace, is the secondary, answer-only correctness: a guess passes it, never `verified`.

Token ids are 1 + the position of a character in ALPHABET; 0 pads. ALPHABET is fixed and only ever grows at
its end, so a task's ids never depend on which other tasks exist: a task's `chars` must lie in it (get_task
checks), and a model's vocabulary is its own task's (`vocab_size`). It holds every printable ASCII
character, the 35 of hop and chain first in the order they always had, so a new task needs no edit here.

Specs. A distribution spec (what training draws from) holds `n_range` [lo, hi] (the sizes, inclusive) and
optionally `<d>_min` / `<d>_max`, where <d> is the task's `difficulty` name: the difficulties drawn,
uniform in <d>_min..min(<d>_max, the most a size allows). An evaluation cell holds `n` and `<d>`: one size
and one difficulty. `distribution` and `cell` build them; nothing else spells the keys.
"""

from __future__ import annotations

import random
import re
from typing import Protocol

from ..config import ConfigError, check

ANSWER_MARK, END = "|", "$"
MODES = ("cot", "direct")  # targets with the trace, and the answer alone

# Append-only: a character's position is its token id - 1 in every checkpoint ever written.
ALPHABET = ("abcdefghijklmnop0123456789>,?=|$+-*"  # hop's characters, then chain's
            "qrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ!\"#%&'()./:;<@[\\]^_`{}~ ")  # the rest of printable ASCII
PAD_ID = 0
STOI = {c: i + 1 for i, c in enumerate(ALPHABET)}
ITOS = {i: c for c, i in STOI.items()}
END_ID = STOI[END]


def encode(text: str) -> list[int]:
    try:
        return [STOI[c] for c in text]
    except KeyError as e:
        raise ValueError(f"text: character {e.args[0]!r} is not in the alphabet (tasks/base.py)") from None


def decode(ids: list[int]) -> str:
    """Inverse of encode; PAD decodes to nothing."""
    return "".join(ITOS.get(i, "") for i in ids)


def check_chars(task: Task) -> None:
    """A task's characters must be in ALPHABET and include the response format's marks."""
    bad = sorted(set(task.chars) - set(ALPHABET))
    check(not bad, f"tasks.{task.name}.chars", f"characters {bad} are not in the alphabet",
          "use printable ASCII characters (tasks/base.py ALPHABET)")
    missing = sorted({ANSWER_MARK, END} - set(task.chars))
    check(not missing, f"tasks.{task.name}.chars", f"must include the response marks {missing}")


def vocab_size(task: Task) -> int:
    """Embedding rows a model of `task` needs: PAD and the largest id of the task's characters."""
    return 1 + max(STOI[c] for c in task.chars)


def trace_of(response: str) -> str:
    """The part of a response before its first ANSWER_MARK (a trailing END of an unfinished one dropped)."""
    head = response.split(ANSWER_MARK, 1)[0]
    return head[:-1] if ANSWER_MARK not in response and head.endswith(END) else head


def answer_span(response: str) -> str | None:
    """The text between the first ANSWER_MARK and the first END after it; None without both."""
    i = response.find(ANSWER_MARK)
    j = response.find(END, i + 1) if i >= 0 else -1
    return response[i + 1: j] if j >= 0 else None


def distribution(task: Task, n_range, lo: int = 1, hi: int | None = None) -> dict:
    """A distribution spec of `task`: sizes in n_range, difficulties lo..hi (None: as far as a size allows)."""
    d = task.difficulty
    return {"n_range": n_range} | ({f"{d}_min": lo} if lo != 1 else {}) | ({f"{d}_max": hi} if hi is not None else {})


def cell(task: Task, n: int, difficulty: int) -> dict:
    """An evaluation cell of `task`: problems of size n at one difficulty."""
    return {"n": n, task.difficulty: difficulty}


class Problem(Protocol):
    """One problem of a task: frozen, comparable, and written to data files with `to_dict`."""

    prompt: str  # the text the model conditions on
    trace: str  # the gold reasoning steps: each character is determined by the prompt and those before it
    answer: str  # at least one character; none of them ANSWER_MARK or END

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

    def to_dict(self) -> dict: ...  # holds "task": its task's name (data files are read by it)


def verified(problem: Problem, response: str) -> bool:
    """A right answer after a trace exactly as long as the gold trace with every step right. For hop and
    chain this is `trace_of(response) == problem.trace` and a right answer (each step label pins its
    character given the ones before it; tests/test_verified.py): stated through the labels so a task
    whose gold trace is not the only right one can say so. A direct answer (no trace) is never verified."""
    trace = trace_of(response)
    return (problem.is_correct(response) and len(trace) == len(problem.trace)
            and all(problem.step_labels(trace)))


class Task(Protocol):
    """A reasoning task: how to draw its problems from a spec, and how to read a response to one."""

    name: str  # its module's name, reasonrl/tasks/<name>.py (no underscore: data/<name>_<role>.jsonl)
    chars: str  # every character its prompts and responses use, all in ALPHABET (with ANSWER_MARK and END)
    difficulty: str  # the name of the per-problem difficulty (spec keys, outcome column, "by_<difficulty>")
    failure_types: tuple[str, ...]  # the outcome types of `Problem.classify`, "correct" first
    example_spec: dict  # for the conformance suite: a distribution spec reaching several difficulties,
    example_narrow: dict  # one whose <d>_min is above 1 (difficulties <d>_min..<d>_max only),
    example_cell: dict  # and an evaluation cell

    def sample(self, rng: random.Random, spec: dict) -> Problem: ...  # one problem from a distribution spec

    def check_spec(self, spec: dict) -> None: ...  # ConfigError naming the spec key that is out of range

    def max_budget(self, spec: dict) -> int: ...  # the largest Problem.budget under spec

    def longest(self, spec: dict, response: str) -> int: ...  # longest prompt + response ("cot", "direct",
    # "sampled": the prompt and a Problem.budget) under spec

    def eval_set(self, spec: dict, count: int, seed: int, exclude: frozenset[str]) -> list[Problem]: ...  # a cell

    def from_dict(self, d: dict) -> Problem: ...

    def parse_answer(self, response: str) -> str | None: ...

    def thinks(self, response: str) -> bool: ...  # does it write at least one trace step before its answer?
    # (any trace: a degenerate one passes too; the think rates count `thinks_well`, below)

    def well_formed(self, response: str) -> bool: ...  # a trace, the mark, one answer, the end: nothing else

    def thinks_well(self, response: str) -> bool: ...  # thinks and is well-formed: what a think rate counts

    def probes(self, problem: Problem, rng: random.Random) -> dict[str, str]: ...  # one response per outcome type


class GoldProblem:
    """`target` and `is_correct` from a problem's trace, answer and task (a mixin for problem classes)."""

    def target(self, mode: str) -> str:
        if mode == "cot":
            return self.trace + ANSWER_MARK + self.answer + END
        if mode == "direct":
            return ANSWER_MARK + self.answer + END
        raise ValueError(f"mode={mode!r}: must be one of {MODES}")

    def is_correct(self, response: str) -> bool:
        return self.task.parse_answer(response) == self.answer


class PatternTask:
    """`thinks`, `well_formed` and `thinks_well` from two patterns of the task's response format (a mixin for
    tasks)."""

    thinks_pattern: re.Pattern  # matches a response that writes a trace step before its answer mark
    well_formed_pattern: re.Pattern  # matches exactly a trace, the mark, one answer and the end

    def thinks(self, response: str) -> bool:
        return bool(self.thinks_pattern.match(response))

    def well_formed(self, response: str) -> bool:
        return bool(self.well_formed_pattern.match(response))

    def thinks_well(self, response: str) -> bool:
        """A response that thinks *and* is well-formed (a trace, the mark, one answer, the end): what every think
        rate the project reports counts (evaluate.think_profile's "think", rl/records.py's `rollout/think_rate`).
        `thinks` alone passes a degenerate policy (trace steps then garbage, or two answers); it is kept beside
        it as "think_any" / `rollout/think_any_rate`, so a policy that learns the look of a trace and not its
        form shows as the gap between the two."""
        return self.thinks(response) and self.well_formed(response)


class SizedTask(PatternTask):
    """A task whose problems have a size n (min_n..max_n) and a difficulty 1..max_difficulty(n): the spec
    checks, the sampling, the answer parse and the evaluation-set loop, from five members of the task:
    `max_n`, `max_difficulty`, `make`, `distinct` and `answer_pattern` (and `min_n`, 2 unless set)."""

    difficulty = "k"
    min_n = 2
    max_n: int
    answer_pattern: re.Pattern  # fullmatches exactly the answers parse_answer accepts

    def max_difficulty(self, n: int) -> int:
        """The largest difficulty a problem of size n can have (at least 1)."""
        raise NotImplementedError

    def make(self, rng: random.Random, n: int, k: int) -> Problem:
        """A random problem of size n and difficulty k, drawn from `rng` only."""
        raise NotImplementedError

    def distinct(self, n: int) -> int:
        """How many different problems (keys) one evaluation cell of size n holds."""
        raise NotImplementedError

    def eval_rng(self, n: int, k: int, seed: int) -> random.Random:
        return random.Random(f"{self.name}-{n}-{k}-{seed}")

    def parse_answer(self, response: str) -> str | None:
        ans = answer_span(response)
        return ans if ans is not None and self.answer_pattern.fullmatch(ans) else None

    def top(self, spec: dict) -> int:
        """The largest difficulty a distribution spec draws."""
        hi = self.max_difficulty(spec["n_range"][1])
        return min(hi, spec.get(f"{self.difficulty}_max") or hi)

    def check_spec(self, spec: dict) -> None:
        d = self.difficulty
        lo_key, hi_key = f"{d}_min", f"{d}_max"
        for key in spec:
            check(key in ("n_range", lo_key, hi_key, "n", d), key, f"not a spec key of task {self.name}",
                  f"a distribution: n_range, {lo_key}, {hi_key}; a cell: n, {d}")
        if "n_range" in spec:
            lo, hi = spec["n_range"]
            check(self.min_n <= lo <= hi <= self.max_n, "n_range",
                  f"need {self.min_n} <= lo <= hi <= {self.max_n}, got {list(spec['n_range'])}")
        for key in (lo_key, hi_key):
            check(key not in spec or "n_range" in spec, key, "bounds the difficulties of a size range: give n_range")
        if hi_key in spec:
            hi, top = spec["n_range"][1], self.max_difficulty(spec["n_range"][1])
            check(1 <= spec[hi_key] <= top, hi_key, f"must be in [1, {top}] (the most the largest size {hi} "
                  f"allows), got {spec[hi_key]}")
        if lo_key in spec:  # every size of the range must hold it
            lo, top = spec["n_range"][0], min(self.max_difficulty(spec["n_range"][0]), spec.get(hi_key) or self.max_n)
            check(1 <= spec[lo_key] <= top, lo_key, f"must be in [1, {top}] (the most the smallest size {lo} "
                  f"allows, and at most {hi_key}), got {spec[lo_key]}")
        if "n" in spec:
            n = spec["n"]
            check(self.min_n <= n <= self.max_n, "n", f"must be in [{self.min_n}, {self.max_n}], got {n}")
        if d in spec:
            check("n" in spec, d, "a cell names its size: give n")
            top = self.max_difficulty(spec["n"])
            check(1 <= spec[d] <= top, d, f"must be in [1, {top}] for n={spec['n']}, got {spec[d]}")

    def sample(self, rng: random.Random, spec: dict) -> Problem:
        lo, hi = spec["n_range"]
        n = rng.randint(lo, hi)
        top = min(self.max_difficulty(n), spec.get(f"{self.difficulty}_max") or self.max_n)
        k_min = spec.get(f"{self.difficulty}_min", 1)
        if not 1 <= k_min <= top:
            raise ValueError(f"{self.difficulty}_min={k_min}: must be in [1, {top}] for n={n}")
        return self.make(rng, n, rng.randint(k_min, top))

    def eval_set(self, spec: dict, count: int, seed: int, exclude: frozenset[str] = frozenset()) -> list[Problem]:
        """`count` different problems of one cell, none whose key is in `exclude`: a pure function of its
        arguments. Excluding the test sets' keys keeps a validation set disjoint from them even for small
        sizes, where two independent draws collide."""
        try:
            self.check_spec(spec)
        except ConfigError as e:
            raise ValueError(str(e)) from None
        n, k = spec["n"], spec[self.difficulty]
        cell_name = f"n={n}, {self.difficulty}={k}"
        if count < 1:
            raise ValueError(f"count={count}: must be at least 1")
        if count > self.distinct(n):
            raise ValueError(f"count={count}: only {self.distinct(n)} different problems with {cell_name} exist")
        rng = self.eval_rng(n, k, seed)
        out, seen, drawn = [], set(exclude), set()
        while len(out) < count:
            if len(drawn) == self.distinct(n):  # every problem of the cell drawn: the excluded ones are too many
                raise ValueError(f"count={count}: only {len(out)} different problems with {cell_name} are left "
                                 f"(excluded {len(drawn & exclude)})")
            p = self.make(rng, n, k)
            drawn.add(p.key)
            if p.key not in seen:
                seen.add(p.key)
                out.append(p)
        return out
