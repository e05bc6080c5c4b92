"""Shared plumbing for stage scripts: params loading, thread/device setup, evaluation sets."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import torch

from . import numerics
from .config import ConfigError, check, from_dict, load_params, node_at
from .errors import DataError, install_excepthook, rebuild_fix, suggest
from .io import read_jsonl, write_json
from .tasks import Problem, get_task

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

    @property
    def cells(self) -> list[dict]:
        return [{"n": n, "k": k} for n in self.ns for k in self.ks]


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
    for role, cfg in out.items():
        for n in cfg.ns:
            try:
                t.check_spec({"n": n, "ks": cfg.ks})
            except ConfigError as e:  # a cell's n is one of the set's ns
                raise (ConfigError("ns", e.what, e.fix) if e.where == "n" else e).within(f"{where}.{role}") from None
    return out


def build_eval_set(task: str, cfg: EvalSetConfig, exclude: frozenset[str] = frozenset()) -> list[Problem]:
    t = get_task(task)
    return [p for cell in cfg.cells for p in t.eval_set(cell, cfg.count, cfg.seed, exclude)]


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


# ----------------------------------------------------------------------------- threads and determinism

def check_threads(value) -> int:
    check(isinstance(value, int) and not isinstance(value, bool) and value >= 1, "threads",
          f"must be an integer >= 1, got {value!r}", "threads: 1 makes results independent of the machine's core count")
    return value


def resolve_device(name: str = "auto") -> torch.device:
    """`auto` picks CUDA when present, else CPU; anything else is passed to torch.device."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def apply_threads(threads: int, device: torch.device) -> None:
    """Fix the intra-op thread count (float sums are split, so the count changes the last bits and a
    chaotic run's end) and, on CUDA, choose only deterministic kernels."""
    torch.set_num_threads(threads)
    if device.type == "cuda":
        # cuBLAS needs a fixed workspace to be deterministic; it reads this before its first call.
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True)
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False


def stage_setup(params_path: str | Path = "params.yaml") -> tuple[dict, torch.device, int]:
    """Read params; pin `numerics` (before anything computes) and apply `threads` (environment variables
    no longer change results) and the deterministic settings; resolve `device`. Uncaught ReasonrlErrors
    become one stderr line."""
    install_excepthook()
    params = load_params(params_path)
    numerics.pin(params.get("numerics", numerics.DEFAULT))
    threads = check_threads(params.get("threads", 1))
    try:
        device = resolve_device(str(params.get("device", "auto")))
    except RuntimeError as e:
        raise ConfigError("device", f"{params.get('device')!r} is not a device ({str(e).splitlines()[0]})",
                          "use auto, cpu, cuda or cuda:<index>") from None
    apply_threads(threads, device)
    return params, device, threads


def write_timing(path: str | Path, record: dict) -> None:
    """A stage's reports/timing file: `record` (its seconds) with the machine and the math libraries' code
    paths it ran, which tell a later reader where a committed dvc.lock was computed."""
    write_json(path, {**record, "machine": numerics.machine(), "numerics": numerics.effective()})


def stage_args(usage: str) -> list[str]:
    """A stage script's arguments, after stage_setup(): a wrong count is one `error:` line with the usage
    (`usage` names them, e.g. "<section> <stem>")."""
    args, script = sys.argv[1:], Path(sys.argv[0]).name
    check(len(args) == len(usage.split()), f"stages/{script}", f"expects {usage}, got {len(args)} argument(s)",
          f"run it as dvc.yaml does: python stages/{script} {usage}")
    return args
