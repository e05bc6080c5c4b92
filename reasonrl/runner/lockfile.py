"""A faster dvc.lock update for the `dvc repro -s` processes that `reasonrl repro` starts.

After each stage DVC rewrites dvc.lock: it parses the whole file with ruamel's round-trip parser (pure
Python, to keep comments that a generated lock never has) and dumps it again. At this DAG's size that is
seconds per stage, spent while the stage holds the repo lock, so a second worker that
finishes meanwhile waits too. Here the lock is read with DVC's own fast reader (the C loader) and only the
entries that changed are emitted again, with DVC's own dumper, and spliced into the text; everything else
keeps its bytes. The result is the file DVC itself would write, byte for byte (tests/test_lockfile.py
checks this against DVC's full dump); any change this cannot splice (a stage removed, keys reordered,
another top-level key changed) falls back to DVC's full dump.

Reading it costs as much: DVC parses the whole lock with ruamel (seconds of CPU at the full run's size) when it
loads the pipeline and again before each update, so every `dvc repro -s` paid that twice or more. The
parse is therefore kept beside the lock (.dvc/tmp, one entry keyed by the SHA-256 of the text it came
from and the parsers' versions): whoever writes or first reads a text stores what DVC parses from it, and
a read of the same text loads that instead. A text it has not seen (an edit, a checkout, another revision)
is parsed as before. With one entry, two workers can replace each other's: that costs a parse, never a
wrong one.

params.yaml costs the same at a smaller scale: DVC parses it with ruamel about three times per stage (the
params' hashes, the lock entry, dvc.yaml's interpolation). Its parse is kept the same way, in a file of its
own: a fraction of a second of CPU less per `dvc repro -s` (docs/performance.md).

DVC then checks every lock it reads against its schema (voluptuous, a walk over every entry), so each
`dvc repro -s` paid that once more. Validation of DVC's safe parse depends on the text alone (a round-trip
parse, which DVC makes to remove a stage, can differ: it is always checked), so the key of the last lock text
known to pass is kept beside the parse (`VALID`): the reader that validates a text marks it, a read of the marked
text skips the check, and `modify_lock`, after splicing a valid text, checks only the entries it changed before it
marks what it wrote. Any other text (an edit by hand, a full dump, a failed entry) is checked in full, with
DVC's error. DVC's lookup of each param key in that parse is sped up too, by `params_lookup`.

Lock files are written by `modify_lock`; params files and lock files are read through the kept parse;
dvc.yaml goes through DVC unchanged. What it uses of DVC goes through runner.dvc_adapter, against the pinned
DVC; `install` imports the DVC internals it relies on first, so a DVC that moved them fails at once with an
ImportError rather than writing a different lock.

What it buys (docs/performance.md, "Per-stage overhead: DVC's lock rewrite", "reading the lock", and
"Measurements the code cites"): a forced `repro -s` takes seconds less through this update than through DVC's
own, seconds spent holding DVC's repo lock; the kept parse saves a parse per stage that runs, and the planner's
pass over a third of its time. DVC 3.67 has no faster
path of its own: its lock update is the round-trip `modify_yaml`, and ruamel's round-trip parser has no C version.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import io
import os
import pickle
import re
import threading
from collections.abc import Iterator
from typing import Any

from reasonrl.io import atomic_path
from reasonrl.runner import dvc_adapter, params_lookup

_ANCHOR = re.compile(r"&id\d+")
PARSED = "reasonrl-lock.pickle"  # in the repository's .dvc/tmp: (SHA-256 of a lock's text, DVC's parse of it)
VALID = "reasonrl-lock.valid"  # beside it: the key of the last lock text known to pass DVC's lock schema


def kept_name(path: str) -> str:
    """The file a parse of `path` is kept in: PARSED for a lock file, reasonrl-<name>.pickle for another."""
    name = os.path.basename(os.fspath(path))
    return PARSED if name.endswith(".lock") else f"reasonrl-{name}.pickle"


def _parsed_path(path: str) -> str | None:
    """Where the parse of file `path` is kept: its repository's .dvc/tmp (None when there is none, as for a
    file read from another revision)."""
    tmp = os.path.join(os.path.dirname(os.path.abspath(os.fspath(path))), ".dvc", "tmp")
    return os.path.join(tmp, kept_name(path)) if os.path.isdir(tmp) else None


@functools.cache
def _parsers() -> str:
    """The versions of the parsers and the schema checker behind DVC's reading (an upgrade parses and checks
    anew); read once per process."""
    from importlib.metadata import version

    versions = {"dvc": dvc_adapter.installed_version(), **{p: version(p) for p in ("ruamel.yaml", "voluptuous")}}
    return ",".join(f"{p}={v}" for p, v in versions.items())


@functools.lru_cache(maxsize=4)
def _key(text: str) -> str:
    """The text's SHA-256, with the parsers' and checker's versions. Kept for the last few texts: a stage asks
    for the same lock text's key up to five times (its kept parse, twice, and its schema mark)."""
    return _parsers() + ":" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _store(path: str, text: str, data: dict) -> None:
    """Keep `data` as the parse of `text` (an optimisation: a failure is not an error)."""
    kept = _parsed_path(path)
    if kept is not None:
        with contextlib.suppress(Exception):  # unpicklable: a file nested deeper than pickle's recursion
            _write(kept, pickle.dumps((_key(text), data), protocol=pickle.HIGHEST_PROTOCOL))


