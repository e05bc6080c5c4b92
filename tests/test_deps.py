"""dvc.yaml cannot drift from the code: every stage's code deps, read through the code stamps it depends on, are
exactly its script's transitive reasonrl imports (derived here with `ast`), the module of each task it loads by
name with that module's own imports; a task stage names only its script's stamp for its task; no module is named
in two lists; its other deps are files other stages make; every stage but a stamp reads `threads` and `device`,
and no two RL stages train the same job."""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import re
from functools import cache
from pathlib import Path

import pytest
import yaml
from dvc.repo import Repo
from pipeline_util import ROOT

from reasonrl.config import ConfigError, node_at
from reasonrl.pipeline import ROLES
from reasonrl.plotdata import STUDY_PLOTS, study_runs
from reasonrl.rl.job import job_for


@cache
def stages() -> dict:
    """Every stage of dvc.yaml as DVC itself resolves it (foreach, anchors and merge keys expanded)."""
    with Repo(str(ROOT)) as repo:
        return {s.addressing: s for s in repo.index.stages}


def module_file(dotted: str) -> Path | None:
    """The file of module `dotted` under ROOT (a package is its __init__.py), or None."""
    base = ROOT.joinpath(*dotted.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def runtime_nodes(tree: ast.AST, typing: bool = False):
    """Every node of `tree` but those under `if TYPE_CHECKING:` (imports for annotations, never run), unless
    `typing`."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if (not typing and isinstance(child, ast.If)
                    and ast.unparse(child.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")):
                todo += child.orelse
            else:
                todo.append(child)


def import_names(node: ast.AST, package: str) -> list[str]:
    """The dotted names an import statement in `package` brings in ([] for any other node): `from pkg import
    name` imports pkg and, when name is a submodule, pkg.name too (a name that is no module is harmless: the
    callers keep only what exists or what they look for)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:
        parts = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join(parts + ([base] if base else []))
    return [base] + [f"{base}.{a.name}" for a in node.names]


def imported(path: Path, typing: bool = False) -> set[str]:
    """Dotted names of the reasonrl modules `path` imports (anywhere in it, also inside functions; with `typing`
    also under `if TYPE_CHECKING:`), with their parent packages, whose __init__ runs first."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    if path.name == "__init__.py":
        package = ".".join(path.relative_to(ROOT).parts[:-1])
    names = set()
    for node in runtime_nodes(ast.parse(path.read_text()), typing):
        found = import_names(node, package)
        for name in found:
            if name.split(".")[0] == "reasonrl":
                parts = name.split(".")
                names |= {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
    return {n for n in names if module_file(n)}


@cache  # one script serves hundreds of stages; the files do not change while the tests run
def closure(script: Path) -> frozenset[str]:
    """The repository paths of every reasonrl module `script` imports, directly or through others."""
    todo, seen = list(imported(script)), set()
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += imported(module_file(name))
    return frozenset(str(module_file(n).relative_to(ROOT)) for n in seen)


def test_closure_follows_relative_and_nested_imports():
    # rl/run.py imports ..verifiers inside a function, and every reasonrl.rl module runs rl/__init__.py
    mods = closure(ROOT / "stages/rl.py")
    assert {"reasonrl/verifiers.py", "reasonrl/rl/__init__.py", "reasonrl/__init__.py",
            "reasonrl/rl/variants.py"} <= mods
    assert "reasonrl/exact.py" not in mods


# The registry imports a task's module by name when asked for it (tasks.get_task), which no `import` shows.
REGISTRY = "reasonrl/tasks/__init__.py"
DATA_FILE = re.compile(rf"data/([a-z0-9]+)_({'|'.join(ROLES)})\.jsonl")


@cache
def params() -> dict:
    return yaml.safe_load((ROOT / "params.yaml").read_text())


@cache
def dvc_yaml() -> dict:
    return yaml.safe_load((ROOT / "dvc.yaml").read_text())


def tasks_loaded(name: str, stage) -> set[str]:
    """The task modules a stage's registry loads: its item's `task` (the key of a stage per task, data@<task>
    or a code stamp's, is its task), or for a stage without an item, the tasks of the data files it reads (the
    only problems it can meet)."""
    group, _, key = name.partition("@")
    if key:
        per_task = dvc_yaml()["stages"][group]["foreach"] == "${data}"
        return {f"reasonrl/tasks/{key if per_task else item_of(name)['task']}.py"}
    return {f"reasonrl/tasks/{m.group(1)}.py" for d in stage.deps if (m := DATA_FILE.fullmatch(d.def_path))}


def test_a_stage_loads_its_items_task_or_the_task_of_the_data_it_reads():
    assert tasks_loaded("data@chain", stages()["data@chain"]) == {"reasonrl/tasks/chain.py"}
    assert tasks_loaded("eval_base@chain_s0", stages()["eval_base@chain_s0"]) == {"reasonrl/tasks/chain.py"}
    assert tasks_loaded("verifier@chain_orm", stages()["verifier@chain_orm"]) == {"reasonrl/tasks/chain.py"}
    assert tasks_loaded("report_zero", stages()["report_zero"]) == {"reasonrl/tasks/hop.py"}
    assert tasks_loaded("exact", stages()["exact"]) == set()


STAMP = "stages/stamp.py"  # the command of every code stamp stage (dvc.yaml's code stamps)
STAMPS = "reports/code/"


def is_stamp(stage) -> bool:
    return stage.cmd.split()[1] == STAMP


@cache
def stamp_makers() -> dict[str, str]:
    """stamp file -> the stamp stage that writes it."""
    return {o.def_path: name for name, st in stages().items() if is_stamp(st) for o in st.outs}


def file_deps(stage) -> set[str]:
    return {d.def_path for d in stage.deps if not hasattr(d, "params")}


def code_deps(name: str) -> set[str]:
    """The modules and scripts stage `name` depends on: those it lists and, through each stamp it lists, those
    the stamp's stage depends on (at any depth); the stamp tool's own stamp is no code of the stage."""
    out = set()
    for dep in file_deps(stages()[name]):
        if dep.startswith(STAMPS):
            if stamp_makers()[dep] != "code_stamp":
                out |= code_deps(stamp_makers()[dep])
        elif dep.endswith(".py"):
            out.add(dep)
    return out


def runs(name: str, stage) -> tuple[str, str | None]:
    """(the script whose imports stage `name` must depend on, the stamp its body must name or None): a stamp
    stage code_<script>@<task> stands for stages/<script>.py (code_task@<task> for the task module alone)."""
    group, _, key = name.partition("@")
    if not is_stamp(stage):
        script = stage.cmd.split()[1]
        stamp = None
        if key:
            task, = (Path(m).stem for m in tasks_loaded(name, stage))
            stamp = f"{STAMPS}{Path(script).stem}_{task}.txt"
        return script, stamp
    if group == "code_task":
        return f"reasonrl/tasks/{key}.py", None
    return (f"stages/{group.removeprefix('code_')}.py" if key else STAMP), None


def item_of(name: str) -> dict:
    group, _, key = name.partition("@")
    foreach = dvc_yaml()["stages"][group]["foreach"]
    return node_at(params(), foreach.removeprefix("${").removesuffix("}"))[key]


@pytest.mark.parametrize("name", sorted(n for n, st in stages().items() if not n.startswith("lib_")))
def test_stage_deps_are_exactly_its_imports(name):
    """A stage's code, through its stamps, is its script's import closure with its task's module and that
    module's imports; a task stage names no module itself, only the stamp of its script and task."""
    stage = stages()[name]
    assert stage.cmd.startswith("python stages/"), stage.cmd
    script, stamp = runs(name, stage)
    imports = {script} | closure(ROOT / script)
    loaded = tasks_loaded(name, stage) if REGISTRY in imports else set()
    assert loaded or REGISTRY not in imports, f"{name} loads tasks but names no task (item.task or a data file)"
    loaded |= {m for task in loaded for m in closure(ROOT / task)}  # what the task module imports runs too
    assert code_deps(name) == imports | loaded, name
    if stamp:  # the right stamp, and nothing else of code: no module list written out in a task stage
        assert {d for d in file_deps(stage) if d.startswith((STAMPS, "reasonrl/", "stages/"))} == {stamp}, name
    if is_stamp(stage):
        return  # a stamp reads no params: a changed thread count must not rewrite any stamp
    params = next(d.params for d in stage.deps if hasattr(d, "params"))
    assert {"threads", "device"} <= set(params), name


def test_the_stamp_script_takes_its_stage_from_dvc(tmp_path, monkeypatch):
    """As a stage the script is named by DVC_STAGE (what DVC sets for every command), by hand by its argument."""
    tool = load_stamp_tool()
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "dvc.yaml").write_text("stages:\n  lib_a:\n    cmd: python stages/stamp.py\n"
                                       "    deps: [a.py]\n    outs: [reports/code/lib_a.txt: {cache: false}]\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DVC_STAGE", "lib_a")
    assert tool.main([]) == 0
    digest = hashlib.md5(b"x = 1\n").hexdigest()
    assert (tmp_path / "reports/code/lib_a.txt").read_text() == f"{digest}  a.py\n"
    monkeypatch.delenv("DVC_STAGE")
    assert tool.main([]) == 2 and tool.main(["lib_a"]) == 0


