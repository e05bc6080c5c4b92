"""The memory allocator a process runs on: tcmalloc where it is installed, else the C library's malloc.

An RL step allocates and frees a few hundred MB of tensors whose shapes change with every batch. glibc's
malloc keeps the freed pages resident and fragmented, so a run's resident set grows unless the heap is
trimmed (rl.memory), and every trim hands pages back that the next phase faults in again, zero-filled by
the kernel: about a quarter of a step's CPU time. tcmalloc keeps freed memory in per-size lists, reuses it
without faults and returns it to the system gradually; a step is then cheaper and its peak lower, with no
trim in most run kinds (rl.memory). The allocator moves no number: every tensor is 64-byte aligned either way.
What it buys (docs/performance.md, "The allocator" and "Measurements the code cites"): a faster RL step than
on glibc with its trims (benchmarks/malloc.py), and RL stages in less wall clock with lower peaks, the same
bytes.

It has to be chosen when a process starts (LD_PRELOAD). `reasonrl repro` starts its stages under it,
`reasonrl train` and the step benchmarks (peer_trl, rl_step) restart themselves under it; a plain `dvc repro`
runs whatever its environment says. REASONRL_MALLOC=system keeps the C library's malloc everywhere: also the
way out where the preload cannot load (it brings the system's libstdc++, which a conda environment built
against a newer one may refuse).
"""

from __future__ import annotations

import ctypes.util
import functools
import os
import sys
import sysconfig
from collections.abc import Mapping

LIBRARY = "libtcmalloc_minimal.so.4"  # Debian and Ubuntu: apt install libtcmalloc-minimal4
SWITCH = "REASONRL_MALLOC"  # "system": keep the C library's malloc
_RESTARTED = "REASONRL_MALLOC_RESTARTED"  # set by restart(), so that a preload that did not take is not retried
# already preloaded: an allocator of the user's choice (or ASan, which must come first) is left as it is
OTHERS = ("libtcmalloc", "libjemalloc", "libmimalloc", "libasan")


def library(env: Mapping[str, str] | None = None) -> str | None:
    """The path of the tcmalloc library to preload, or None (not installed, not Linux, or switched off in
    `env`, by default this process's environment)."""
    if (os.environ if env is None else env).get(SWITCH, "") == "system" or not sys.platform.startswith("linux"):
        return None
    return _installed()


@functools.cache
def _installed() -> str | None:
    for folder in (f"/usr/lib/{sysconfig.get_config_var('MULTIARCH')}", "/usr/lib64", "/usr/lib", "/usr/local/lib"):
        path = os.path.join(folder, LIBRARY)
        if os.path.exists(path):
            return path
    found = ctypes.util.find_library("tcmalloc_minimal")  # elsewhere: ldconfig's cache (a subprocess)
    return found if found and found.startswith("libtcmalloc_minimal") else None


def active() -> str:
    """"tcmalloc" when this process has it loaded, else "system"."""
    try:
        with open("/proc/self/maps") as maps:
            return "tcmalloc" if any("libtcmalloc" in line for line in maps) else "system"
    except OSError:
        return "system"


def environ(env: Mapping[str, str]) -> dict[str, str]:
    """`env` for a child process that should run on tcmalloc: the library added to LD_PRELOAD (after what is
    there) when one is found and LD_PRELOAD names no allocator yet; otherwise `env` as it is."""
    lib, out = library(env), dict(env)
    preloaded = out.get("LD_PRELOAD", "")
    if lib and not any(name in preloaded for name in OTHERS):
        out["LD_PRELOAD"] = f"{preloaded}:{lib}" if preloaded else lib
    return out


def restart() -> None:
    """Re-execute this process under tcmalloc, with the same interpreter options and arguments, when it is
    installed and not loaded yet. Call it before importing torch: what ran before is run again. A script read
    from stdin (or an interactive session) cannot be run again, so it stays as it is."""
    if active() == "tcmalloc":
        os.environ.pop(_RESTARTED, None)  # this process's children inherit the preload, not the marker
        return
    if os.environ.get(_RESTARTED) or library() is None or sys.argv[0] in ("", "-"):
        return
    env = {**environ(os.environ), _RESTARTED: "1"}
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], env)
