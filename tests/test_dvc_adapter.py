"""DVC behind one adapter (reasonrl/runner/dvc_adapter.py, issue 71).

- The scan: no module of the package, the stage scripts, scripts/ or benchmarks/ but the adapter reaches DVC's
  Python code (an import, an importlib call naming a DVC module, a `python -c` code string importing one, or a
  string naming a DVC module, as a preload list does). Tests may import DVC themselves.
- One test per entry point, against the installed DVC: each does what the runner relies on it for, and a failure is
  one line, `dvc <version>: entry point <name> moved: <what>`. The docstring's list, the module's public names and
  the tests here are the same set.
- The version check: on an untested DVC, `reasonrl repro` and `reasonrl exp run` stop at once with one line that
  points to plain `dvc repro` (`dvc exp run`).
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib.util
import io
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from test_imports import _docstrings

from reasonrl.runner import dvc_adapter

ROOT = Path(__file__).resolve().parents[1]
ADAPTER = "reasonrl/runner/dvc_adapter.py"
SCANNED = ("reasonrl", "stages", "scripts", "benchmarks")
VERSION_CHECK = {"SUPPORTED_DVC", "installed_version", "check_version"}  # tested below, not entry points


# ---- the scan --------------------------------------------------------------------------------------------

_DVC_NAME = re.compile(r"(dvc|dvc_\w+)(\.\w+)*")  # DVC and its own libraries (dvc_data, dvc_render, ...)
_DVC_CODE = re.compile(r"(^|[\s;])(from\s+(dvc|dvc_\w+)(\.\w+)*\s+import|import\s+(dvc|dvc_\w+)\b)")
PIPELINE_FILES = {"dvc.yaml", "dvc.lock"}  # file names, though DVC has a module dvc.lock too


def _names_dvc(text: str) -> bool:
    return bool(_DVC_NAME.fullmatch(text))


@functools.cache
def _dvc_module(text: str) -> bool:
    """Whether `text` is a dotted name that starts with a module of DVC's (`dvc.stage.run._run` does)."""
    if not _names_dvc(text) or "." not in text or text in PIPELINE_FILES:
        return False
    parts = text.split(".")
    for i in range(len(parts), 1, -1):
        with contextlib.suppress(ImportError, ValueError, AttributeError):
            if importlib.util.find_spec(".".join(parts[:i])) is not None:
                return True
    return False


def dvc_uses(path: Path) -> list[str]:
    """Each place `path`'s code reaches DVC's Python code: `import dvc...`, `from dvc... import`, a call of
    importlib (or `__import__`) with a DVC module's name, a code string that imports DVC (`python -c ...`), a
    string naming a DVC module; as `line: what`. Relative imports are the package's own; docstrings are prose."""
    tree = ast.parse(path.read_text(), str(path))
    docs = _docstrings(tree)
    importlib_names = {"__import__"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            importlib_names |= {(a.asname or a.name).split(".")[0] for a in node.names
                                if a.name.split(".")[0] == "importlib"}
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "importlib":
            importlib_names |= {a.asname or a.name for a in node.names}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names if _names_dvc(a.name.split(".")[0])]
        elif isinstance(node, ast.ImportFrom) and not node.level and _names_dvc((node.module or "").split(".")[0]):
            found.append(f"{node.lineno}: from {node.module} import")
        elif isinstance(node, ast.Call):
            func = node.func
            while isinstance(func, ast.Attribute):
                func = func.value
            args = [*node.args, *(k.value for k in node.keywords)]
            if isinstance(func, ast.Name) and func.id in importlib_names and any(
                    isinstance(a, ast.Constant) and isinstance(a.value, str) and _names_dvc(a.value) for a in args):
                found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            if _DVC_CODE.search(node.value) or _dvc_module(node.value):
                found.append(f"{node.lineno}: {node.value!r}")
    return found


def scanned_files() -> list[Path]:
    return sorted(p for d in SCANNED for p in (ROOT / d).rglob("*.py"))


def test_only_the_adapter_reaches_dvc():
    uses = {p.relative_to(ROOT).as_posix(): u for p in scanned_files() if (u := dvc_uses(p))}
    assert ADAPTER in uses, "the scan no longer sees the adapter's own imports"
    others = {path: found for path, found in uses.items() if path != ADAPTER}
    assert not others, f"DVC reached outside {ADAPTER}: {others}"


