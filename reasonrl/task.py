"""Hop world: a multi-hop lookup task on a random cycle of letters.

A problem picks n distinct letters out of a..p and arranges them in one random cycle. The prompt
lists the n edges `x>y` (shuffled) and asks where k hops from a start letter lead:

    b>d,a>b,d>a?a3=      walk a b d a   trace "bda"   answer "a"

Chain-of-thought targets spell out the walk (`bda|a$`); direct targets give the answer only (`|a$`).
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass

LETTERS = "abcdefghijklmnop"
DIGITS = "0123456789"
ARROW, SEP, QUERY, EQ, ANSWER_MARK, END = ">", ",", "?", "=", "|", "$"
PAD_ID = 0
_CHARS = LETTERS + DIGITS + ARROW + SEP + QUERY + EQ + ANSWER_MARK + END
STOI = {c: i + 1 for i, c in enumerate(_CHARS)}
ITOS = {i: c for c, i in STOI.items()}
VOCAB_SIZE = len(_CHARS) + 1
END_ID = STOI[END]
MAX_N, MAX_K = len(LETTERS), 9
MODES = ("cot", "direct")


@dataclass(frozen=True)
class Problem:
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

    def to_dict(self) -> dict:
        return {"n": self.n, "k": self.k, "start": self.start, "edges": ["".join(e) for e in self.edges],
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


def sample_problem(rng: random.Random, n_range: tuple[int, int], k_max: int | None = None) -> Problem:
    """n uniform in n_range (inclusive), then k uniform in 1..min(n - 1, k_max, 9)."""
    lo, hi = n_range
    if not 2 <= lo <= hi <= MAX_N:
        raise ValueError(f"n_range={n_range}: need 2 <= lo <= hi <= {MAX_N}")
    if k_max is not None and k_max < 1:
        raise ValueError(f"k_max={k_max}: must be at least 1")
    n = rng.randint(lo, hi)
    top = min(n - 1, MAX_K, k_max if k_max is not None else MAX_K)
    return make_problem(rng, n, rng.randint(1, top))


def problem_key(problem: Problem) -> str:
    """A problem's identity, independent of the order its edges are listed in: the cycle written from
    its first letter in a..p order, then start and hop count ("abdc:b3")."""
    succ = problem.succ
    first = min(succ)
    cycle = [first]
    while len(cycle) < problem.n:
        cycle.append(succ[cycle[-1]])
    return f"{''.join(cycle)}:{problem.start}{problem.k}"


def _key_nk(key: str) -> tuple[int, int]:
    cycle, rest = key.split(":")
    return len(cycle), int(rest[1:])


def distinct_problems(n: int) -> int:
    """How many different problems (cycle, start) exist for ring size n: (n - 1)! cycles x n starts."""
    return math.factorial(n - 1) * n


def make_eval_set(n: int, k: int, count: int, seed: int, exclude: frozenset[str] = frozenset()) -> list[Problem]:
    """A fixed evaluation set of `count` different problems, none whose `problem_key` is in `exclude`:
    a pure function of its arguments. Excluding the test sets' keys is what keeps a validation set
    disjoint from them even for small rings, where two independent draws collide."""
    _check_nk(n, k)
    if count < 1:
        raise ValueError(f"count={count}: must be at least 1")
    taken = sum(1 for key in exclude if _key_nk(key) == (n, k))
    if count > distinct_problems(n) - taken:
        raise ValueError(f"count={count}: only {distinct_problems(n) - taken} different problems with n={n}, "
                         f"k={k} are left (excluded {taken})")
    rng = random.Random(f"eval-{n}-{k}-{seed}")
    out, seen = [], set(exclude)
    while len(out) < count:
        p = make_problem(rng, n, k)
        key = problem_key(p)
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


def target(problem: Problem, mode: str) -> str:
    if mode == "cot":
        return problem.trace + ANSWER_MARK + problem.answer + END
    if mode == "direct":
        return ANSWER_MARK + problem.answer + END
    raise ValueError(f"mode={mode!r}: must be one of {MODES}")


def encode(text: str) -> list[int]:
    try:
        return [STOI[c] for c in text]
    except KeyError as e:
        raise ValueError(f"text: character {e.args[0]!r} is not in the vocabulary") from None


def decode(ids: list[int]) -> str:
    """Inverse of encode; PAD decodes to nothing."""
    return "".join(ITOS.get(i, "") for i in ids)


def parse_answer(response: str) -> str | None:
    """The single letter between the first `|` and the first `$` after it, else None."""
    i = response.find(ANSWER_MARK)
    if i < 0:
        return None
    j = response.find(END, i + 1)
    if j < 0:
        return None
    ans = response[i + 1 : j]
    return ans if len(ans) == 1 and ans in LETTERS else None


def step_labels(problem: Problem, trace: str) -> list[bool]:
    """One bool per trace letter: is it the successor of the letter before it (start for the first)?"""
    succ = problem.succ
    prev, out = problem.start, []
    for c in trace:
        out.append(succ.get(prev) == c)
        prev = c
    return out


def is_correct(problem: Problem, response: str) -> bool:
    return parse_answer(response) == problem.answer


SAMPLE_SLACK = 5  # a sampler draws k + SAMPLE_SLACK characters: trace, `|`, answer, `$` and room to overshoot


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


# A response that writes at least one trace letter before `|`: it "thinks" (the zero study, RL records).
THINKS = re.compile(r"^[a-p]+\|")
