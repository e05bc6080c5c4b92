"""The tasks, behind one protocol (base.py), and the token vocabulary they share.

A task is a module with a `TASK` object, registered here; the protocol is all the library uses of it.
Params name the task of each base (`bases.<name>.task`); the model stores it (ModelConfig.task), and
everything trained or evaluated from that model follows it. Token ids are 1 + the position of a character
in VOCABULARY (every registered task's characters, in registration order); 0 pads. A model's vocabulary
is its task's (`vocab_size`): a task registered later, with characters of its own, changes no earlier
task's models.
"""

from __future__ import annotations

from ..errors import ConfigError, suggest
from . import chain, hop
from .base import ANSWER_MARK, END, MODES, Problem, Task, trace_of

__all__ = ["ANSWER_MARK", "DEFAULT", "END", "END_ID", "MODES", "PAD_ID", "TASKS", "VOCAB_SIZE", "Problem", "Task",
           "decode", "encode", "get_task", "trace_of", "vocab_size"]

TASKS: dict[str, Task] = {t.name: t for t in (hop.TASK, chain.TASK)}
DEFAULT = "hop"  # the task of a section that names none

VOCABULARY = "".join(dict.fromkeys(c for t in TASKS.values() for c in t.chars))
PAD_ID = 0
STOI = {c: i + 1 for i, c in enumerate(VOCABULARY)}
ITOS = {i: c for c, i in STOI.items()}
VOCAB_SIZE = len(VOCABULARY) + 1
END_ID = STOI[END]


def get_task(name: str, key: str = "task") -> Task:
    """The registered task called `name`; a ConfigError naming `key` otherwise."""
    if name not in TASKS:
        near = suggest(str(name), list(TASKS))
        raise ConfigError(key, f"unknown task {name!r}", (f"did you mean {near!r}? " if near else "")
                          + f"registered tasks: {', '.join(TASKS)} (reasonrl/tasks/)")
    return TASKS[name]


def vocab_size(task: Task) -> int:
    """Embedding rows a model of `task` needs: PAD and the largest id of the task's characters."""
    return 1 + max(STOI[c] for c in task.chars)


def encode(text: str) -> list[int]:
    try:
        return [STOI[c] for c in text]
    except KeyError as e:
        raise ValueError(f"text: character {e.args[0]!r} is not in the vocabulary") from None


def decode(ids: list[int]) -> str:
    """Inverse of encode; PAD decodes to nothing."""
    return "".join(ITOS.get(i, "") for i in ids)
