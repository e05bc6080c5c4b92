"""Every use of DVC's Python code by reasonrl, in one module, against one DVC: SUPPORTED_DVC, pyproject.toml's pin.

DVC's public surface is its command line, `dvc.api` (reading files and params at a revision), `Repo`'s methods and
its file formats (dvc.yaml, dvc.lock, the run-cache). Where that does what the runner needs, it is used: dvc.lock
and the run-cache are read as the files they are (runner.plan), each stage runs as `dvc repro -s`, `Repo`'s methods
are called here; the rest is DVC's own code beneath it, because no public way plans a run without running it,
writes a lock entry faster, or forks a stage's command. A DVC upgrade that moves any of it breaks here, and
tests/test_dvc_adapter.py exercises each entry point against the installed DVC, failing with one line naming the
version and the entry point.
`check_version` stops `reasonrl repro` and `reasonrl exp run` at their start on any other DVC version, pointing to
plain `dvc repro` (`dvc exp run`), which always works, one stage at a time.

DVC is imported inside each function, never at this module's top: the runner forks warm interpreters and its
console script imports only the chosen command (docs/performance.md), so importing this module must not load DVC.
Public: the CLI, `dvc.exceptions`, `Repo` and its methods. Internal: undocumented module-level names. Private:
underscore names. The entry points, each with what it relies on and why:

- `cli_main`: `dvc.cli.main` (public: the `dvc` command itself); each stage's `dvc repro -s` runs it in the
  process the runner patched (runner.parallel).
- `dvc_error`: `dvc.exceptions.DvcException` (public); the errors DVC reports to a user, one line each.
- `invalid_argument_error`: `dvc.exceptions.InvalidArgumentError` (public); a -S DVC refuses, a bad experiment name.
- `yaml_corrupted_error`: `dvc.utils.serialize._yaml.YAMLFileCorruptedError` (private); a lock read while torn.
- `stage_failed_error`: `dvc.stage.exceptions.StageCmdFailedError` (internal); a forked stage's failure, raised
  as DVC's own `_run` raises it.
- `parse_yaml`: `dvc.utils.serialize._yaml.parse_yaml` (private); DVC's YAML 1.2 reading of dvc.lock and
  params.yaml (`lr: 3e-06` a number), so that the runner reads what DVC reads.
- `dump_yaml`: `dvc.utils.serialize._yaml._dump` (private); DVC's lock writer, for entries spliced byte for byte.
- `load_data`: `dvc.utils.serialize._common._load_data` (private); DVC's params loader with another parser.
- `lock_entries_schema`: `dvc.schema.LOCKFILE_STAGES_SCHEMA` (internal); a changed lock entry checked alone.
- `lock_schema`: `dvc.dvcfile.Lockfile.SCHEMA` (internal); tells a lock's schema check from another file's.
- `is_local_fs`: `dvc.fs.LocalFileSystem` (internal); the workspace's files, whose parse is kept beside them.
- `check_lock_internals`: the three private YAML helpers above, imported at once so that a DVC that moved them
  fails before any lock is written.
- `LOCK_READER`, `SCHEMA_CHECK`, `YAML_WRITER`, `PARAMS_LOADERS`: `dvc.utils.strictyaml.parse_yaml` and `.validate`,
  `dvc.dvcfile.modify_yaml`, `dvc.utils.serialize.LOADERS` (internal): replaced by runner.lockfile, whose lock
  update and kept parses save seconds per stage; DVC has no hook for any of them.
- `PARAMS_DPATH`: `dvc.dependency.param.dpath` (internal): replaced by runner.params_lookup's faster lookup.
- `STAGE_COMMAND`: `dvc.stage.run._run` (private): replaced by runner.warm, which forks a stage's command.
- `REPRO_MODULES`: the modules `dvc repro -s` imports, which a warm interpreter imports before it forks.
- `stage_env`: `dvc.utils.fix_env` (internal); the environment DVC gives a stage's command.
- `find_root`: `Repo.find_root` (public).
- `planned_stages`: `Repo.index.graph`, `Repo.lock`, `Repo.stage_cache`, `Stage.changed` (public) and the
  planner of `dvc repro`, `dvc.repo.reproduce.collect_stages`, `get_active_graph` and `plan_repro` (internal), with
  `dvc.rwlock` (internal) skipped where that is DVC's behaviour: DVC documents no planner, and `dvc repro --dry`
  prints text, not the stale closure and the graph the runner schedules from. DVC's order of a target's stages varies
  from process to process; the runner takes them in DVC's order of the whole pipeline, which does not (`_planned`).
- `pipeline_order`: the same planner, for every stage and without `Stage.changed` (benchmarks/schedule.py).
- `stage_deps`: `Repo.index.stages` and each stage's deps (public); scripts/relock.py.
- `load_yaml_file`, `dump_yaml_file`: `dvc.utils.serialize.load_yaml` and `dump_yaml` (internal); scripts/relock.py
  writes dvc.lock as DVC does.
- `path_overrides`, `hydra_overrides`, `apply_overrides`: `dvc.utils.cli_parse.to_path_overrides`,
  `dvc.utils.hydra.to_hydra_overrides` and `apply_overrides` (internal): `dvc exp run -S` exactly.
- `load_params`: `dvc.utils.serialize.LOADERS` (internal); a params file as DVC reads it, to name a missing key.
- `experiment_name_taken`: `dvc.repo.experiments.refs.ExpRefInfo` and `.utils.check_ref_format` (internal), the
  checks `dvc exp save` makes of a name, made before the run rather than after it.
- `save_experiment`: `Repo.experiments.save` and `get_exact_name` (public methods), with
  `dvc.stage.utils._get_stage_files` (private) for the new files `dvc exp run` would include.
"""

