"""`reasonrl exp run`: `dvc exp run -S ...` with the stages run by `reasonrl repro`, saved where `dvc exp show` sees it.

`dvc exp run` reproduces its targets one stage at a time (it is `dvc repro` inside, DVC's open request #755),
however many cores there are (the README's method experiment that way: docs/performance.md, "Measurements the
code cites"). An experiment
is three steps, and each is DVC's own code where DVC has it:
1. the -S overrides are written by DVC's `apply_overrides` (Hydra's override grammar, DVC's struct check, its
   round-trip YAML writer, which keeps the comments), after each was tried on a copy of its file: a malformed -S,
   a sweep, or a key the file does not have stops the command before anything is written, naming the key;
2. runner.parallel runs the stale stages, in this process, with the plan made once after the params were written;
3. DVC's `exp save` records the workspace as an experiment of HEAD. It commits only the stages that ran: with no
   targets it would commit every stage of the project as the workspace has it, recording a stale stage (one the
   new params touch but the targets do not need) as if it had run with them. The ran stages' files that git does
   not track yet (a new report) are included, as `dvc exp run` stages them (`_get_stage_files`), and the lock
   update is runner.lockfile's (same bytes; seconds less per stage at this project's dvc.lock).

The workspace is left as `dvc exp run` leaves it: HEAD at the baseline, the experiment's params and results in the
workspace and in `dvc exp show` (docs/parallel.md). A failed or interrupted run saves nothing and keeps what it
wrote, as `dvc exp run` does; `--dry` lists what would rerun and puts the params files back byte for byte.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from ..errors import ReasonrlError, suggest
from . import dvc_adapter, lockfile, parallel
from .plan import Plan, near_targets, stale_plan


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="exp_command", required=True, metavar="run")
    run_help = "dvc exp run's experiment, its stale stages run by `reasonrl repro`, then saved for `dvc exp show`"
    p = sub.add_parser("run", help=run_help, description=run_help)
    p.add_argument("-S", "--set-param", dest="set_param", action="append", default=[],
                   metavar="[<file>:]<key>=<value>",
                   help="as `dvc exp run -S`: Hydra's override syntax (`+key=v` adds a key, `~key` removes one); "
                   "repeatable; the file defaults to params.yaml")
    p.add_argument("-n", "--name", help="the experiment's name (default: DVC's generated one)")
    p.add_argument("-f", "--force", action="store_true", help="replace an experiment of the same name")
    p.add_argument("-m", "--message", help="the experiment commit's message")
    parallel.add_arguments(p)


def run(args: argparse.Namespace) -> int:
    dvc_adapter.check_version("exp run")
    if args.jobs < 1:
        raise ReasonrlError("-j", "must be at least 1")
    root = dvc_adapter.find_root(args.repo)
    if not args.dry:
        parallel.check_code(root, remote=bool(args.scheduler))  # before -S writes params.yaml
    overrides = checked_overrides(root, args.set_param)
    check_name(root, args.name, args.force)
    before = {path: (Path(root) / path).read_bytes() for path in overrides}
    try:
        write_overrides(root, overrides)
        plan = _plan(args)
    except BaseException:
        put_back(root, before)
        raise
    if args.dry:
        try:
            return parallel.run(args, plan)
        finally:
            put_back(root, before)
    status = parallel.run(args, plan)
    if status != 0:  # nothing is saved; the workspace keeps the params and the stages that finished
        _say(f"experiment not saved: `reasonrl repro` exited with {status}; after a fix, `reasonrl exp run` again "
             "(without -S: the params are already set) reruns what is left and saves it")
        return status
    name = save(root, plan, args.name, args.force, args.message)
    _say(f"experiment saved as {name}; its params and results are in the workspace, as `dvc exp run` leaves them "
         "(`dvc exp show` lists it)")
    return 0


def _plan(args: argparse.Namespace) -> Plan:
    try:
        return stale_plan(args.repo, args.targets)
    except dvc_adapter.dvc_error() as exc:
        raise ReasonrlError("targets", f"{exc}{near_targets(args.repo, args.targets)}",
                            "params files put back; nothing ran") from exc


def checked_overrides(root: str, sets: list[str]) -> dict[str, list[str]]:
    """params file (relative to root) -> its overrides, as `dvc exp run -S` groups them, each one parsed and tried
    on a copy of its file by DVC's own code; a ReasonrlError naming the -S and the key otherwise."""
    from hydra.errors import OverrideParseException

    refused = dvc_adapter.invalid_argument_error()
    by_file = dvc_adapter.path_overrides(sets)
    with tempfile.TemporaryDirectory() as tmp:
        for path, overrides in by_file.items():
            real = Path(root) / path
            if not real.is_file():
                raise ReasonrlError(f"-S {path}:{overrides[0]}", f"no params file {path}", "name one as "
                                    "<file>:<key>=<value>, relative to the repository root")
            copy = Path(tmp) / real.name
            shutil.copyfile(real, copy)
            for text in overrides:
                where = f"-S {text}" if path == "params.yaml" else f"-S {path}:{text}"
                try:
                    parsed, = dvc_adapter.hydra_overrides([text])
                except OverrideParseException as exc:
                    raise ReasonrlError(where, "not an override", "write key=value, +key=value or ~key, as for "
                                        "`dvc exp run -S`") from exc
                key = parsed.key_or_group
                if parsed.is_sweep_override():  # `dvc exp run` takes them only with --queue
                    raise ReasonrlError(where, f"a sweep of {key!r}", "one value per experiment here; quote a list "
                                        "value: -S 'key=[a,b]'")
                if not key:
                    raise ReasonrlError(where, "no key before '='")
                try:
                    dvc_adapter.apply_overrides(copy, [text])
                except refused as exc:
                    raise _key_error(where, key, path, real, parsed, exc.__cause__) from exc
    return by_file