def test_the_scan_sees_every_form_and_lets_prose_files_and_the_cli_through(tmp_path):
    path = tmp_path / "mod.py"
    forms = {
        "import dvc.repo\n": True,
        "import dvc_data.hashfile as h\n": True,
        "def f():\n    from dvc.utils.serialize._yaml import parse_yaml\n": True,
        "import importlib\nm = importlib.import_module('dvc.rwlock')\n": True,
        "from importlib import import_module as im\nm = im('dvc')\n": True,
        "from importlib.metadata import version\nv = version('dvc')\n": True,
        "m = __import__('dvc.cli')\n": True,
        "CODE = 'import sys; from dvc.cli import main; sys.exit(main())'\n": True,
        "PRELOAD = ('json', 'dvc.repo.reproduce')\n": True,
        "TARGET = 'dvc.stage.run._run'\n": True,
        '"""How DVC runs it: `from dvc.cli import main`, dvc.repo.reproduce."""\nx = 1\n': False,
        "from . import dvc_adapter\nfrom .dvc_adapter import cli_main\n": False,
        "import reasonrl.runner.dvc_adapter\n": False,
        "LOCK, PIPELINE = 'dvc.lock', 'dvc.yaml'\n": False,
        "import subprocess\nsubprocess.run(['dvc', 'repro', '-s', 'x'])\n": False,
        "import importlib\nm = importlib.import_module('reasonrl.runner.dvc_adapter')\n": False,
        "HELP = 'stages, as for `dvc repro`: dvc exp run imports nothing'\n": False,
    }
    for source, reaches in forms.items():
        path.write_text(source)
        assert bool(dvc_uses(path)) == reaches, source


# ---- one test per entry point ----------------------------------------------------------------------------

EXERCISED: dict[str, object] = {}


@contextlib.contextmanager
def entry_point(name: str):
    """Any failure inside as one line: what the runner relies on `name` for, the installed DVC no longer does."""
    try:
        yield
    except (Exception, pytest.fail.Exception) as exc:  # noqa: BLE001  (whatever DVC does now instead is the news)
        what = " ".join(f"{type(exc).__name__}: {exc}".split())[:400]
        pytest.fail(f"dvc {dvc_adapter.installed_version()}: entry point {name} moved: {what}", pytrace=False)


def exercises(name: str):
    """Register the decorated test as `name`'s, run under `entry_point(name)`."""
    def wrap(fn):
        EXERCISED[name] = fn

        @functools.wraps(fn)
        def test(*args, **kwargs):
            with entry_point(name):
                fn(*args, **kwargs)
        return test
    return wrap


def listed_entry_points() -> set[str]:
    """The names the adapter's docstring lists (`- `name`, `name`: what it relies on`)."""
    lines = [line for line in dvc_adapter.__doc__.splitlines() if line.startswith("- `")]
    return {name for line in lines for name in re.findall(r"`(\w+)`", line.split(":", 1)[0])}


def public_names() -> set[str]:
    tree = ast.parse((ROOT / ADAPTER).read_text())
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    names |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    return {n for n in names if not n.startswith("_")} - VERSION_CHECK


def test_every_entry_point_is_listed_and_exercised():
    assert listed_entry_points() == public_names(), "the adapter's docstring lists every entry point, and only those"
    assert set(EXERCISED) == public_names(), "one test per entry point"


def test_a_moved_entry_point_fails_with_one_line_naming_the_version_and_it():
    with pytest.raises(pytest.fail.Exception) as failed, entry_point("parse_yaml"):
        raise AttributeError("module 'dvc.utils.serialize._yaml' has no attribute\n'parse_yaml'")
    assert str(failed.value) == (f"dvc {dvc_adapter.installed_version()}: entry point parse_yaml moved: "
                                 "AttributeError: module 'dvc.utils.serialize._yaml' has no attribute 'parse_yaml'")
    with pytest.raises(pytest.fail.Exception, match=r"^dvc \S+: entry point x moved: AssertionError: assert 1 == 2$"), \
            entry_point("x"):
        assert 1 == 2


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory) -> Path:
    """A git and DVC repository of two stages, `a` (a dep, a param) and `b` after it (its output kept in git, as
    reports/ is), committed, never run."""
    root = tmp_path_factory.mktemp("adapter") / "repo"
    root.mkdir()
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    (root / "params.yaml").write_text("x: 1  # kept\nlr: 3.0e-06\n")
    (root / "in.txt").write_text("in\n")
    (root / "dvc.yaml").write_text(yaml.safe_dump({"stages": {
        "a": {"cmd": "cp in.txt a.txt", "deps": ["in.txt"], "params": ["x"], "outs": ["a.txt"]},
        "b": {"cmd": "cp a.txt b.txt", "deps": ["a.txt"], "outs": [{"b.txt": {"cache": False}}]}}}))
    for cmd in (["git", "init", "-q"], ["dvc", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "p"]):
        subprocess.run(cmd, cwd=root, env=env, check=True, capture_output=True)
    return root