from __future__ import annotations

import contextlib
import importlib
import os
from typing import Any

from ..errors import ReasonrlError

SUPPORTED_DVC = "3.67.1"  # pyproject.toml pins the same (tests/test_dvc_adapter.py)


# ---- the version check ---------------------------------------------------------------------------------


def installed_version() -> str | None:
    """The installed DVC's version, from its package metadata (no import of DVC); None where none is installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("dvc")
    except PackageNotFoundError:
        return None


def check_version(command: str) -> None:
    """Refuse to start `reasonrl <command>` on a DVC this module was not tested against: its internals may have
    moved, and a moved one could fail mid-run or write a different dvc.lock. Plain `dvc <command>` always works."""
    found = installed_version()
    if found is None:
        raise ReasonrlError("dvc", "not installed", f"pip install dvc=={SUPPORTED_DVC}")
    if found != SUPPORTED_DVC:
        raise ReasonrlError(f"dvc {found}", f"`reasonrl {command}` is tested against dvc {SUPPORTED_DVC} only: it "
                            "uses DVC's internals", f"pip install dvc=={SUPPORTED_DVC}, or run plain `dvc {command}`, "
                            "which always works, one stage at a time")


# ---- the command line and errors -----------------------------------------------------------------------


def cli_main(argv: list[str]) -> int:
    """`dvc <argv>` in this process (with whatever the runner patched), its exit status."""
    from dvc.cli import main

    return main(argv)


def dvc_error() -> type[Exception]:
    from dvc.exceptions import DvcException

    return DvcException


def invalid_argument_error() -> type[Exception]:
    from dvc.exceptions import InvalidArgumentError

    return InvalidArgumentError


def yaml_corrupted_error() -> type[Exception]:
    from dvc.utils.serialize._yaml import YAMLFileCorruptedError

    return YAMLFileCorruptedError


def stage_failed_error() -> type[Exception]:
    """Raised as `StageCmdFailedError(cmd, returncode)`."""
    from dvc.stage.exceptions import StageCmdFailedError

    return StageCmdFailedError


# ---- DVC's YAML, as DVC reads and writes it --------------------------------------------------------------
# Each function imports at call time: a test that replaces DVC's function is seen, as DVC's own callers see it.


def parse_yaml(text: str, path: str) -> Any:
    from dvc.utils.serialize._yaml import parse_yaml

    return parse_yaml(text, path)


def dump_yaml(data: Any, stream: Any) -> None:
    from dvc.utils.serialize._yaml import _dump

    _dump(data, stream)


def load_data(path: str, parser: Any, fs: Any = None, **kwargs: Any) -> Any:
    """DVC's reading of a file (its errors: missing, a directory, not parseable) with `parser(text, path)`."""
    from dvc.utils.serialize._common import _load_data

    return _load_data(path, parser=parser, fs=fs, **kwargs)


def lock_entries_schema() -> Any:
    from dvc.schema import LOCKFILE_STAGES_SCHEMA

    return LOCKFILE_STAGES_SCHEMA


def lock_schema() -> Any:
    from dvc.dvcfile import Lockfile

    return Lockfile.SCHEMA


def is_local_fs(fs: Any) -> bool:
    """Whether DVC reads through the workspace's own files (not a git revision's or DVC's cache view: those
    declare protocol "local" too)."""
    from dvc.fs import LocalFileSystem

    return isinstance(fs, LocalFileSystem)


def check_lock_internals() -> None:
    from dvc.utils.serialize._common import _load_data  # noqa: F401
    from dvc.utils.serialize._yaml import _dump, parse_yaml  # noqa: F401


def load_yaml_file(path: str) -> Any:
    from dvc.utils.serialize import load_yaml

    return load_yaml(path)


def dump_yaml_file(path: str, data: Any) -> None:
    from dvc.utils.serialize import dump_yaml

    dump_yaml(path, data)


