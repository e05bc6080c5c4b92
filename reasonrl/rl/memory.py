"""The RL loop's memory policy, as the loop's hooks (context.Hooks): the heap given back between the step's
phases (`heap_trimmer`, by allocator), and during the one forward that would otherwise peak, after each block
(`trimmed_per_layer`). The stages pass it to the loop (`memory_hooks`; rl/run.py); the algorithm never trims.
Under glibc, every run also has its large blocks mapped on their own (`map_large_blocks`, which the run sets
once). It moves no number. The other half of the policy, what the step
itself keeps (the rollout's prefill), recomputes (the training forward's blocks) and computes (the KL record's
groups), is the run's plan (layout.py, `Plan`), which the step receives.

It asks the process for the allocator's own calls rather than importing the runner's allocator module
(reasonrl.runner.malloc): the science side imports none of the machinery that runs it.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

import torch

from .context import Hooks, _nothing

if TYPE_CHECKING:
    from .job import Job


def memory_hooks(job: Job, verifier: bool) -> Hooks:
    """The hooks of the memory policy for a run of `job` (`verifier`: whether a learned verifier scores it)."""
    trim = heap_trimmer(sampled_forward=verifier or job.dynamic_sampling)
    return Hooks(between_phases=trim, wide_forward=lambda model: trimmed_per_layer(model, trim))


# glibc's M_MMAP_THRESHOLD (mallopt's parameter -3); 1 MB: an allocation of at least this size is a mapping of its own
M_MMAP_THRESHOLD, LARGE_BLOCK = -3, 1 << 20


def map_large_blocks() -> bool:
    """Under glibc's allocator, every RL run has each allocation of 1 MB or more mapped on its own and unmapped when
    freed. glibc's threshold otherwise rises to 32 MB as mapped blocks are freed, after which the step's large
    transients land on the heap and fragment it faster than the trims between phases give it back: the chain runs,
    which also recompute their blocks (layout.Plan.recompute), peaked at 772 MB in 6 steps with it dynamic and 526 MB
    fixed at 1 MB (whole stages 534-541 MB against 973-1,019 MB); and among the hop runs a GRPO run on `far` from the
    exposure base and a verifier-rewarded run still reached 600-610 MB, 505 and 499 MB with it fixed, for 11 and 15%
    more wall clock (the kernel's zero-filled pages: docs/performance.md, "Every family under glibc"). Process-wide,
    once per run; nothing under tcmalloc, which needs none of it. Returns whether it set it. It moves no number."""
    if tcmalloc_release() is not None:
        return False
    with contextlib.suppress(OSError, AttributeError):
        return bool(ctypes.CDLL("libc.so.6").mallopt(M_MMAP_THRESHOLD, LARGE_BLOCK))
    return False


def heap_trimmer(sampled_forward: bool = False) -> Callable[[], object]:
    """The call that gives the heap's freed pages back to the system, at the points where the step calls its
    `between_phases` hook; what it does depends on the allocator (reasonrl.runner.malloc chooses it).

    glibc: malloc_trim(0) everywhere. The step's tensors change shape with every batch (padding lengths), and
    glibc keeps the freed pages of its heap resident and fragmented: without a trim after each step the
    resident set of a run keeps growing with its steps. Within a step, each large transient (the
    training forward and backward, a verifier's or dynamic sampling's forward over everything sampled, a
    second update) would stack on the pages the phase before it freed, so the step trims before each (and
    after each layer of dynamic sampling's forward over everything it drew). Each trim costs the page faults
    of taking those pages again.

    tcmalloc reuses freed memory by size without that growth: nothing, unless the run has a forward over
    everything sampled (`sampled_forward`: a verifier reward or dynamic sampling), whose stage peaked higher
    without it; there tcmalloc's ReleaseFreeMemory. Peaks and costs: docs/performance.md ("Measurements the
    code cites" and the sections it links). No trim moves a number."""
    release = tcmalloc_release()
    if release is not None:
        return release if sampled_forward else _nothing
    with contextlib.suppress(OSError, AttributeError):
        return functools.partial(ctypes.CDLL("libc.so.6").malloc_trim, 0)
    return _nothing


def tcmalloc_release() -> Callable[[], object] | None:
    """tcmalloc's ReleaseFreeMemory when tcmalloc is this process's allocator (preloaded, so its symbols are the
    process's own), else None."""
    with contextlib.suppress(OSError, AttributeError):
        return ctypes.CDLL(None).MallocExtension_ReleaseFreeMemory
    return None



@contextlib.contextmanager
def trimmed_per_layer(model: torch.nn.Module, trim: Callable[[], object]):
    """Inside, the heap is trimmed after each block of `model` (a hook on its MLP, the block's last part), so a
    forward over many rows does not stack each layer's transient on the pages the layer before it freed; the
    hooks go when the `with` ends. It moves no number: the hook returns nothing, so every output stays as is."""
    def after(*_) -> None:  # a forward hook that returned a value would replace the MLP's output
        trim()

    handles = [blk.mlp.register_forward_hook(after) for blk in model.blocks]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()