def _key_error(where: str, key: str, path: str, real: Path, parsed, cause) -> ReasonrlError:
    keys = _dotted(dvc_adapter.load_params(real))
    if parsed.is_add():
        return ReasonrlError(where, f"{path} already has {key!r}", f"set it without the '+': -S {key}=...")
    if key not in keys:
        near = suggest(key, keys)
        fix = (f"did you mean {near!r}?" if near else None if parsed.is_delete()
               else f"add a new one with -S '+{parsed.input_line}'")
        return ReasonrlError(where, f"{path} has no param {key!r}", fix)
    return ReasonrlError(where, f"{key!r} in {path}: {str(cause).splitlines()[0] if cause else 'rejected'}")


def _dotted(node, prefix: str = "") -> list[str]:
    """Every key of a params mapping, dotted (rl, rl.lr, ...)."""
    if not isinstance(node, dict):
        return []
    return [k for key, value in node.items() for k in [prefix + str(key), *_dotted(value, f"{prefix}{key}.")]]


def check_name(root: str, name: str | None, force: bool) -> None:
    """The checks `exp save` makes of a name, made before the run rather than after it."""
    if not name:
        return
    try:
        taken = dvc_adapter.experiment_name_taken(root, name)
    except dvc_adapter.invalid_argument_error() as exc:
        raise ReasonrlError(f"--name {name}", "not a valid experiment name", "git's ref-name rules, no '/'") from exc
    if taken and not force:
        raise ReasonrlError(f"--name {name}", "an experiment of this commit has that name",
                            "choose another, or -f to replace it")


def write_overrides(root: str, overrides: dict[str, list[str]]) -> None:
    """`dvc exp run`'s new params (without Hydra composition, which this project does not use), written as a
    change of the changed values only where that can be done.

    DVC's writer keeps comments but rewrites the whole file: its merge turns every flow list into a block list
    (params.yaml went from 873 to about 1,400 lines for `-S method=rft`), and it unquotes the keys "off" and
    "on", which the stages' PyYAML (YAML 1.1) then reads as False and True. So the new values come from DVC's
    `apply_overrides` on a copy, and each changed scalar is replaced in the text where it stands; the result
    must read as DVC's result (DVC's parser) and change nothing else for PyYAML. Otherwise DVC's own text is
    written, provided PyYAML reads no other change into it, and an error is raised if it would.
    """
    for path, texts in overrides.items():
        real = Path(root) / path
        old = real.read_text(encoding="utf-8")
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / real.name
            copy.write_text(old, encoding="utf-8")
            dvc_adapter.apply_overrides(copy, texts)
            dvcs = copy.read_text(encoding="utf-8")
        if real.suffix.lower() not in (".yaml", ".yml"):
            real.write_text(dvcs, encoding="utf-8")
            continue
        new = _splice(old, _dvc_read(dvcs))
        if new is None:
            changed = {p for p, _ in _changes(_dvc_read(old), _dvc_read(dvcs))}
            other = {p for p, _ in _changes(_py_read(old), _py_read(dvcs))} - changed
            if other:
                raise ReasonrlError(f"-S {' -S '.join(texts)}", f"DVC's rewrite of {path} changes what PyYAML reads "
                                    f"at {', '.join(sorted('.'.join(map(str, p)) for p in other))}",
                                    f"set the values in {path} by hand, then `reasonrl exp run` without -S")
            new = dvcs
        real.write_text(new, encoding="utf-8")