def _write(where: str, content: bytes) -> None:
    """Write `content` to `where` atomically (another worker may be reading it); any failure (a full disk) leaves
    nothing behind and is not an error: what is kept there is an optimisation."""
    with contextlib.suppress(Exception), atomic_path(where) as tmp:
        tmp.write_bytes(content)


def _valid_path(path: str) -> str | None:
    kept = _parsed_path(path)
    return None if kept is None else os.path.join(os.path.dirname(kept), VALID)


def known_valid(path: str, text: str) -> bool:
    """Whether `text`, the lock file `path`'s, is the text last known to pass DVC's lock schema."""
    where = _valid_path(path)
    if where is None:
        return False
    try:
        with open(where, encoding="utf-8") as f:
            return f.read() == _key(text)
    except OSError:
        return False


def _mark_valid(path: str, text: str) -> None:
    where = _valid_path(path)
    if where is not None:
        _write(where, _key(text).encode("utf-8"))


def _entries_valid(before: dict, after: dict) -> bool:
    """Whether the stage entries `after` changed or added against `before` pass DVC's schema for lock entries
    (the lock schema checks each entry on its own, so with the rest unchanged these decide the whole)."""
    import voluptuous as vol

    old = before.get("stages") or {}
    changed = {k: v for k, v in (after.get("stages") or {}).items() if k not in old or old[k] != v}
    try:
        vol.Schema(dvc_adapter.lock_entries_schema())(changed)
    except vol.Invalid:
        return False
    return True


def parse_kept(text: str, path: str) -> dict:
    """DVC's parse of a file's text: the kept one when it is of this very text, else DVC's parser's."""
    kept = _parsed_path(path)
    if kept is not None:
        with contextlib.suppress(Exception):  # unreadable or torn: parse as DVC does
            with open(kept, "rb") as f:
                key, data = pickle.load(f)
            if key == _key(text):
                return data
    data = dvc_adapter.parse_yaml(text, path)
    _store(path, text, data)
    return data


def _workspace(fs: Any) -> bool:
    """Whether DVC reads through the workspace's own files (not a git revision's or DVC's cache view: those
    declare protocol "local" too), the only files whose parse is kept beside them."""
    return fs is None or dvc_adapter.is_local_fs(fs)


def _emit(name: str, entry: Any) -> str | None:
    """`entry`'s block as DVC's dumper writes it under `stages:` (None where it would use an anchor, whose
    numbering depends on the rest of the file)."""
    buf = io.StringIO()
    dvc_adapter.dump_yaml({"stages": {name: entry}}, buf)
    block = buf.getvalue().split("\n", 1)[1]
    return None if _ANCHOR.search(block) else block


