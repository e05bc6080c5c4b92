"""Shared plumbing for the stage scripts that read tasks: params sections, the data sets and their files.
(Threads, device and numerics, which every stage sets, are in runtime.py: it imports no task.)"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from .config import ConfigError, check, from_dict, node_at
from .errors import DataError, rebuild_fix, suggest
from .io import read_jsonl
from .tasks import Problem, Task, cell, get_task

T = TypeVar("T")


# The sets every task defines (data.<task>.<role> -> data/<task>_<role>.jsonl), named by their role against
# the bases' training range: `in` inside it, `edge` just beyond it, `far` well beyond it; `think` profiles
# thinking by difficulty. The val_ sets are where knobs are chosen; they skip every problem of the test sets.
TEST_ROLES = ("in", "edge", "far", "think")
VALIDATION_ROLES = ("val_in", "val_edge", "val_far")
ROLES = TEST_ROLES + VALIDATION_ROLES


@dataclass
class EvalSetConfig:
    ns: list[int] = field(default_factory=lambda: [7, 8])  # sizes (hop: ring; chain: variables)
    ks: list[int] = field(default_factory=lambda: [3, 4, 5, 6])  # difficulties; `count` problems per (n, k)
    count: int = 125  # problems per cell
    seed: int = 21  # with (n, k) fixes the problems

    def __post_init__(self):
        check(bool(self.ns), "ns", "must not be empty")
        check(bool(self.ks), "ks", "must not be empty")
        check(self.count >= 1, "count", f"must be at least 1, got {self.count}")

    def cells(self, task: Task) -> list[dict]:
        return [cell(task, n, k) for n in self.ns for k in self.ks]


def data_path(task: str, role: str, folder: str | Path = "data") -> str:
    return f"{Path(folder).as_posix()}/{task}_{role}.jsonl"


def data_config(params: dict, task: str) -> dict[str, EvalSetConfig]:
    """The sets of data.<task>, role -> config: every role present, every cell inside the task's range."""
    where = f"data.{task}"
    t = get_task(task, where)
    node = node_at(params, where)
    check(isinstance(node, dict), where, f"expected a mapping of roles, got {node!r}")
    for role in node:
        near = suggest(str(role), list(ROLES))
        check(role in ROLES, f"{where}.{role}", "unknown role", (f"did you mean {near!r}? " if near else "")
              + f"roles are {', '.join(ROLES)}")
    missing = [r for r in ROLES if r not in node]
    check(not missing, where, f"missing roles {missing}", "every task defines every role (docs/pipeline.md)")
    out = {role: from_dict(EvalSetConfig, node[role], f"{where}.{role}") for role in ROLES}
    keys = {"n": "ns", t.difficulty: "ks"}  # a cell's key -> the set's key that holds its values
    for role, cfg in out.items():
        for spec in cfg.cells(t):
            try:
                t.check_spec(spec)
            except ConfigError as e:
                raise ConfigError(keys.get(e.where, e.where), e.what, e.fix).within(f"{where}.{role}") from None
    return out


def build_eval_set(task: str, cfg: EvalSetConfig, exclude: frozenset[str] = frozenset()) -> list[Problem]:
    t = get_task(task)
    return [p for spec in cfg.cells(t) for p in t.eval_set(spec, cfg.count, cfg.seed, exclude)]


def build_data_sets(task: str, sets: dict[str, EvalSetConfig]) -> dict[str, list[Problem]]:
    """Every set of one task by role: the test sets, then the validation sets, which skip every problem
    (by `Problem.key`) of every test set."""
    out = {role: build_eval_set(task, c) for role, c in sets.items() if role not in VALIDATION_ROLES}
    tested = frozenset(p.key for problems in out.values() for p in problems)
    return out | {role: build_eval_set(task, c, tested) for role, c in sets.items() if role in VALIDATION_ROLES}


def read_problems(path: str | Path) -> list[Problem]:
    """The problems of a JSONL file written by a `data` stage; a missing or damaged file is a DataError."""
    path = Path(path)
    if not path.exists():
        raise DataError(path.as_posix(), "data file not found", rebuild_fix(path))
    try:
        return [get_task(d["task"]).from_dict(d) for d in read_jsonl(path)]
    except (json.JSONDecodeError, KeyError, TypeError, ValueError, IndexError, ConfigError) as e:
        raise DataError(path.as_posix(), f"not a problem set ({type(e).__name__}: {e})", rebuild_fix(path)) from None


def section(params: dict, dotted: str, cls: type[T]) -> T:
    """Load params[a][b]... (dotted path) into dataclass `cls`, naming the path in every error."""
    return from_dict(cls, node_at(params, dotted), dotted)