@pytest.fixture
def clone(pipeline, tmp_path, monkeypatch) -> Path:
    """A clone of `pipeline` whose stages ran (dvc.lock new, not in git), for a test that records experiments."""
    for key, value in {"DVC_NO_ANALYTICS": "1", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                       "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}.items():
        monkeypatch.setenv(key, value)
    subprocess.run(["git", "clone", "-q", str(pipeline), str(tmp_path / "clone")], check=True, capture_output=True)
    subprocess.run(["dvc", "repro", "-q"], cwd=tmp_path / "clone", check=True, capture_output=True)
    return tmp_path / "clone"


def written(pipeline: Path, monkeypatch) -> list[tuple[str, object, dict]]:
    """(path, filesystem, data) of each lock update DVC makes when it records stage `a` of `pipeline`, with
    YAML_WRITER replaced by a recorder that writes nothing."""
    from dvc.repo import Repo

    seen = []

    @contextlib.contextmanager
    def writer(path, fs=None):
        data = {}
        yield data
        seen.append((os.fspath(path), fs, data))

    monkeypatch.chdir(pipeline)
    original = dvc_adapter.YAML_WRITER.get()
    dvc_adapter.YAML_WRITER.set(writer)
    try:
        with Repo(str(pipeline)) as repo:
            stage, = repo.stage.collect("a")
            stage.dvcfile._lockfile.dump_stages([stage])
    finally:
        dvc_adapter.YAML_WRITER.set(original)
    assert dvc_adapter.YAML_WRITER.get() is original
    return seen


@exercises("cli_main")
def test_cli_main_is_dvcs_command_in_the_runners_stage_process():
    from reasonrl.runner.parallel import _DVC_MAIN

    out = subprocess.run([sys.executable, "-c", _DVC_MAIN, "--version"], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT), "DVC_NO_ANALYTICS": "1"})
    assert (out.returncode, out.stdout.strip()) == (0, dvc_adapter.installed_version()), out.stderr[-2000:]


@exercises("dvc_error")
def test_dvc_error_is_what_dvc_raises_outside_a_repository(tmp_path):
    with pytest.raises(dvc_adapter.dvc_error(), match="not inside of a DVC repository"):
        dvc_adapter.find_root(str(tmp_path))


@exercises("invalid_argument_error")
def test_invalid_argument_error_is_a_dvc_error():
    assert issubclass(dvc_adapter.invalid_argument_error(), dvc_adapter.dvc_error())


@exercises("yaml_corrupted_error")
def test_yaml_corrupted_error_is_raised_for_a_torn_file():
    with pytest.raises(dvc_adapter.yaml_corrupted_error()):
        dvc_adapter.parse_yaml("stages: {a: [\n", "dvc.lock")


@exercises("stage_failed_error")
def test_stage_failed_error_is_what_dvcs_own_command_runner_raises(tmp_path):
    failed = dvc_adapter.stage_failed_error()
    assert issubclass(failed, dvc_adapter.dvc_error()) and "exit 3" in str(failed("exit 3", 3))
    with pytest.raises(failed):
        dvc_adapter.STAGE_COMMAND.get()("/bin/sh", "exit 3", cwd=str(tmp_path), env=dict(os.environ))


@exercises("parse_yaml")
def test_parse_yaml_reads_yaml_1_2():
    data = dvc_adapter.parse_yaml("lr: 3e-06\nname: 'off'\n", "params.yaml")
    assert data == {"lr": 3e-06, "name": "off"}  # YAML 1.2: a number, where PyYAML reads a string