_TOP = re.compile(r"^[^ ]", re.M)  # a line that starts the next top-level key (or a blank one): the section ends
_ENTRY = re.compile(r"^  [^ \-\n]", re.M)  # a line that starts a stage's entry


def _stage_blocks(text: str) -> tuple[int, list[int], int] | None:
    """Where `stages:` starts its entries, where each entry starts and where the section ends (offsets)."""
    m = re.search(r"^stages:\n", text, re.M)
    if m is None:
        return None
    head = m.end()
    top = _TOP.search(text, head)
    end = top.start() if top else len(text)
    return head, [e.start() for e in _ENTRY.finditer(text, head, end)], end


def splice(text: str, before: dict, after: dict) -> str | None:
    """`after` as text, reusing `text` (which holds `before`) for every stage entry that did not change;
    None where the change is not a set of changed or appended stage entries."""
    if list(before) != list(after) or any(before[k] != after[k] for k in before if k != "stages"):
        return None
    old, new = before.get("stages") or {}, after.get("stages") or {}
    if not old or list(new)[:len(old)] != list(old):
        return None
    found = _stage_blocks(text)
    if found is None or len(found[1]) != len(old):
        return None
    head, starts, end = found
    bounds = [*starts, end]
    out = [text[:head]]
    for i, name in enumerate(new):
        if i < len(old) and old[name] == new[name]:
            out.append(text[bounds[i]:bounds[i + 1]])
            continue
        block = _emit(name, new[name])
        if block is None:
            return None
        out.append(block)
    out.append(text[end:])
    return "".join(out)


@contextlib.contextmanager
def modify_lock(path: str, fs: Any = None) -> Iterator[dict]:
    """DVC's `modify_yaml` for a lock file: the same data in, the same bytes out, without the round trip."""
    open_fn = fs.open if fs else open
    exists = fs.exists(os.fspath(path)) if fs else os.path.exists(path)
    text = ""
    if exists:
        with open_fn(path, encoding="utf-8") as fd:
            text = fd.read()
    local = _workspace(fs)
    data = (parse_kept(text, path) if local else dvc_parse(text, path)) if text else {}
    # a second load of the kept parse is a copy cheaper than deepcopy (docs/performance.md, "Measurements the
    # code cites")
    before = parse_kept(text, path) if local and text and _parsed_path(path) else copy.deepcopy(data)
    yield data
    new_text = spliced = splice(text, before, data) if text else None
    if new_text is None:
        buf = io.StringIO()
        dvc_adapter.dump_yaml(data, buf)
        new_text = buf.getvalue()
    with open_fn(path, "w+", encoding="utf-8") as fd:
        fd.write(new_text)
    if local:  # DVC's dumper round-trips: the text just written parses to `data` (tests/test_lockfile.py)
        _store(path, new_text, data)
        if spliced is not None and known_valid(path, text) and _entries_valid(before, data):
            _mark_valid(path, new_text)


def dvc_parse(text: str, path: str) -> Any:
    """DVC's own reading of a YAML file it wrote (YAML 1.2: `3e-06` is a number, not PyYAML's string)."""
    return dvc_adapter.parse_yaml(text, path)


def load_yaml(path: str, fs: Any = None, **kwargs: Any) -> Any:
    """DVC's `load_yaml` of a params file (or dvc.yaml's `vars`): its reading and errors, with the kept parse
    for a local file."""
    local = _workspace(fs)
    return dvc_adapter.load_data(path, parser=parse_kept if local else dvc_parse, fs=fs, **kwargs)