# ---- what the runner replaces inside DVC ---------------------------------------------------------------


class Patchable:
    """One attribute of a DVC module that the runner reads and replaces, looked up at each `get` and `set`: what
    another patch or a test put there is what the runner wraps and puts back."""

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def get(self) -> Any:
        return getattr(importlib.import_module(self.module), self.name)

    def set(self, value: Any) -> None:
        setattr(importlib.import_module(self.module), self.name, value)

    def __repr__(self) -> str:
        return f"{self.module}.{self.name}"


LOCK_READER = Patchable("dvc.utils.strictyaml", "parse_yaml")  # (text, path, typ="safe"): strictyaml.load's parse
SCHEMA_CHECK = Patchable("dvc.utils.strictyaml", "validate")  # (data, schema, text=, path=, rev=) after that parse
YAML_WRITER = Patchable("dvc.dvcfile", "modify_yaml")  # (path, fs=None): the context Lockfile.dump_stages writes in
PARAMS_LOADERS = Patchable("dvc.utils.serialize", "LOADERS")  # suffix -> loader(path, fs=, **kwargs) (a defaultdict)
PARAMS_DPATH = Patchable("dvc.dependency.param", "dpath")  # the dpath module read_param_file looks keys up with
STAGE_COMMAND = Patchable("dvc.stage.run", "_run")  # (executable, cmd, **kwargs with cwd and env): cmd_run's runner

# Listed from sys.modules after an up-to-date and a forced `dvc repro -s` on this project's DAG: its CLI imports
# them lazily, so a zygote that imports them first spares each forked stage the time.
REPRO_MODULES = ("dvc.cli.parser", "dvc.repo.reproduce", "dvc.repo.stage", "dvc.repo.metrics", "dvc.repo.params",
                 "dvc.repo.plots", "dvc.repo.artifacts", "dvc.repo.datasets", "dvc.repo.open_repo", "dvc.rwlock",
                 "dvc.scm", "dvc.cachemgr", "dvc.data_cloud", "dvc.analytics", "dvc.compare", "dvc.stage.cache",
                 "dvc.stage.run", "dvc.parsing.interpolate", "dvc.dvcfile", "dvc.lock", "dvc_data.hashfile.db.local",
                 "scmrepo.git", "scmrepo.git.backend.pygit2", "scmrepo.noscm", "pygit2", "dulwich.repo",
                 "dulwich.ignore", "dulwich.worktree", "dulwich.index", "dulwich.filters", "dulwich.patch",
                 "scmrepo.git.backend.pygit2.filter", "dvc.dirs", "ruamel.yaml", "pyparsing", "platformdirs",
                 "flatten_dict", "dvc_render", "configobj", "fsspec.implementations.memory")


def stage_env(env: dict[str, str] | None = None) -> dict[str, str]:
    from dvc.utils import fix_env

    return fix_env(env)


# ---- the pipeline ---------------------------------------------------------------------------------------


def find_root(repo: str | None) -> str:
    from dvc.repo import Repo

    return Repo.find_root(repo)


def _planned(dvc_repo: Any, targets: list[str]) -> tuple[Any, list[Any]]:
    """(the graph, edges stage -> upstream stage and none out of a frozen one; the stages the targets need in
    `dvc repro`'s order for the whole pipeline, upstream first). DVC walks a target's part of the graph through a
    networkx view that, under half the graph, iterates a set of stages: its order followed Python's string hashing
    and changed from process to process (`reasonrl repro --dry` listed the five hop bases in another order on each
    call, and a run started them in yet another). The whole graph is walked in its own order, the same in every
    process, and keeps its topological order when cut down to the stages needed."""
    from dvc.dvcfile import PROJECT_FILE
    from dvc.repo.reproduce import collect_stages, get_active_graph, plan_repro

    graph = get_active_graph(dvc_repo.index.graph)
    needed = set(plan_repro(graph, collect_stages(dvc_repo, targets or [PROJECT_FILE])))
    return graph, [s for s in plan_repro(graph) if s in needed]


def planned_stages(root: str, targets: list[str]) -> tuple[str, list[tuple[str, list[str], bool, str]]]:
    """(the run-cache directory, [(stage, upstream stages, changed, dvc.yaml path)] for every stage the targets
    need, upstream first), under DVC's repo lock. As in `dvc repro`, the stages upstream of a frozen stage are not
    needed."""
    from dvc.repo import Repo

    with contextlib.chdir(root), Repo(root) as dvc_repo, dvc_repo.lock, _rwlocks_unwatched(dvc_repo):
        graph, order = _planned(dvc_repo, targets)
        stages = [(s.addressing, [u.addressing for u in graph.successors(s)], s.changed(), str(s.dvcfile.path))
                  for s in order]
        return str(dvc_repo.stage_cache.cache_dir), stages


