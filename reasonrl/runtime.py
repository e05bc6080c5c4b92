"""What every stage sets before it computes: numerics, threads and device (stage_setup), its arguments and
its timing file. It imports no task, so a stage that reads none (exact, plots) depends on none."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch

from . import numerics
from .config import ConfigError, check, load_params
from .errors import install_excepthook
from .io import write_json


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