def install() -> None:
    """Make DVC update lock files with `modify_lock`, read lock and params files through `parse_kept` (dvc.yaml
    keeps DVC's own path) and check a lock text against its schema once, for the rest of the process (inside
    `reading()` too)."""
    dvc_adapter.check_lock_internals()  # fails loudly if they moved
    params_lookup.patch(installed=True)
    reader = dvc_adapter.LOCK_READER.get()
    if not getattr(reader, "__installed__", False):  # reading()'s reader would be put back
        dvc_adapter.LOCK_READER.set(_kept_reader(getattr(reader, "__wrapped__", reader), installed=True))
    check = dvc_adapter.SCHEMA_CHECK.get()
    if not getattr(check, "__installed__", False):
        dvc_adapter.SCHEMA_CHECK.set(_checked_once(getattr(check, "__wrapped__", check), installed=True))
    loaders = dvc_adapter.PARAMS_LOADERS.get()
    for suffix in (".yaml", ".yml"):  # the params files' loader (a defaultdict whose default is YAML)
        loaders[suffix] = load_yaml
    original = dvc_adapter.YAML_WRITER.get()
    if getattr(original, "__wrapped_by_reasonrl__", False):
        return

    def modify_yaml(path, fs=None):
        if os.fspath(path).endswith(".lock"):
            return modify_lock(path, fs=fs)
        return original(path, fs=fs)

    modify_yaml.__wrapped_by_reasonrl__ = True  # type: ignore[attr-defined]
    dvc_adapter.YAML_WRITER.set(modify_yaml)


@contextlib.contextmanager
def reading() -> Iterator[None]:
    """Inside, this process's DVC reads lock and params files through `parse_kept` (as `install` makes it),
    and writes as before; on leaving, DVC is as it was. For the planner of `reasonrl repro`, which asks DVC
    which stages changed and so parses the lock and params.yaml several times: over a third less time with it
    (docs/performance.md, "Measurements the code cites"). Nested, or beside another thread's, or with `install`
    called inside: only the outermost one that patched puts back, and only what is still its own. The lock's
    schema check (`_checked_once`) and the params lookup (`params_lookup.param_get`) are patched and put back the
    same way."""
    reader, checker = dvc_adapter.LOCK_READER, dvc_adapter.SCHEMA_CHECK
    with _reading_lock:
        table = dvc_adapter.PARAMS_LOADERS.get()
        parse = reader.get()
        loaders = {suffix: table.get(suffix) for suffix in (".yaml", ".yml")}  # .get: a defaultdict
        mine = None if getattr(parse, "__kept__", False) else _kept_reader(parse)
        check = checker.get()
        my_check = None if getattr(check, "__kept__", False) else _checked_once(check)
        lookup = params_lookup.patch()
        if mine is not None:
            reader.set(mine)
            table.update({suffix: load_yaml for suffix in loaders})
        if my_check is not None:
            checker.set(my_check)
    try:
        yield
    finally:
        with _reading_lock:
            params_lookup.unpatch(lookup)
            if my_check is not None and checker.get() is my_check:
                checker.set(check)
            if mine is not None and reader.get() is mine:
                reader.set(parse)
                table = dvc_adapter.PARAMS_LOADERS.get()
                for suffix, loader in loaders.items():
                    if loader is None:  # served by the default until now
                        table.pop(suffix, None)
                    else:
                        table[suffix] = loader


_reading_lock = threading.Lock()


def _kept_reader(original: Any, installed: bool = False) -> Any:
    """strictyaml.load's parser (through which DVC reads lock files), with lock files read by `parse_kept`."""
    def read_yaml(text, path, typ="safe"):
        if typ == "safe" and os.fspath(path).endswith(".lock"):
            return parse_kept(text, path)
        return original(text, path, typ=typ)

    read_yaml.__kept__, read_yaml.__installed__, read_yaml.__wrapped__ = True, installed, original  # type: ignore
    return read_yaml


def _checked_once(original: Any, installed: bool = False) -> Any:
    """strictyaml.load's `validate`, skipped for the lock text last known to pass DVC's lock schema (`known_valid`;
    load ignores what it returns), and marking a lock text that passes."""
    def validate(data, schema, text=None, path=None, rev=None):
        lock = (schema is dvc_adapter.lock_schema() and text is not None and path is not None
                and type(data) is dict)  # safe
        if lock and known_valid(path, text):
            return data
        out = original(data, schema, text=text, path=path, rev=rev)
        if lock:
            _mark_valid(path, text)
        return out

    validate.__kept__, validate.__installed__, validate.__wrapped__ = True, installed, original  # type: ignore
    return validate
