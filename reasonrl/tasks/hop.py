"""Hop world: a multi-hop lookup task on a random cycle of letters (the `hop` task).

A problem picks n distinct letters out of a..p and arranges them in one random cycle. The prompt
lists the n edges `x>y` (shuffled) and asks where k hops from a start letter lead:

    b>d,a>b,d>a?a3=      walk a b d a   trace "bda"   answer "a"

Chain-of-thought targets spell out the walk (`bda|a$`); direct targets give the answer only (`|a$`).
The difficulty is the hop count k, grouped by in every result; ring size n lengthens the prompt. A
distribution spec names `n_range` (inclusive) and optionally `k_min` and `k_max`; an evaluation cell names `n`
and `k`.
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass

from .base import ANSWER_MARK, END, GoldProblem, SizedTask, cell, distribution, trace_of

LETTERS = "abcdefghijklmnop"
DIGITS = "0123456789"
ARROW, SEP, QUERY, EQ = ">", ",", "?", "="
CHARS = LETTERS + DIGITS + ARROW + SEP + QUERY + EQ + ANSWER_MARK + END
MAX_N, MAX_K = len(LETTERS), 9
FAILURE_TYPES = ("correct", "overshoot", "early", "lookup", "miscopy", "malformed")
SAMPLE_SLACK = 5  # a sampler draws k + SAMPLE_SLACK characters: trace, `|`, answer, `$` and room to overshoot


@dataclass(frozen=True)
class Problem(GoldProblem):
    n: int
    k: int
    start: str
    edges: tuple[tuple[str, str], ...]  # in prompt order
    walk: str  # start, succ(start), ..., k + 1 letters

    @property
    def trace(self) -> str:
        return self.walk[1:]

    @property
    def answer(self) -> str:
        return self.walk[-1]

    @property
    def succ(self) -> dict[str, str]:
        return dict(self.edges)

    @property
    def prompt(self) -> str:
        return SEP.join(f"{x}{ARROW}{y}" for x, y in self.edges) + f"{QUERY}{self.start}{self.k}{EQ}"

    @property
    def task(self) -> HopWorld:
        return TASK

    @property
    def difficulty(self) -> int:
        return self.k

    @property
    def budget(self) -> int:
        return self.k + SAMPLE_SLACK

    @property
    def key(self) -> str:
        return problem_key(self)

    def step_labels(self, trace: str) -> list[bool]:
        return step_labels(self, trace)

    def classify(self, response: str) -> str:
        return classify(self, response)

    def random_guess(self, k: int) -> float:
        """pass@k of guessing a uniformly random letter of the ring k times: 1 - (1 - 1/n)^k."""
        return random_guess_baseline(self.n, k)

    def to_dict(self) -> dict:
        return {"task": "hop", "n": self.n, "k": self.k, "start": self.start, "edges": ["".join(e) for e in self.edges],
                "prompt": self.prompt, "trace": self.trace, "answer": self.answer}

    @classmethod
    def from_dict(cls, d: dict) -> Problem:
        edges = tuple((e[0], e[1]) for e in d["edges"])
        return build_problem(edges, d["start"], d["k"])


def _check_nk(n: int, k: int) -> None:
    if not 2 <= n <= MAX_N:
        raise ValueError(f"n={n}: ring size must be in [2, {MAX_N}]")
    if not 1 <= k <= MAX_K:
        raise ValueError(f"k={k}: hop count must be in [1, {MAX_K}]")
    if k >= n:
        raise ValueError(f"k={k}: hop count must be smaller than n={n} (at most {n - 1})")


def build_problem(edges: tuple[tuple[str, str], ...], start: str, k: int) -> Problem:
    """A Problem from explicit edges (one cycle over their letters), start letter and hop count."""
    succ = dict(edges)
    n = len(edges)
    _check_nk(n, k)
    bad = sorted({c for e in edges for c in e} - set(LETTERS))
    if bad:
        raise ValueError(f"edges: unknown letters {bad}; allowed are {LETTERS}")
    if len(succ) != n or sorted(succ) != sorted(succ.values()):
        raise ValueError("edges: every letter must appear exactly once as a source and once as a target")
    if start not in succ:
        raise ValueError(f"start={start!r}: not a letter of the ring")
    walk = [start]
    for _ in range(k):
        walk.append(succ[walk[-1]])
    # one cycle: following succ from start returns to start after exactly n hops
    x, steps = succ[start], 1
    while x != start:
        x, steps = succ[x], steps + 1
    if steps != n:
        raise ValueError(f"edges: must form a single cycle over all {n} letters")
    return Problem(n=n, k=k, start=start, edges=tuple(edges), walk="".join(walk))


def make_problem(rng: random.Random, n: int, k: int) -> Problem:
    """A random problem with ring size n and hop count k, drawn from `rng` only."""
    _check_nk(n, k)
    letters = rng.sample(LETTERS, n)  # random order = random cycle
    edges = [(letters[i], letters[(i + 1) % n]) for i in range(n)]
    rng.shuffle(edges)
    return build_problem(tuple(edges), rng.choice(letters), k)


def sample_problem(rng: random.Random, n_range: tuple[int, int], k_max: int | None = None, k_min: int = 1) -> Problem:
    """n uniform in n_range (inclusive), then k uniform in k_min..min(n - 1, k_max, 9)."""
    lo, hi = n_range
    if not 2 <= lo <= hi <= MAX_N:
        raise ValueError(f"n_range={n_range}: need 2 <= lo <= hi <= {MAX_N}")
    if k_max is not None and k_max < 1:
        raise ValueError(f"k_max={k_max}: must be at least 1")
    return TASK.sample(rng, distribution(TASK, n_range, k_min, k_max))


def problem_key(problem: Problem) -> str:
    """A problem's identity, independent of the order its edges are listed in: the cycle written from
    its first letter in a..p order, then start and hop count ("abdc:b3")."""
    succ = problem.succ
    first = min(succ)
    cycle = [first]
    while len(cycle) < problem.n:
        cycle.append(succ[cycle[-1]])
    return f"{''.join(cycle)}:{problem.start}{problem.k}"


def distinct_problems(n: int) -> int:
    """How many different problems (cycle, start) exist for ring size n: (n - 1)! cycles x n starts."""
    return math.factorial(n - 1) * n


def make_eval_set(n: int, k: int, count: int, seed: int, exclude: frozenset[str] = frozenset()) -> list[Problem]:
    """A fixed evaluation set of `count` different problems with ring size n and hop count k, none whose
    `problem_key` is in `exclude` (SizedTask.eval_set)."""
    _check_nk(n, k)
    return TASK.eval_set(cell(TASK, n, k), count, seed, exclude)


def parse_answer(response: str) -> str | None:
    """The single letter between the first `|` and the first `$` after it, else None."""
    return TASK.parse_answer(response)


def step_labels(problem: Problem, trace: str) -> list[bool]:
    """One bool per trace letter: is it the successor of the letter before it (start for the first)?"""
    succ = problem.succ
    prev, out = problem.start, []
    for c in trace:
        out.append(succ.get(prev) == c)
        prev = c
    return out


def prompt_length(n: int, k: int) -> int:
    """Characters in the prompt of any problem with ring size n and hop count k."""
    return 4 * n + 2 + len(str(k))  # n edges `x>y`, n - 1 commas, `?`, start, k, `=`


def longest_sequence(n_max: int, k_max: int, response: str) -> int:
    """Characters of the longest prompt + response over problems with n <= n_max and k <= k_max (and
    k < n): `cot` / `direct` responses are the training targets, `sampled` the k + SAMPLE_SLACK
    characters a sampler draws."""
    k = min(k_max, n_max - 1, MAX_K)
    extra = {"cot": k + 3, "direct": 3, "sampled": k + SAMPLE_SLACK}[response]
    return prompt_length(n_max, k) + extra


# A response that writes at least one trace letter before `|`: it "thinks" (any trace); one that thinks and is
# well-formed "thinks well" (Task.thinks_well): what the zero study's and the RL records' think rates count.
THINKS = re.compile(r"^[a-p]+\|")
WELL_FORMED = re.compile(r"^[a-p]+\|[a-p]\$$")  # at least one trace letter, `|`, one letter, `$`



def classify(problem: Problem, response: str) -> str:
    """The outcome type of one response, one of FAILURE_TYPES.

    A wrong answer with a wrong lookup in its trace is `lookup` even if the trace also has the wrong
    length: the lookup error happened first. An empty trace (a wrong direct answer) is `early`."""
    answer = parse_answer(response)
    if answer == problem.answer:
        return "correct"
    if answer is None:
        return "malformed"
    trace = trace_of(response)
    if not all(step_labels(problem, trace)):
        return "lookup"
    if len(trace) > problem.k:
        return "overshoot"
    if len(trace) < problem.k:
        return "early"
    return "miscopy"


def random_guess_baseline(ring_size: int, k: int) -> float:
    """pass@k of guessing a uniformly random letter of a ring of `ring_size` letters: 1 - (1 - 1/n)^k."""
    if ring_size < 1:
        raise ValueError(f"ring_size={ring_size}: must be at least 1")
    if k < 0:
        raise ValueError(f"k={k}: must be >= 0")
    return 1.0 - (1.0 - 1.0 / ring_size) ** k


def failure_probes(problem: Problem, rng: random.Random) -> dict[str, str]:
    """One hand-built response of every outcome type for `problem` (classify agrees with each key)."""
    succ, walk, k = problem.succ, problem.walk, problem.k
    ring = [x for x, _ in problem.edges]

    def walk_from(letters: str, length: int) -> str:  # extend by following the ring
        while len(letters) < length:
            letters += succ[letters[-1]]
        return letters

    step = rng.randrange(k)  # the lookup that goes wrong: walk[step] -> a wrong letter
    wrong = rng.choice([x for x in ring if x != succ[walk[step]]])
    bad_trace = walk_from(walk[1: step + 1] + wrong, k)
    over = walk_from(walk, k + 2)[1:]
    return {"correct": problem.target("cot"),
            "overshoot": over + "|" + over[-1] + "$",  # one hop too many
            "early": walk[1:k] + "|" + walk[k - 1] + "$",  # one hop short
            "lookup": bad_trace + "|" + bad_trace[-1] + "$",  # a wrong lookup, followed faithfully after
            "miscopy": problem.trace + "|" + rng.choice([x for x in ring if x != problem.answer]) + "$",
            "malformed": walk_from(walk, k + 6)[1:]}  # never wrote `|`: ran to the length limit


class HopWorld(SizedTask):
    """The hop task behind the Task protocol (tasks/base.py). Specs: `n_range` [lo, hi] and an optional
    `k_min` / `k_max` for a distribution; `n` and `k` for an evaluation cell."""

    name = "hop"
    chars = CHARS
    difficulty = "k"
    max_n = MAX_N
    answer_pattern = re.compile("[a-p]")
    thinks_pattern, well_formed_pattern = THINKS, WELL_FORMED
    failure_types = FAILURE_TYPES
    example_spec = {"n_range": (4, 12), "k_max": 6}  # for the conformance tests (tests/test_tasks.py)
    example_narrow = {"n_range": (9, 12), "k_min": 5, "k_max": 7}  # a range that starts above difficulty 1
    example_cell = {"n": 9, "k": 4}

    def max_difficulty(self, n: int) -> int:
        return min(n - 1, MAX_K)

    def make(self, rng: random.Random, n: int, k: int) -> Problem:
        return make_problem(rng, n, k)

    def distinct(self, n: int) -> int:
        return distinct_problems(n)

    def eval_rng(self, n: int, k: int, seed: int) -> random.Random:
        return random.Random(f"eval-{n}-{k}-{seed}")  # "eval", not "hop": the seed hop's sets were first drawn with

    def max_budget(self, spec: dict) -> int:
        return self.top(spec) + SAMPLE_SLACK

    def longest(self, spec: dict, response: str) -> int:
        return longest_sequence(spec["n_range"][1], self.top(spec), response)

    def from_dict(self, d: dict) -> Problem:
        return Problem.from_dict(d)

    def probes(self, problem: Problem, rng: random.Random) -> dict[str, str]:
        return failure_probes(problem, rng)


TASK = HopWorld()