@exercises("dump_yaml")
def test_dump_yaml_writes_a_lock_entry_as_dvc_does():
    buf = io.StringIO()
    dvc_adapter.dump_yaml({"schema": "2.0", "stages": {"a": {"cmd": "x", "outs": [{"path": "o", "md5": "1"}]}}}, buf)
    assert buf.getvalue() == "schema: '2.0'\nstages:\n  a:\n    cmd: x\n    outs:\n    - path: o\n      md5: '1'\n"


@exercises("load_data")
def test_load_data_reads_a_file_with_the_given_parser_and_dvcs_errors(tmp_path):
    (tmp_path / "p.yaml").write_text("a: 1\n")
    seen = []
    assert dvc_adapter.load_data(str(tmp_path / "p.yaml"), parser=lambda text, path: seen.append(path) or {"t": text}) \
        == {"t": "a: 1\n"}
    assert seen == [str(tmp_path / "p.yaml")]
    with pytest.raises(FileNotFoundError):  # which DVC's params reader reports as a missing params file
        dvc_adapter.load_data(str(tmp_path / "missing.yaml"), parser=dvc_adapter.parse_yaml)


@exercises("lock_entries_schema")
def test_lock_entries_schema_checks_each_entry():
    import voluptuous as vol

    schema = vol.Schema(dvc_adapter.lock_entries_schema())
    schema({"a": {"cmd": "x", "outs": [{"path": "o", "hash": "md5", "md5": "d41d8cd98f00b204e9800998ecf8427e",
                                        "size": 0}]}})
    with pytest.raises(vol.Invalid):
        schema({"a": {"cmd": "x", "outz": []}})


@exercises("lock_schema")
def test_lock_schema_is_what_dvc_checks_a_lock_with(tmp_path):
    from dvc.utils import strictyaml

    (tmp_path / "dvc.lock").write_text("schema: '2.0'\nstages:\n  a:\n    cmd: x\n")
    seen = []
    original = dvc_adapter.SCHEMA_CHECK.get()
    dvc_adapter.SCHEMA_CHECK.set(lambda data, schema, **kw: seen.append(schema) or original(data, schema, **kw))
    try:
        strictyaml.load(str(tmp_path / "dvc.lock"), dvc_adapter.lock_schema())
    finally:
        dvc_adapter.SCHEMA_CHECK.set(original)
    assert seen == [dvc_adapter.lock_schema()]
    (tmp_path / "dvc.lock").write_text("schema: '2.0'\nstages:\n  a:\n    kmd: x\n")
    with pytest.raises(dvc_adapter.dvc_error()):
        strictyaml.load(str(tmp_path / "dvc.lock"), dvc_adapter.lock_schema())


@exercises("is_local_fs")
def test_is_local_fs_is_the_workspaces_filesystem_not_a_revisions(pipeline, monkeypatch):
    from dvc.fs import GitFileSystem
    from dvc.repo import Repo

    (_, fs, _), = written(pipeline, monkeypatch)
    assert dvc_adapter.is_local_fs(fs)
    with Repo(str(pipeline)) as repo:
        revision = GitFileSystem(scm=repo.scm, rev="HEAD")
    assert revision.protocol == "local" and not dvc_adapter.is_local_fs(revision)


@exercises("check_lock_internals")
def test_check_lock_internals_imports():
    dvc_adapter.check_lock_internals()


@exercises("LOCK_READER")
def test_lock_reader_is_how_dvcs_yaml_loader_parses(tmp_path):
    from dvc.utils import strictyaml

    (tmp_path / "dvc.lock").write_text("schema: '2.0'\n")
    seen = []
    original = dvc_adapter.LOCK_READER.get()
    dvc_adapter.LOCK_READER.set(lambda text, path, typ="safe": seen.append((text, path, typ)) or {"parsed": 1})
    try:
        data, text = strictyaml.load(str(tmp_path / "dvc.lock"))
    finally:
        dvc_adapter.LOCK_READER.set(original)
    assert dvc_adapter.LOCK_READER.get() is original and data == {"parsed": 1}
    assert seen == [("schema: '2.0'\n", str(tmp_path / "dvc.lock"), "safe")]


