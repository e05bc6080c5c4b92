"""The tasks, behind one protocol (base.py), loaded by name.

A task is a module reasonrl/tasks/<name>.py with a `TASK` object; every module here but base.py is one. The
list of tasks is the modules present, and `get_task` imports a task's module only when it is asked for, so
code that uses one task runs (and a DVC stage depends on) that task's module and base.py, never another
task's: adding or editing a task reruns only its own stages. Params name the task of each base
(`bases.<name>.task`); the model stores it (ModelConfig.task), and everything trained or evaluated from that
model follows it. Token ids come from base.ALPHABET, which no task changes.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from ..errors import ConfigError, suggest
from .base import (
    ALPHABET,
    ANSWER_MARK,
    END,
    END_ID,
    MODES,
    PAD_ID,
    STOI,
    Problem,
    Task,
    cell,
    decode,
    distribution,
    encode,
    trace_of,
    vocab_size,
)
from .base import check_chars as _check_chars

__all__ = ["ALPHABET", "ANSWER_MARK", "DEFAULT", "END", "END_ID", "MODES", "PAD_ID", "STOI", "Problem", "Task",
           "cell", "decode", "distribution", "encode", "get_task", "names", "trace_of", "vocab_size"]

DEFAULT = "hop"  # the task of a section that names none


def names() -> list[str]:
    """Every task present: the modules of this package but base."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name != "base" and not m.name.startswith("_"))


@cache
def _load(name: str) -> Task:
    task = importlib.import_module(f"{__name__}.{name}").TASK
    if task.name != name:
        raise ConfigError(f"tasks.{name}", f"its TASK is named {task.name!r}", f"name it {name!r}, as its module")
    _check_chars(task)
    return task


def get_task(name: str, key: str = "task") -> Task:
    """The task called `name` (its module imported now, once); a ConfigError naming `key` otherwise."""
    present = names()
    if name not in present:
        near = suggest(str(name), present)
        raise ConfigError(key, f"unknown task {name!r}", (f"did you mean {near!r}? " if near else "")
                          + f"registered tasks: {', '.join(present)} (reasonrl/tasks/)")
    return _load(name)
