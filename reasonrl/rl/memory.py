"""The RL step's memory policy: glibc's heap given back between its phases (`heap_trimmer`), and during the
one forward that would otherwise peak, after each block (`trimmed_per_layer`). It moves no number."""

from __future__ import annotations

import contextlib
import ctypes
import functools
from collections.abc import Callable

import torch


def heap_trimmer() -> Callable[[], object]:
    """glibc's malloc_trim(0), or a no-op elsewhere. The step's tensors change shape with every batch (padding
    lengths), and glibc keeps the freed pages of its heap resident: without a trim after each step the
    resident set of a 200-step run grows from ~470 MB to over 800 MB. Within a step, each large transient (the
    training forward and backward, a verifier's or dynamic sampling's forward over everything sampled, a
    second update) would stack on the pages the phase before it freed: trimming before each (and after each
    layer of dynamic sampling's forward over everything it drew) keeps every RL family's peak under 600 MB
    (docs/performance.md). Trimming moves no number."""
    try:
        return functools.partial(ctypes.CDLL("libc.so.6").malloc_trim, 0)
    except (OSError, AttributeError):
        return lambda: None


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
