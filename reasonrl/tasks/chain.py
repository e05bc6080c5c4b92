"""Modular-arithmetic chains: the second task (`chain`), a dependency graph of quantities in the style
of GSM-Infinite, small enough for the tiny model.

A problem names n distinct variables (letters out of a..p) linked in one chain: the root holds a digit,
and every other variable is one operation (+, - or * by a constant, mod 7) on the one before it. The
definitions are listed in chain order, and the question asks for the variable k operations from the root:

    c=4,a=c+3,b=a*5,d=b-2?b=      chain c a b d   values 4 0 0 5   trace "c4a+30b*50"   answer "0"

The trace is the root with its value, then one step per operation: the variable defined from the one just
computed, its operation and constant as the prompt writes them, and its value. Every character is
checkable: a name, operation or constant is read from the prompt, a value is arithmetic on the value
four characters back, so a step can go wrong as a lookup or as arithmetic (`arith`), and the model must
stop at the asked variable. The difficulty is the operation count k, grouped by in every result; the variable
count n lengthens the prompt. Specs use hop world's keys: a distribution names `n_range` (variables,
inclusive) and optionally `k_min` and `k_max`; an evaluation cell names `n` and `k`.

Why this task: it shares the response format and the letters of hop world but not its step. Hop world's
difficulty is finding the next edge; here it is carrying a computed value through k operations, and a
step can be right as a lookup and wrong as arithmetic, a failure class hop world cannot have (`arith`).
Why this form (docs/studies.md, the chain side runs): with a trace of names and values only, a 3-layer
base stayed at chance after 3,000 steps (each value needed two lookups chained inside one position);
with the operation copied into the trace but the definitions shuffled, finding the next definition stayed
at 22% after 1,000 steps; in chain order the base learns every in-range step by 750 steps, so the edge
of its competence is the length of the computation.
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass

from .base import ANSWER_MARK, END, GoldProblem, SizedTask, trace_of

LETTERS = "abcdefghijklmnop"
MOD = 7  # values are digits 0..6; a prime, so * by a nonzero constant loses nothing
OPS = "+-*"
EQ, SEP, QUERY = "=", ",", "?"
CHARS = LETTERS + "0123456789" + EQ + SEP + QUERY + ANSWER_MARK + END + OPS  # hop's characters first
MAX_N = len(LETTERS)
FAILURE_TYPES = ("correct", "overshoot", "early", "lookup", "arith", "miscopy", "malformed")
STEP = 4  # trace characters per operation: name, operation, constant, value
SAMPLE_SLACK = 2 + 3 + STEP  # a sampler draws STEP k + SAMPLE_SLACK characters: the root, `|`, answer, `$`
                             # and one step too many


def apply(op: str, x: int, c: int) -> int:
    return {"+": x + c, "-": x - c, "*": x * c}[op] % MOD


@dataclass(frozen=True)
class Problem(GoldProblem):
    k: int  # operations from the root to the asked variable
    names: str  # the chain's variables in order, root first
    root: int  # the root's value
    steps: tuple[tuple[str, int], ...]  # (op, constant) defining names[i + 1] from names[i]

    @property
    def n(self) -> int:
        return len(self.names)

    @property
    def values(self) -> tuple[int, ...]:
        out = [self.root]
        for op, c in self.steps:
            out.append(apply(op, out[-1], c))
        return tuple(out)

    @property
    def trace(self) -> str:
        vals = self.values
        return f"{self.names[0]}{vals[0]}" + "".join(
            f"{self.names[i]}{op}{c}{vals[i]}" for i, (op, c) in enumerate(self.steps[: self.k], 1))

    @property
    def answer(self) -> str:
        return str(self.values[self.k])

    def definition(self, i: int) -> str:
        if i == 0:
            return f"{self.names[0]}{EQ}{self.root}"
        op, c = self.steps[i - 1]
        return f"{self.names[i]}{EQ}{self.names[i - 1]}{op}{c}"

    @property
    def prompt(self) -> str:
        return SEP.join(self.definition(i) for i in range(self.n)) + f"{QUERY}{self.names[self.k]}{EQ}"

    @property
    def task(self) -> Chains:
        return TASK

    @property
    def difficulty(self) -> int:
        return self.k

    @property
    def budget(self) -> int:
        return STEP * self.k + SAMPLE_SLACK

    @property
    def key(self) -> str:
        """Identity: chain, root, operations and k ("cab:4:+3*5:2")."""
        return f"{self.names}:{self.root}:{''.join(f'{op}{c}' for op, c in self.steps)}:{self.k}"

    def step_labels(self, trace: str) -> list[bool]:
        """One bool per trace character. The first two are the root and its value. In each later step a
        name is right when it is the variable defined from the one named before it, an operation and a
        constant when they are that name's in the prompt, a value when it is that name's true value."""
        after = {self.names[i]: self.names[i + 1] for i in range(self.n - 1)}
        defined = {self.names[i + 1]: f"{op}{c}" for i, (op, c) in enumerate(self.steps)}
        value = dict(zip(self.names, map(str, self.values)))
        out, prev = [], None
        for i, c in enumerate(trace):
            j = (i - 2) % STEP
            if i == 0:
                out.append(c == self.names[0])
                prev = c
            elif i == 1 or j == 3:
                out.append(value.get(prev) == c)
            elif j == 0:
                out.append(after.get(prev) == c)
                prev = c
            else:
                out.append(defined.get(prev, "  ")[j - 1] == c)
        return out

    def classify(self, response: str) -> str:
        """The outcome type, one of FAILURE_TYPES. Only the root and the first k steps are judged: a right
        trace that runs on past the asked variable is an `overshoot`. A wrong name, operation or constant is
        a `lookup` (the prompt read wrong); a wrong value with every lookup right is `arith`."""
        answer = parse_answer(response)
        if answer == self.answer:
            return "correct"
        if answer is None:
            return "malformed"
        trace = trace_of(response)
        size = 2 + STEP * self.k
        labels = self.step_labels(trace[:size])
        values = [i == 1 or (i - 2) % STEP == 3 for i in range(len(labels))]
        if not all(ok for ok, v in zip(labels, values) if not v):
            return "lookup"
        if not all(ok for ok, v in zip(labels, values) if v):
            return "arith"
        if len(trace) > size:
            return "overshoot"
        if len(trace) < size:
            return "early"
        return "miscopy"

    def random_guess(self, k: int) -> float:
        """pass@k of guessing a uniformly random digit 0..6 k times: 1 - (1 - 1/7)^k."""
        return 1.0 - (1.0 - 1.0 / MOD) ** k

    def to_dict(self) -> dict:
        return {"task": "chain", "n": self.n, "k": self.k, "names": self.names, "root": self.root,
                "steps": ["".join(map(str, s)) for s in self.steps],
                "prompt": self.prompt, "trace": self.trace, "answer": self.answer}


def build(names: str, root: int, steps: list[tuple[str, int]], k: int) -> Problem:
    """A Problem from its parts; every part checked."""
    n = len(names)
    if not 2 <= n <= MAX_N or len(set(names)) != n or set(names) - set(LETTERS):
        raise ValueError(f"names={names!r}: need 2..{MAX_N} distinct letters of {LETTERS}")
    if not 1 <= k <= n - 1:
        raise ValueError(f"k={k}: operation count must be in [1, {n - 1}] for n={n}")
    if not 0 <= root < MOD:
        raise ValueError(f"root={root}: must be in [0, {MOD - 1}]")
    if len(steps) != n - 1 or any(op not in OPS or not 1 <= c < MOD for op, c in steps):
        raise ValueError(f"steps={steps}: need {n - 1} (op in {OPS!r}, constant in 1..{MOD - 1})")
    return Problem(k=k, names=names, root=root, steps=tuple((op, int(c)) for op, c in steps))


def make_problem(rng: random.Random, n: int, k: int) -> Problem:
    """A random problem with n variables whose asked one is k operations from the root, from `rng` only."""
    names = "".join(rng.sample(LETTERS, n))
    root = rng.randrange(MOD)
    steps = [(rng.choice(OPS), rng.randint(1, MOD - 1)) for _ in range(n - 1)]
    return build(names, root, steps, k)


def distinct_problems(n: int) -> int:
    """Different problems (chain, root, operations) with n variables and a given k."""
    return math.perm(MAX_N, n) * MOD * (len(OPS) * (MOD - 1)) ** (n - 1)


def parse_answer(response: str) -> str | None:
    """The single digit 0..6 between the first `|` and the first `$` after it, else None."""
    return TASK.parse_answer(response)


THINKS = re.compile(r"^[a-p][0-9]([a-p][-+*][0-9][0-9])+\|")
WELL_FORMED = re.compile(r"^[a-p][0-6]([a-p][-+*][1-6][0-6])+\|[0-6]\$$")


def probes(p: Problem, rng: random.Random) -> dict[str, str]:
    """One hand-built response of every outcome type for `p` (classify agrees with each key)."""
    vals, k = p.values, p.k
    root = f"{p.names[0]}{vals[0]}"
    steps = [f"{p.names[i]}{op}{c}{vals[i]}" for i, (op, c) in enumerate(p.steps[:k], 1)]
    wrong = ANSWER_MARK + str(rng.choice([x for x in range(MOD) if x != vals[k]])) + END
    i = rng.randrange(k)  # the step that goes wrong
    op, c = p.steps[i]
    name = rng.choice([x for x in LETTERS if x != p.names[i + 1]])
    value = rng.choice([x for x in range(MOD) if x != vals[i + 1]])
    head = root + "".join(steps[:i])
    return {"correct": p.target("cot"),
            "overshoot": p.trace + f"{p.names[0]}{op}{c}{vals[0]}" + wrong,  # on past the asked variable
            "early": root + "".join(steps[: k - 1]) + wrong,  # one step short
            "lookup": head + f"{name}{op}{c}{vals[i + 1]}" + wrong,  # the wrong definition read
            "arith": head + f"{p.names[i + 1]}{op}{c}{value}" + wrong,  # the right one, miscomputed
            "miscopy": p.trace + wrong,
            "malformed": p.trace + p.trace}  # never wrote `|`: ran to the length limit


class Chains(SizedTask):
    """The chain task behind the Task protocol (tasks/base.py). Specs: `n_range` [lo, hi] variables and an
    optional `k_min` / `k_max` for a distribution; `n` and `k` for an evaluation cell."""

    name = "chain"
    chars = CHARS
    difficulty = "k"
    max_n = MAX_N
    answer_pattern = re.compile(f"[0-{MOD - 1}]")
    thinks_pattern, well_formed_pattern = THINKS, WELL_FORMED
    failure_types = FAILURE_TYPES
    example_spec = {"n_range": (3, 8), "k_max": 5}  # for the conformance tests (tests/test_tasks.py)
    example_narrow = {"n_range": (8, 12), "k_min": 5, "k_max": 7}  # a range that starts above difficulty 1
    example_cell = {"n": 7, "k": 4}

    def max_difficulty(self, n: int) -> int:
        return n - 1

    def make(self, rng: random.Random, n: int, k: int) -> Problem:
        return make_problem(rng, n, k)

    def distinct(self, n: int) -> int:
        return distinct_problems(n)

    def max_budget(self, spec: dict) -> int:
        return STEP * self.top(spec) + SAMPLE_SLACK

    def longest(self, spec: dict, response: str) -> int:
        n, k = spec["n_range"][1], self.top(spec)
        prompt = 3 + 5 * (n - 1) + (n - 1) + 3  # root, n - 1 definitions, commas, `?x=`
        return prompt + {"cot": 2 + STEP * k + 3, "direct": 3, "sampled": STEP * k + SAMPLE_SLACK}[response]

    def from_dict(self, d: dict) -> Problem:
        return build(d["names"], d["root"], [(s[0], int(s[1:])) for s in d["steps"]], d["k"])

    def probes(self, problem: Problem, rng: random.Random) -> dict[str, str]:
        return probes(problem, rng)


TASK = Chains()