@exercises("SCHEMA_CHECK")
def test_schema_check_gets_what_the_runners_check_reads(tmp_path):
    from dvc.utils import strictyaml

    (tmp_path / "dvc.lock").write_text("schema: '2.0'\n")
    seen = []
    original = dvc_adapter.SCHEMA_CHECK.get()
    dvc_adapter.SCHEMA_CHECK.set(lambda data, schema, text=None, path=None, rev=None: seen.append((data, text, path)))
    try:
        strictyaml.load(str(tmp_path / "dvc.lock"), dvc_adapter.lock_schema())
    finally:
        dvc_adapter.SCHEMA_CHECK.set(original)
    assert dvc_adapter.SCHEMA_CHECK.get() is original
    (data, text, path), = seen
    assert type(data) is dict and text == "schema: '2.0'\n" and path is not None


@exercises("YAML_WRITER")
def test_yaml_writer_is_what_dvc_writes_a_lock_entry_in(pipeline, monkeypatch):
    (path, _, data), = written(pipeline, monkeypatch)
    assert path == str(pipeline / "dvc.lock") and data["stages"]["a"]["cmd"] == "cp in.txt a.txt"
    assert not (pipeline / "dvc.lock").exists()


@exercises("PARAMS_LOADERS")
def test_params_loaders_read_a_stages_params(tmp_path, monkeypatch):
    from dvc.dependency.param import read_param_file
    from dvc.fs import LocalFileSystem

    (tmp_path / "params.yaml").write_text("x: 1\n")
    seen = []
    loaders = dvc_adapter.PARAMS_LOADERS.get()
    monkeypatch.setitem(loaders, ".yaml", lambda path, fs=None, **kw: seen.append(path) or {"x": 2})
    assert read_param_file(LocalFileSystem(), str(tmp_path / "params.yaml"), ["x"], flatten=True) == {"x": 2}
    assert seen == [str(tmp_path / "params.yaml")]


@exercises("PARAMS_DPATH")
def test_params_dpath_is_what_dvc_looks_a_key_up_with(tmp_path):
    from dvc.dependency.param import read_param_file
    from dvc.fs import LocalFileSystem

    (tmp_path / "params.yaml").write_text("rl: {lr: 0.1}\n")
    original, seen = dvc_adapter.PARAMS_DPATH.get(), []

    class Spy:
        def get(self, obj, glob, separator="/", **kwargs):
            seen.append(glob)
            return original.get(obj, glob, separator=separator, **kwargs)

        def __getattr__(self, name):
            return getattr(original, name)

    dvc_adapter.PARAMS_DPATH.set(Spy())
    try:
        values = read_param_file(LocalFileSystem(), str(tmp_path / "params.yaml"), ["rl.lr"], flatten=True)
    finally:
        dvc_adapter.PARAMS_DPATH.set(original)
    assert values == {"rl.lr": 0.1} and seen == ["rl.lr"]


@exercises("STAGE_COMMAND")
def test_stage_command_is_how_dvc_runs_a_stages_command(pipeline, monkeypatch):
    from dvc.repo import Repo
    from dvc.stage.run import cmd_run

    seen = []
    monkeypatch.chdir(pipeline)
    original = dvc_adapter.STAGE_COMMAND.get()
    dvc_adapter.STAGE_COMMAND.set(lambda executable, cmd, **kwargs: seen.append((cmd, kwargs)))
    try:
        with Repo(str(pipeline)) as repo:
            stage, = repo.stage.collect("a")
            cmd_run(stage)
    finally:
        dvc_adapter.STAGE_COMMAND.set(original)
    (cmd, kwargs), = seen  # runner.warm reads the command, its directory and its environment
    assert cmd == "cp in.txt a.txt" and kwargs["cwd"] == str(pipeline) and "PATH" in kwargs["env"]
    assert not (pipeline / "a.txt").exists()


@exercises("REPRO_MODULES")
def test_repro_modules_import():
    missing = [name for name in dvc_adapter.REPRO_MODULES if importlib.util.find_spec(name) is None]
    assert not missing, missing


@exercises("stage_env")
def test_stage_env_is_an_environment_with_a_path():
    env = dvc_adapter.stage_env({"PATH": "/usr/bin:/bin", "X": "1"})
    assert env["X"] == "1" and "/usr/bin" in env["PATH"].split(os.pathsep)
    assert "PATH" in dvc_adapter.stage_env(None)


