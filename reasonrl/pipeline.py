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
from .errors import DataError, install_excepthook, rebuild_fix
from .io import read_jsonl, write_json
from .tasks import DEFAULT, Problem, get_task

T = TypeVar("T")


@dataclass
class EvalSetConfig:
    n: int = 12  # ring size of every problem
    ks: list[int] = field(default_factory=lambda: [3, 4, 5, 6])  # hop counts, `count` problems each
    count: int = 250  # problems per hop count
    seed: int = 21  # with (n, k) fixes the problems

    def __post_init__(self):
        get_task(DEFAULT).check_spec({"n": self.n, "ks": self.ks})  # the ring first, as always
        check(bool(self.ks), "ks", "must not be empty")
        check(self.count >= 1, "count", f"must be at least 1, got {self.count}")


@dataclass
class DataConfig:
    sets: dict[str, EvalSetConfig] = field(default_factory=dict)  # test sets
    validation: dict[str, EvalSetConfig] = field(default_factory=dict)  # disjoint from every test set

    def __post_init__(self):
        both = sorted(set(self.sets) & set(self.validation))
        check(not both, "validation", f"names {both} are also test sets; every set needs its own file name")


def build_eval_set(cfg: EvalSetConfig, exclude: frozenset[str] = frozenset()) -> list[Problem]:
    task = get_task(DEFAULT)
    return [p for k in cfg.ks for p in task.eval_set({"n": cfg.n, "k": k}, cfg.count, cfg.seed, exclude)]


def build_data_sets(cfg: DataConfig) -> dict[str, list[Problem]]:
    """Every set of `data:` by name: the test sets, then the validation sets, which skip every problem
    (by `Problem.key`) of every test set."""
    out = {name: build_eval_set(c) for name, c in cfg.sets.items()}
    tested = frozenset(p.key for problems in out.values() for p in problems)
    return out | {name: build_eval_set(c, tested) for name, c in cfg.validation.items()}


def read_problems(path: str | Path) -> list[Problem]:
    """The problems of a JSONL file written by the `data` stage; a missing or damaged file is a DataError."""
    path = Path(path)
    if not path.exists():
        raise DataError(path.as_posix(), "data file not found", rebuild_fix(path))
    try:
        task = get_task(DEFAULT)
        return [task.from_dict(d) for d in read_jsonl(path)]
    except (json.JSONDecodeError, KeyError, TypeError, ValueError, IndexError) as e:
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
