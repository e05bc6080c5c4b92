"""Shared plumbing for stage scripts: params loading, thread/device setup, evaluation sets."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import torch

from .config import check, from_dict, load_params
from .io import read_jsonl
from .model import resolve_device, set_threads_from_env
from .task import MAX_K, MAX_N, Problem, make_eval_set, problem_key

T = TypeVar("T")


@dataclass
class EvalSetConfig:
    n: int = 12
    ks: list[int] = field(default_factory=lambda: [3, 4, 5, 6])
    count: int = 50
    seed: int = 21

    def __post_init__(self):
        check(2 <= self.n <= MAX_N, "n", f"must be in [2, {MAX_N}], got {self.n}")
        check(bool(self.ks), "ks", "must not be empty")
        for k in self.ks:
            check(1 <= k <= min(MAX_K, self.n - 1), "ks", f"each k must be in [1, {min(MAX_K, self.n - 1)}], got {k}")
        check(self.count >= 1, "count", f"must be at least 1, got {self.count}")


@dataclass
class DataConfig:
    sets: dict[str, EvalSetConfig] = field(default_factory=dict)  # test sets
    validation: dict[str, EvalSetConfig] = field(default_factory=dict)  # disjoint from every test set

    def __post_init__(self):
        both = sorted(set(self.sets) & set(self.validation))
        check(not both, "validation", f"names {both} are also test sets; every set needs its own file name")


def build_eval_set(cfg: EvalSetConfig, exclude: frozenset[str] = frozenset()) -> list[Problem]:
    return [p for k in cfg.ks for p in make_eval_set(cfg.n, k, cfg.count, cfg.seed, exclude)]


def build_data_sets(cfg: DataConfig) -> dict[str, list[Problem]]:
    """Every set of `data:` by name: the test sets, then the validation sets, which skip every problem
    (by `problem_key`) of every test set."""
    out = {name: build_eval_set(c) for name, c in cfg.sets.items()}
    tested = frozenset(problem_key(p) for problems in out.values() for p in problems)
    return out | {name: build_eval_set(c, tested) for name, c in cfg.validation.items()}


def read_problems(path: str | Path) -> list[Problem]:
    return [Problem.from_dict(d) for d in read_jsonl(path)]


def section(params: dict, dotted: str, cls: type[T]) -> T:
    """Load params[a][b]... (dotted path) into dataclass `cls`, naming the path in every error."""
    node = params
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            raise KeyError(f"params: missing section {dotted!r}")
        node = node[part]
    return from_dict(cls, node, dotted)


def stage_setup(params_path: str | Path = "params.yaml") -> tuple[dict, torch.device]:
    """Read params, honour TORCH_NUM_THREADS, resolve `device`."""
    params = load_params(params_path)
    set_threads_from_env()
    return params, resolve_device(str(params.get("device", "auto")))