@exercises("find_root")
def test_find_root_finds_the_repository_from_inside(pipeline):
    assert dvc_adapter.find_root(str(pipeline / ".dvc")) == str(pipeline)


@exercises("planned_stages")
def test_planned_stages_are_dvc_repros_stages_in_its_order(pipeline):
    run_cache, stages = dvc_adapter.planned_stages(str(pipeline), ["b"])
    assert run_cache == str(pipeline / ".dvc" / "cache" / "runs")
    assert stages == [("a", [], True, str(pipeline / "dvc.yaml")), ("b", ["a"], True, str(pipeline / "dvc.yaml"))]
    assert dvc_adapter.planned_stages(str(pipeline), ["a"])[1] == stages[:1]


@exercises("pipeline_order")
def test_pipeline_order_is_every_stage_upstream_first(pipeline):
    assert dvc_adapter.pipeline_order(str(pipeline)) == {"a": [], "b": ["a"]}


def test_the_planned_order_is_the_files_in_every_process(tmp_path):
    """DVC's planner walks the target's part of the graph, and networkx iterates a part under half the graph through a
    set of stages, in the order of the string hash seed: the planned order does not follow it."""
    root = tmp_path / "repo"
    root.mkdir()
    names = ["zeta", "alpha", "mid", "beta", "omega", "gamma"]
    stages = {n: {"cmd": f"echo {n} > {n}.txt", "outs": [f"{n}.txt"]} for n in names}
    stages["report"] = {"cmd": "cat *.txt > report.txt", "deps": [f"{n}.txt" for n in names], "outs": ["report.txt"]}
    stages |= {f"other{i}": {"cmd": f"echo {i} > o{i}.txt", "outs": [f"o{i}.txt"]} for i in range(8)}
    (root / "dvc.yaml").write_text(yaml.safe_dump({"stages": stages}, sort_keys=False))
    for cmd in (["git", "init", "-q"], ["dvc", "init", "-q"]):
        subprocess.run(cmd, cwd=root, check=True, capture_output=True)
    code = ("import sys; from reasonrl.runner import dvc_adapter; "
            "print(' '.join(s for s, *_ in dvc_adapter.planned_stages(sys.argv[1], ['report'])[1]))")
    orders = {tuple(subprocess.run([sys.executable, "-c", code, str(root)], check=True, capture_output=True, text=True,
                                   env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout.split())
              for seed in range(6)}
    assert orders == {(*names, "report")}


@exercises("stage_deps")
def test_stage_deps_are_the_paths_dvc_yaml_writes(pipeline, monkeypatch):
    monkeypatch.chdir(pipeline)
    assert dvc_adapter.stage_deps(".") == {"a": ["in.txt"], "b": ["a.txt"]}


@exercises("load_yaml_file")
def test_load_yaml_file_reads_as_dvc_does(tmp_path):
    (tmp_path / "dvc.lock").write_text("schema: '2.0'\nstages:\n  a:\n    params:\n      lr: 3e-06\n")
    assert dvc_adapter.load_yaml_file(str(tmp_path / "dvc.lock"))["stages"]["a"]["params"]["lr"] == 3e-06


@exercises("dump_yaml_file")
def test_dump_yaml_file_writes_as_dvc_does(tmp_path):
    dvc_adapter.dump_yaml_file(str(tmp_path / "dvc.lock"), {"schema": "2.0", "stages": {"a": {"cmd": "x"}}})
    assert (tmp_path / "dvc.lock").read_text() == "schema: '2.0'\nstages:\n  a:\n    cmd: x\n"


@exercises("path_overrides")
def test_path_overrides_group_by_file():
    assert dvc_adapter.path_overrides(["a=1", "other.yaml:b=2", "+c=3"]) == {
        "params.yaml": ["a=1", "+c=3"], "other.yaml": ["b=2"]}


@exercises("hydra_overrides")
def test_hydra_overrides_parse_keys_sweeps_and_refuse_garbage():
    from hydra.errors import OverrideParseException

    one, sweep, add = dvc_adapter.hydra_overrides(["rl.lr=1e-4", "method=grpo,rft", "+rl.new=1"])
    assert (one.key_or_group, one.is_sweep_override(), sweep.is_sweep_override(), add.is_add()) == (
        "rl.lr", False, True, True)
    with pytest.raises(OverrideParseException):
        dvc_adapter.hydra_overrides(["rl.lr=[1"])


@exercises("apply_overrides")
def test_apply_overrides_writes_the_value_keeps_comments_and_refuses_a_missing_key(tmp_path):
    params = tmp_path / "params.yaml"
    params.write_text("x: 1  # kept\nrl:\n  lr: 0.1\n")
    dvc_adapter.apply_overrides(params, ["rl.lr=0.2"])
    assert params.read_text() == "x: 1  # kept\nrl:\n  lr: 0.2\n"
    with pytest.raises(dvc_adapter.invalid_argument_error()):
        dvc_adapter.apply_overrides(params, ["rl.lrr=0.2"])


@exercises("load_params")
def test_load_params_reads_a_params_file(tmp_path):
    (tmp_path / "params.yaml").write_text("rl: {lr: 3e-06}\n")
    assert dvc_adapter.load_params(tmp_path / "params.yaml") == {"rl": {"lr": 3e-06}}


@exercises("experiment_name_taken")
def test_experiment_name_taken_sees_dvcs_experiments_and_refuses_a_bad_name(clone):
    assert not dvc_adapter.experiment_name_taken(str(clone), "by_dvc")
    subprocess.run(["dvc", "exp", "save", "-n", "by_dvc"], cwd=clone, check=True, capture_output=True)
    assert dvc_adapter.experiment_name_taken(str(clone), "by_dvc")
    with pytest.raises(dvc_adapter.invalid_argument_error()):
        dvc_adapter.experiment_name_taken(str(clone), "a/b")


@exercises("save_experiment")
def test_save_experiment_records_the_stages_and_their_new_files(clone):
    assert dvc_adapter.save_experiment(str(clone), ["a", "b"], "mine", False, "a message") == "mine"
    refs = subprocess.run(["git", "for-each-ref", "--format=%(refname)", "refs/exps"], cwd=clone, check=True,
                          capture_output=True, text=True).stdout.split()
    ref, = [r for r in refs if r.endswith("/mine")]
    show = subprocess.run(["git", "show", "-s", "--format=%s", ref], cwd=clone, check=True, capture_output=True,
                          text=True)
    out = subprocess.run(["git", "show", f"{ref}:b.txt"], cwd=clone, capture_output=True, text=True)
    assert show.stdout.strip() == "a message" and out.stdout == "in\n"  # not in git before: included, as reports/ are


# ---- the version check -----------------------------------------------------------------------------------


def test_the_supported_dvc_is_pyprojects_pin_and_the_installed_one():
    pins = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert f"dvc=={dvc_adapter.SUPPORTED_DVC}" in pins
    installed = dvc_adapter.installed_version()
    if installed != dvc_adapter.SUPPORTED_DVC:
        pytest.fail(f"dvc {installed} installed: the adapter is tested against dvc {dvc_adapter.SUPPORTED_DVC}",
                    pytrace=False)


@pytest.mark.parametrize("command", [["repro", "--dry"], ["exp", "run", "--dry", "-S", "x=2"]])
def test_an_untested_dvc_stops_the_command_at_once_with_one_line(command, tmp_path, monkeypatch, capsys):
    from reasonrl.runner import cli

    monkeypatch.setattr(sys, "excepthook", sys.excepthook)  # cli.main installs its own
    monkeypatch.chdir(tmp_path)  # no repository here: the check comes before DVC is asked anything
    monkeypatch.setattr(dvc_adapter, "installed_version", lambda: "9.9.9")
    assert cli.main(command) == 2
    plain = "dvc repro" if command[0] == "repro" else "dvc exp run"
    ours, supported = plain.replace("dvc", "reasonrl"), dvc_adapter.SUPPORTED_DVC
    assert capsys.readouterr().err == (
        f"error: dvc 9.9.9: `{ours}` is tested against dvc {supported} only: it uses DVC's internals (pip install "
        f"dvc=={supported}, or run plain `{plain}`, which always works, one stage at a time)\n")
    monkeypatch.setattr(dvc_adapter, "installed_version", lambda: None)
    assert cli.main(command) == 2
    assert capsys.readouterr().err == f"error: dvc: not installed (pip install dvc=={dvc_adapter.SUPPORTED_DVC})\n"


def test_the_supported_dvc_passes_the_check():
    dvc_adapter.check_version("repro")
    dvc_adapter.check_version("exp run")