def test_each_lib_stamp_is_shared():
    """A lib_ stamp stands for modules more than one stamp or stage needs (one user's modules are written in its
    own list), and every module of it runs in each stage that reads it (the test above, through its users)."""
    users = {s: [n for n, st in stages().items() if s in file_deps(st)] for s in stamp_makers()}
    for path, name in stamp_makers().items():
        if name.startswith("lib_"):
            assert len(users[path]) >= 2, (name, users[path])


def test_the_stamp_script_reads_the_deps_dvc_resolves():
    """stages/stamp.py finds its stage's deps and output in dvc.yaml itself, as DVC resolves them."""
    tool = load_stamp_tool()
    for name, stage in stages().items():
        if is_stamp(stage):
            deps, out = tool.stage_paths(dvc_yaml(), name)
            assert (set(deps), [out]) == (file_deps(stage), [o.def_path for o in stage.outs]), name
            assert stage.cmd == f"python {STAMP}", name  # one command: DVC_STAGE names the stage
            # a changed stamp format reaches every stamp: each reads the script's own stamp
            assert name == "code_stamp" or f"{STAMPS}stamp.txt" in file_deps(stage), name


def test_a_stamp_changes_exactly_when_a_dep_does(tmp_path, monkeypatch):
    tool = load_stamp_tool()
    monkeypatch.chdir(tmp_path)
    Path("b.py").write_text("x = 1\n")
    Path("a.py").write_text("y = 2\n")
    Path("reports/code").mkdir(parents=True)
    Path(tool.TOOL).write_text("the tool's md5\n")
    first = tool.stamp(["b.py", "a.py", tool.TOOL])
    assert [line.split("  ")[1] for line in first.splitlines()] == ["a.py", "b.py"]  # sorted; the tool left out
    assert tool.stamp(["a.py", "b.py", tool.TOOL]) == first
    Path(tool.TOOL).write_text("a new tool\n")
    assert tool.stamp(["a.py", "b.py", tool.TOOL]) == first
    Path("a.py").write_text("y = 3\n")
    assert tool.stamp(["a.py", "b.py"]) != first


