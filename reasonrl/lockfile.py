"""A faster dvc.lock update for the `dvc repro -s` processes that `reasonrl repro` starts.

After each stage DVC rewrites dvc.lock: it parses the whole file with ruamel's round-trip parser (pure
Python, to keep comments that a generated lock never has) and dumps it again. At this DAG's size (29,000
lines) that is about 6 s per stage, spent while the stage holds the repo lock, so a second worker that
finishes meanwhile waits too. Here the lock is read with DVC's own fast reader (the C loader) and only the
entries that changed are emitted again, with DVC's own dumper, and spliced into the text; everything else
keeps its bytes. The result is the file DVC itself would write, byte for byte (tests/test_lockfile.py
checks this against DVC's full dump); any change this cannot splice (a stage removed, keys reordered,
another top-level key changed) falls back to DVC's full dump.

Only dvc.lock files are touched; dvc.yaml and params.yaml go through DVC unchanged. `dvc` itself is
pinned (pyproject.toml); `install` imports the DVC internals it relies on first, so a DVC that moved them
fails at once with an ImportError rather than writing a different lock.
"""

from __future__ import annotations

import contextlib
import copy
import io
import os
import re
from collections.abc import Iterator
from typing import Any

_ANCHOR = re.compile(r"&id\d+")


def _emit(name: str, entry: Any) -> str | None:
    """`entry`'s block as DVC's dumper writes it under `stages:` (None where it would use an anchor, whose
    numbering depends on the rest of the file)."""
    from dvc.utils.serialize._yaml import _dump

    buf = io.StringIO()
    _dump({"stages": {name: entry}}, buf)
    block = buf.getvalue().split("\n", 1)[1]
    return None if _ANCHOR.search(block) else block


def _stage_blocks(lines: list[str]) -> tuple[int, list[int], int] | None:
    """Where `stages:` starts its entries, the first line of each entry, and where the section ends."""
    try:
        head = lines.index("stages:\n") + 1
    except ValueError:
        return None
    starts, end = [], len(lines)
    for i in range(head, len(lines)):
        line = lines[i]
        if line[:1] not in (" ", ""):  # the next top-level key
            end = i
            break
        if line.startswith("  ") and line[2:3] not in (" ", "-", "\n", ""):
            starts.append(i)
    return head, starts, end


def splice(text: str, before: dict, after: dict) -> str | None:
    """`after` as text, reusing `text` (which holds `before`) for every stage entry that did not change;
    None where the change is not a set of changed or appended stage entries."""
    if list(before) != list(after) or any(before[k] != after[k] for k in before if k != "stages"):
        return None
    old, new = before.get("stages") or {}, after.get("stages") or {}
    if not old or list(new)[:len(old)] != list(old):
        return None
    lines = text.splitlines(keepends=True)
    found = _stage_blocks(lines)
    if found is None or len(found[1]) != len(old):
        return None
    head, starts, end = found
    bounds = [*starts, end]
    out = lines[:head]
    for i, name in enumerate(new):
        if i < len(old) and old[name] == new[name]:
            out.extend(lines[bounds[i]:bounds[i + 1]])
            continue
        block = _emit(name, new[name])
        if block is None:
            return None
        out.append(block)
    out.extend(lines[end:])
    return "".join(out)


@contextlib.contextmanager
def modify_lock(path: str, fs: Any = None) -> Iterator[dict]:
    """DVC's `modify_yaml` for a lock file: the same data in, the same bytes out, without the round trip."""
    from dvc.utils.serialize._yaml import _dump, parse_yaml

    open_fn = fs.open if fs else open
    exists = fs.exists(os.fspath(path)) if fs else os.path.exists(path)
    text = ""
    if exists:
        with open_fn(path, encoding="utf-8") as fd:
            text = fd.read()
    data = parse_yaml(text, path) if text else {}
    before = copy.deepcopy(data)
    yield data
    new_text = splice(text, before, data) if text else None
    if new_text is None:
        buf = io.StringIO()
        _dump(data, buf)
        new_text = buf.getvalue()
    with open_fn(path, "w+", encoding="utf-8") as fd:
        fd.write(new_text)


def install() -> None:
    """Make DVC's dvcfile module update lock files with `modify_lock` (dvc.yaml keeps DVC's own path)."""
    import dvc.dvcfile as dvcfile
    from dvc.utils.serialize._yaml import _dump, parse_yaml  # noqa: F401  (fails loudly if they move)

    original = dvcfile.modify_yaml
    if getattr(original, "__wrapped_by_reasonrl__", False):
        return

    def modify_yaml(path, fs=None):
        if os.fspath(path).endswith(".lock"):
            return modify_lock(path, fs=fs)
        return original(path, fs=fs)

    modify_yaml.__wrapped_by_reasonrl__ = True  # type: ignore[attr-defined]
    dvcfile.modify_yaml = modify_yaml
