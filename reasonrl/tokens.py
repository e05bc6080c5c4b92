"""Model input from text (padded id batches, prompt + target pairs), and whether it fits: leaf helpers shared
by pre-training, verifiers, evaluation and the RL layouts, kept apart from any of them so that an edit to one
reruns no stage of the others."""

from __future__ import annotations

import torch

from .config import check
from .tasks import PAD_ID, Task, encode


def encode_pairs(pairs: list[tuple[str, str]], device="cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """(X, M): prompt+target ids right-padded (B, T); M (B, T) is 1 on target tokens only."""
    seqs = [encode(p + t) for p, t in pairs]
    T = max(len(s) for s in seqs)
    X = torch.full((len(seqs), T), PAD_ID, dtype=torch.long)
    M = torch.zeros(len(seqs), T)
    for i, ((p, _), s) in enumerate(zip(pairs, seqs)):
        X[i, : len(s)] = torch.tensor(s)
        M[i, len(p): len(s)] = 1.0
    return X.to(device), M.to(device)


def pad_ids(seqs: list[list[int]], device) -> torch.Tensor:
    """Token id lists right-padded with PAD into one (len(seqs), max(1, longest)) tensor on `device`."""
    X = torch.full((len(seqs), max(1, *map(len, seqs))), PAD_ID, dtype=torch.long)
    for i, s in enumerate(seqs):
        X[i, : len(s)] = torch.tensor(s, dtype=torch.long)
    return X.to(device)


def check_fits(max_len: int, key: str, task: Task, spec: dict, response: str, offset: int = 0) -> None:
    """ConfigError naming `key` unless a model of `max_len` positions holds the longest prompt +
    response (`Task.longest`) of the task's problems under `spec`; `offset` = -1 when the model sees all
    but the last token (teacher-forced training)."""
    need = task.longest(spec, response) + offset
    where = ", ".join(f"{k} {list(v) if isinstance(v, tuple) else v}" for k, v in spec.items())
    check(max_len >= need, key, f"{max_len} is shorter than the longest sequence this stage makes, {need} tokens "
          f"({task.name}: {where}) with a {response} response", f"set it to at least {need}")


def check_sets_fit(max_len: int, model: str, sets: dict[str, list]) -> None:
    """ConfigError naming the data set (`data.<task>.<role>`) whose longest prompt + sampling budget
    (`Problem.budget`) a model of `max_len` positions cannot hold: before any sampling starts."""
    for role, problems in sets.items():
        need = max((len(p.prompt) + p.budget for p in problems), default=0)
        task = problems[0].task.name if problems else "?"
        check(max_len >= need, f"data.{task}.{role}", f"its longest prompt + sampling budget is {need} tokens, "
              f"more than the max_len {max_len} of {model}", "raise the base's model.max_len or shorten the set")