def load_stamp_tool():
    spec = importlib.util.spec_from_file_location("stamp_tool", ROOT / STAMP)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_file_dep_is_made_by_another_stage():
    made = {o.def_path: s for s, st in stages().items() for o in st.outs}
    for name, stage in stages().items():
        for dep in (d.def_path for d in stage.deps if not hasattr(d, "params")):
            if dep.endswith(".py"):
                continue
            makers = {s for path, s in made.items() if path == dep or path.startswith(dep + "/")}
            assert makers and name not in makers, (name, dep)


def jobs(params: dict) -> dict[str, dict]:
    """stage -> the job it trains, resolved through the library's job builder as the stage does."""
    out = {}
    for name, stage in stages().items():
        argv = stage.cmd.split()
        if argv[1] == "stages/rl.py":
            out[name] = job_for(params, argv[2], argv[3])[0].to_dict()
    return out


def test_no_two_stages_train_the_same_job():
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    resolved = jobs(params)
    assert len(resolved) >= 25 and any(n.startswith("rl_headline@") for n in resolved)
    seen: dict[str, str] = {}
    for name, job in resolved.items():
        key = yaml.safe_dump(job, sort_keys=True)
        assert key not in seen, f"{name} trains the same job as {seen.get(key)}"
        seen[key] = name


def test_a_headline_run_equal_to_a_study_run_is_caught():
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["headline"]["headline_s0"] = {"task": "hop", "init": "base_cot", "seed": 0, "n_range": [15, 16], "k_min": 7,
                                         "k_max": 7}  # grpo_s0's job (the headline runs take `method`: grpo)
    resolved = jobs(params)
    assert resolved["rl_headline@headline_s0"] == resolved["rl@grpo_s0"]


