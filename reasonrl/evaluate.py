"""Evaluation of a model on fixed problem sets."""

from __future__ import annotations

from collections import defaultdict

from .sampling import response_of, sample
from .task import Problem, is_correct


def greedy_responses(model, problems: list[Problem], chunk: int = 1024) -> list[str]:
    """Greedy responses (cut at `$`), with room for k + 5 characters so an overshoot is visible."""
    if not problems:
        return []
    max_new = max(p.k for p in problems) + 5
    prompts = [p.prompt for p in problems]
    outs: list[str] = []
    for i in range(0, len(prompts), chunk):
        outs += sample(model, prompts[i: i + chunk], max_new, temperature=0)
    return [response_of(o) for o in outs]


def greedy_accuracy(model, problems: list[Problem]) -> dict:
    """{"acc": overall greedy accuracy, "by_k": {k: accuracy}} (JSON-able keys)."""
    if not problems:
        raise ValueError("problems: empty evaluation set")
    hits = [is_correct(p, r) for p, r in zip(problems, greedy_responses(model, problems))]
    by_k: dict[int, list[bool]] = defaultdict(list)
    for p, h in zip(problems, hits):
        by_k[p.k].append(h)
    return {"acc": sum(hits) / len(hits),
            "by_k": {str(k): sum(v) / len(v) for k, v in sorted(by_k.items())}}