def _dvc_read(text: str):
    return dvc_adapter.parse_yaml(text, "params")


def _py_read(text: str):
    import yaml

    return yaml.safe_load(text)


def _changes(old, new, at: tuple = ()) -> list[tuple[tuple, object]]:
    """(key path, new value) of every difference, at the deepest mapping both sides share."""
    if isinstance(old, dict) and isinstance(new, dict):
        return [c for key in {**old, **new} for c in _changes(old.get(key, _MISSING), new.get(key, _MISSING),
                                                              (*at, key))]
    return [] if old == new and type(old) is type(new) else [(at, new)]


_MISSING = object()


def _splice(old: str, want) -> str | None:
    """`old` with each changed scalar value replaced in place, or None when a change is not one scalar for another
    or the result does not read as `want` (DVC's parser) with only those values changed for PyYAML."""
    from ruamel.yaml import YAML

    tree = YAML().load(old)
    lines = old.splitlines(keepends=True)
    edits = []
    for path, value in _changes(_dvc_read(old), want):
        parent = tree
        for key in path[:-1]:
            parent = parent[key]
        if (value is _MISSING or not hasattr(parent, "lc") or path[-1] not in parent or isinstance(value, dict | list)
                or isinstance(parent[path[-1]], dict | list)):
            return None
        line, col = parent.lc.value(path[-1])
        end = _scalar_end(lines[line], col, parent.fa.flow_style())
        if end is None:
            return None
        edits.append((line, col, end, _emit(value)))
    for line, col, end, text in sorted(edits, reverse=True):
        after = lines[line][end:]
        gap = len(after) - len(after.lstrip(" "))
        if gap and after.lstrip(" ").startswith("#"):  # the comment keeps its column where the gap allows
            after = " " * max(1, gap - len(text) + end - col) + after.lstrip(" ")
        lines[line] = lines[line][:col] + text + after
    new = "".join(lines)
    expected = _changes(_py_read(old), _py_read(new))
    ok = _dvc_read(new) == want and {p for p, _ in expected} == {p for p, _ in _changes(_dvc_read(old), want)}
    return new if ok else None


def _scalar_end(line: str, col: int, flow: bool) -> int | None:
    """Where the one-line scalar starting at `col` ends (None for a multi-line or block scalar)."""
    rest = line[col:].rstrip("\n")
    if rest[:1] in ("'", '"'):
        quote, i = rest[0], 1
        while i < len(rest):
            if rest[i] == quote and not (quote == "'" and rest[i + 1:i + 2] == "'"):
                return col + i + 1
            i += 2 if (quote == "'" and rest[i:i + 2] == "''") or (quote == '"' and rest[i] == "\\") else 1
        return None
    if rest[:1] in ("|", ">", "") or rest[:1] in "[{&*!":
        return None
    stops = [i for i in (rest.find(" #"), *(rest.find(c) for c in (",]}" if flow else ""))) if i >= 0]
    return col + len(rest[:min(stops, default=len(rest))].rstrip())


def _emit(value) -> str:
    """A scalar as YAML that both DVC (1.2) and PyYAML (1.1) read as `value`."""
    import json

    plain = "null" if value is None else json.dumps(value) if isinstance(value, bool | int | float) else str(value)
    try:
        same = _dvc_read(f"v: {plain}\n")["v"] == value == _py_read(f"v: {plain}\n")["v"]
    except Exception:  # noqa: BLE001 (a string YAML reads as something else, or not at all: quote it)
        same = False
    return plain if same else json.dumps(value)


def put_back(root: str, before: dict[str, bytes]) -> None:
    for path, data in before.items():
        (Path(root) / path).write_bytes(data)


def save(root: str, plan: Plan, name: str | None, force: bool, message: str | None) -> str:
    """`dvc exp save` of the stages that ran (all of them if none ran, which then changes nothing); the name."""
    lockfile.install()
    return dvc_adapter.save_experiment(root, list(plan.stages), name, force, message)


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)