def pipeline_order(root: str) -> dict[str, list[str]]:
    """Every stage of the pipeline -> its upstream stages, in `dvc repro`'s order; what changed is not asked."""
    from dvc.repo import Repo

    with contextlib.chdir(root), Repo(root) as dvc_repo:
        graph, order = _planned(dvc_repo, [])
        return {s.addressing: [u.addressing for u in graph.successors(s)] for s in order}


@contextlib.contextmanager
def _rwlocks_unwatched(dvc_repo: Any) -> Any:
    """DVC's per-stage rwlock (`.dvc/tmp/rwlock`, a JSON file read, checked and rewritten on entry to and exit from each
    rwlocked call, `Stage.changed` and the checks inside it: a quarter of a planner pass at 439 stages,
    docs/performance.md, "The planner's pass: DVC's rwlock") skipped for the pass, where that is exactly DVC's
    behaviour. An entry is only ever added under the repo lock (`rwlocked` asserts it), which the planner holds
    throughout, so no path can become held for writing during the pass; entries dropped meanwhile (a command ending)
    cannot refuse a read. With no path held for writing at the start, then, no read here is refused, and the read
    locks the planner would take and drop are seen by no other process. Any write entry (another command's, live or
    not), or a file that DVC's schema refuses: DVC's own rwlock, its errors and its clean-up."""
    import json

    import dvc.rwlock as rwlock

    try:
        with open(os.path.join(dvc_repo.tmp_dir, rwlock.RWLOCK_FILE), encoding="utf-8") as f:
            held = rwlock.SCHEMA(json.load(f))["write"]
    except FileNotFoundError:
        held = None
    except Exception:  # noqa: BLE001  (unreadable or off its schema: DVC's own reading says what is wrong)
        held = True
    original = rwlock.rwlock
    if not held:
        rwlock.rwlock = lambda *args, **kwargs: contextlib.nullcontext()
    try:
        yield
    finally:
        rwlock.rwlock = original


def stage_deps(root: str) -> dict[str, list[str]]:
    """Every stage dvc.yaml defines -> the paths of its deps as dvc.yaml writes them (params left out)."""
    from dvc.repo import Repo

    with Repo(root) as repo:
        return {s.addressing: [d.def_path for d in s.deps if not hasattr(d, "params")] for s in repo.index.stages}


# ---- experiments ----------------------------------------------------------------------------------------


def path_overrides(sets: list[str]) -> dict[str, list[str]]:
    """`dvc exp run -S`'s grouping: params file -> its overrides (params.yaml where none is named)."""
    from dvc.utils.cli_parse import to_path_overrides

    return to_path_overrides(sets)


def hydra_overrides(texts: list[str]) -> list[Any]:
    """Hydra's parse of each override (raises hydra's OverrideParseException)."""
    from dvc.utils.hydra import to_hydra_overrides

    return to_hydra_overrides(texts)


def apply_overrides(path: Any, texts: list[str]) -> None:
    """The overrides written into the params file `path` by DVC's round-trip writer, as `dvc exp run -S` writes
    them (invalid_argument_error for one it refuses, Hydra's reason as its __cause__)."""
    from dvc.utils.hydra import apply_overrides

    apply_overrides(path, texts)


def load_params(path: Any) -> Any:
    from dvc.utils.serialize import LOADERS

    return LOADERS[path.suffix.lower()](str(path))


def experiment_name_taken(root: str, name: str) -> bool:
    """Whether an experiment of HEAD has `name` (invalid_argument_error where git's ref rules refuse it)."""
    from dvc.repo import Repo
    from dvc.repo.experiments.refs import ExpRefInfo
    from dvc.repo.experiments.utils import check_ref_format

    with Repo(root) as repo:
        ref = ExpRefInfo(repo.scm.get_rev(), name)
        check_ref_format(repo.scm, ref)
        return bool(repo.scm.get_ref(str(ref)))


def save_experiment(root: str, stages: list[str], name: str | None, force: bool, message: str | None) -> str:
    """`dvc exp save` of `stages` (all of them if none), with their outputs that git does not track yet as
    `dvc exp run` includes them; the experiment's name."""
    from dvc.repo import Repo
    from dvc.stage.utils import _get_stage_files

    with contextlib.chdir(root), Repo(root) as repo:
        collected = [stage for name_ in stages for stage in repo.stage.collect(name_)]
        paths = {os.path.normpath(p) for stage in collected for p in _get_stage_files(stage)}
        untracked = [f for f in repo.scm.untracked_files()
                     if any(f == p or f.startswith(p + os.sep) for p in paths)]
        rev = repo.experiments.save(targets=stages or None, name=name, force=force,
                                    include_untracked=untracked, message=message)
        return repo.experiments.get_exact_name([rev])[rev] or rev[:7]
