"""The `numerics` param: which code paths the math libraries take, pinned before the first computation.

On a CPU, a float result depends on more than the params and the torch build. Three dispatchers choose
kernels by the processor they find, and different kernels sum in different orders:
- MKL's GEMM (every matmul) picks a branch per CPU vendor and instruction set; its Conditional Numerical
  Reproducibility mode (`MKL_CBWR`) fixes the branch and its cache-size assumptions;
- ATen's vectorised kernels (softmax, layer norm, reductions, the CPU attention kernel's own loops) pick
  by CPU capability (`ATEN_CPU_CAPABILITY`);
- oneDNN's JIT kernels (the MLP's GELU) pick by ISA (`ONEDNN_MAX_CPU_ISA`).
Each reads its variable once, at its first use, so `pin` must run before any tensor is computed: it checks
that ATen and MKL took the setting, and says so plainly when something computed first.

A training run is chaotic enough that one last bit moves its end (docs/runlogs/machines.md), so only
identical kernels carry committed bytes to another machine. This module imports torch only inside its
functions: the leaf stays cheap for the modules that read params.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
from pathlib import Path

from .errors import ConfigError

VARIABLES = ("MKL_CBWR", "ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA")
# setting -> the variables it sets; the others of VARIABLES are removed, so the setting alone decides
SETTINGS: dict[str, dict[str, str]] = {
    # AVX2 everywhere: the fastest paths an x86-64 CPU of the last decade has in common. MKL documents its
    # AVX2 branch for Intel and compatible processors; the MKL in torch 2.13 refuses it on an AMD EPYC
    # (mkl_cbwr_set returns "unsupported branch") and keeps its own dispatch in CNR mode (branch AUTO).
    "avx2": {"MKL_CBWR": "AVX2", "ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"},
    # MKL's SSE2 branch, the one it accepts on every x86-64 CPU vendor; slower training
    # (docs/performance.md, "Measurements the code cites").
    "compatible": {"MKL_CBWR": "COMPATIBLE", "ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"},
    # whatever the libraries choose for this CPU: fastest, and the same bytes only on the same CPU kind
    "native": {},
}
DEFAULT = "avx2"
# ATen's name for the capability each setting asks for (torch.backends.cpu.get_cpu_capability())
ATEN_NAMES = {"avx2": "AVX2"}
# MKL's branch numbers (mkl_service.h, MKL_CBWR_*), as mkl_cbwr_get(MKL_CBWR_BRANCH) returns them
MKL_BRANCHES = {1: "OFF", 2: "AUTO", 3: "COMPATIBLE", 4: "SSE2", 8: "SSE4_2", 9: "AVX", 10: "AVX2", 12: "AVX512",
                14: "AVX512_E1"}
_MKL_CBWR_BRANCH = 1
_pinned: str | None = None  # the setting this process pinned, for what it writes (checkpoints)


def check_numerics(value) -> str:
    """The `numerics` param, validated: one of SETTINGS, else a ConfigError naming the key."""
    if value not in SETTINGS:
        raise ConfigError("numerics", f"must be one of {', '.join(SETTINGS)}, got {value!r}",
                          f"numerics: {DEFAULT} pins the math libraries' code paths (docs/pipeline.md)")
    return value


def add_argument(parser, default: str = DEFAULT) -> None:
    """A script's `--numerics` option (benchmarks): the setting it pins, as the param does for stages."""
    parser.add_argument("--numerics", choices=list(SETTINGS), default=default,
                        help="math libraries' code paths, as the `numerics` param (default: %(default)s)")


def pin(setting: str) -> dict[str, str]:
    """Set the math libraries' code paths for this process and the processes it starts; returns what took
    effect (`effective()`). Call it before the first tensor is computed: a ConfigError naming `numerics`
    when ATen or MKL had already chosen, or when this CPU lacks what the setting asks for."""
    global _pinned
    wanted = SETTINGS[check_numerics(setting)]
    if _pinned not in (None, setting):  # oneDNN keeps the first ISA cap it read, whatever pin checks
        raise _too_late(setting, f"this process already pinned {_pinned}")
    for name in VARIABLES:
        if name in wanted:
            os.environ[name] = wanted[name]
        else:
            os.environ.pop(name, None)
    took = effective()
    aten = ATEN_NAMES.get(wanted.get("ATEN_CPU_CAPABILITY", ""))
    if aten and took["aten"] != aten:
        if took["aten"] == "DEFAULT":  # ATen falls back silently when the CPU lacks the instructions
            raise ConfigError("numerics", f"{setting} needs a CPU with {aten}, and this one has only {took['aten']}",
                              "use a machine with AVX2 (every x86-64 CPU since about 2015), or numerics: native")
        raise _too_late(setting, f"ATen already runs {took['aten']} kernels")
    if took["mkl"] == "OFF" and "MKL_CBWR" in wanted:
        raise _too_late(setting, "MKL started without it")
    _pinned = setting
    return took


def current() -> str:
    """The setting `pin` applied in this process, or "unpinned"; checkpoints store it."""
    return _pinned or "unpinned"


def _too_late(setting: str, what: str) -> ConfigError:
    return ConfigError("numerics", f"{setting} was pinned after the first computation ({what})",
                       "call reasonrl.numerics.pin (stage_setup does) before any tensor is computed")


def effective() -> dict[str, str]:
    """The code paths this process's math libraries run: ATen's CPU capability, MKL's CNR branch ("OFF" when
    MKL dispatches freely, "AUTO" when it refused the asked branch) and oneDNN's ISA cap. Reading them
    starts ATen and MKL, so the variables are fixed from here on."""
    import torch

    mkl = "none"
    lib = _torch_cpu_library()
    if lib is not None:  # the query starts MKL if nothing has yet, reading MKL_CBWR as it is now
        mkl = MKL_BRANCHES.get(lib.mkl_serv_cbwr_get(_MKL_CBWR_BRANCH), "unknown")
    return {"aten": torch.backends.cpu.get_cpu_capability(), "mkl": mkl,
            "onednn": os.environ.get("ONEDNN_MAX_CPU_ISA", "native")}


def _torch_cpu_library():
    """libtorch_cpu, whose statically linked MKL exports its CNR query; None on a build without it."""
    import torch

    path = Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"
    try:
        lib = ctypes.CDLL(str(path))
        lib.mkl_serv_cbwr_get  # noqa: B018  (raises AttributeError on a build without MKL)
    except (OSError, AttributeError):
        return None
    return lib


def machine() -> str:
    """The CPU and torch build this process computes on: bytes depend on both under `numerics: native`,
    so a log that names them tells a later reader which machine a committed dvc.lock came from."""
    import torch

    cpu: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = (part.strip() for part in line.partition(":"))
            cpu.setdefault(key, value)
    except OSError:  # not Linux
        pass
    name = cpu.get("model name") or platform.processor() or platform.machine()
    family = f", family {cpu['cpu family']} model {cpu['model']}" if "cpu family" in cpu and "model" in cpu else ""
    if "flags" in cpu:  # the instruction sets; the same name and family can hide different ones
        family += f", flags md5 {hashlib.md5(cpu['flags'].encode()).hexdigest()[:8]}"
    return (f"{name}{family}, {os.cpu_count()} CPUs; torch {torch.__version__}, "
            f"CPU capability {torch.backends.cpu.get_cpu_capability()}")