def test_an_undefined_run_names_the_group_and_its_runs():
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    with pytest.raises(ConfigError, match=r"runs\.nosuch: no such run \(defined runs in runs: sft_s0, "):
        job_for(params, "runs", "nosuch")


def test_a_run_added_to_a_study_needs_only_its_entry_and_its_label():
    """The two places of docs/studies.md: runs.<run> and studies.<study>; dvc.yaml then has its stages, the
    report's deps (folders) cover its files and the study plot shows it."""
    from reasonrl.studies import ablations
    from reasonrl.studies.stage import load_config

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["runs"]["abl_new"] = {"task": "hop", "init": "base_cot", "advantage": "none", "lr": 1.0e-3, "seed": 1,
                                "eval": "val_edge"}
    params["studies"]["ablations"]["groups"]["baseline"]["runs"]["no baseline, seed 1"] = "abl_new"
    dvc = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    groups = {name for name, st in dvc.items() if st.get("foreach") == "${runs}"}
    assert groups == {"rl", "eval"}  # one rl@abl_new and one eval@abl_new, from the entry alone
    deps = stages()["report_ablations"].deps
    folders = {d.def_path for d in deps if not hasattr(d, "params") and not Path(d.def_path).suffix}
    inputs = ablations.inputs(load_config(ablations, params))
    assert "reports/rl/hop/abl_new.csv" in inputs
    assert all(any(p.startswith(f + "/") for f in folders) for p in inputs if "abl_new" in p)
    assert "abl_new" in study_runs(params, STUDY_PLOTS["ablations"], params["runs"])


def test_a_task_modules_own_imports_are_deps_of_its_stages():
    # loading the chain task runs tasks/chain.py's imports too: tasks/base.py, and through it config.py
    assert {"reasonrl/tasks/base.py", "reasonrl/config.py"} <= closure(ROOT / "reasonrl/tasks/chain.py")


def written_deps(text: str) -> list[tuple[str, list[str]]]:
    """(stage group, its code deps) of every deps list dvc.yaml `text` writes out, aliases (`*name`,
    `<<: *name`) not counted again: the group is the first stage whose body holds the list."""
    written: dict[int, tuple[str, list[str]]] = {}
    for key, group in yaml.compose(text).value:
        if key.value != "stages":
            continue
        for name, stage in group.value:
            todo = [stage]
            while todo:
                node = todo.pop()
                if isinstance(node, yaml.MappingNode):
                    for k, v in node.value:
                        if k.value == "deps" and isinstance(v, yaml.SequenceNode):
                            code = [x.value for x in v.value if x.value.startswith(("reasonrl/", "stages/"))]
                            written.setdefault(id(v), (name.value, code))
                        else:
                            todo.append(v)
    return list(written.values())


def named_twice(text: str) -> list[str]:
    """The modules and scripts that more than one deps list of dvc.yaml `text` names (or one list twice): each is
    written once, in a lib_ stamp, a code stamp or the one stage whose script alone imports it."""
    lists: dict[str, list[str]] = {}
    for name, code in written_deps(text):
        for path in code:
            lists.setdefault(path, []).append(name)
    return [f"{path}: {', '.join(names)}" for path, names in sorted(lists.items()) if len(names) > 1]


def test_dvc_yaml_names_each_module_once():
    text = (ROOT / "dvc.yaml").read_text()
    assert named_twice(text) == []
    groups = {name for name, _ in written_deps(text)}
    # the lists are found where they are written, an alias is no second list
    assert {"lib_core", "code_rl", "rl", "rl_orm", "eval_base"} <= groups
    assert not {"eval", "eval_orm", "rl_noeval", "mixed_p1"} & groups
    # a module written into a second list is found
    again = text.replace("reasonrl/errors.py, reports/code/stamp.txt]",
                         "reasonrl/errors.py, reasonrl/io.py, reports/code/stamp.txt]")
    assert again != text and named_twice(again) == ["reasonrl/io.py: lib_core, lib_io"]
    # as is a list written out again in a body that could share it
    again = text.replace('      deps: ["reports/code/eval_${item.task}.txt", "models/${ckpt}_${key}.pt"]',
                         '      deps: [stages/eval.py, "models/${ckpt}_${key}.pt"]')
    assert again != text and named_twice(again) == ["stages/eval.py: code_eval, eval_base"]
