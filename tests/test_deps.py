"""dvc.yaml cannot drift from the code: every stage's deps are exactly its script's transitive reasonrl
imports (derived here with `ast`), the module of each task it loads by name with that module's own imports,
and files other stages make;
every stage reads `threads` and `device`, and no two RL stages train the same job."""

from __future__ import annotations

import ast
import json
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
    """The task modules a stage's registry loads: its item's `task` (a data stage's key is its task), or for a
    stage without an item, the tasks of the data files it reads (the only problems it can meet)."""
    group, _, key = name.partition("@")
    if key:
        foreach = dvc_yaml()["stages"][group]["foreach"]
        item = node_at(params(), foreach.removeprefix("${").removesuffix("}"))[key]
        return {f"reasonrl/tasks/{key if group == 'data' else item['task']}.py"}
    return {f"reasonrl/tasks/{m.group(1)}.py" for d in stage.deps if (m := DATA_FILE.fullmatch(d.def_path))}


def test_a_stage_loads_its_items_task_or_the_task_of_the_data_it_reads():
    assert tasks_loaded("data@chain", stages()["data@chain"]) == {"reasonrl/tasks/chain.py"}
    assert tasks_loaded("eval_base@chain_s0", stages()["eval_base@chain_s0"]) == {"reasonrl/tasks/chain.py"}
    assert tasks_loaded("verifier@chain_orm", stages()["verifier@chain_orm"]) == {"reasonrl/tasks/chain.py"}
    assert tasks_loaded("report_zero", stages()["report_zero"]) == {"reasonrl/tasks/hop.py"}
    assert tasks_loaded("exact", stages()["exact"]) == set()


@pytest.mark.parametrize("name", sorted(stages()))
def test_stage_deps_are_exactly_its_imports(name):
    stage = stages()[name]
    script = stage.cmd.split()[1]
    assert stage.cmd.startswith("python stages/"), stage.cmd
    deps = {d.def_path for d in stage.deps if not hasattr(d, "params")}
    code = {d for d in deps if d.endswith(".py")}
    imports = {script} | closure(ROOT / script)
    loaded = tasks_loaded(name, stage) if REGISTRY in imports else set()
    assert loaded or REGISTRY not in imports, f"{name} loads tasks but names no task (item.task or a data file)"
    loaded |= {m for task in loaded for m in closure(ROOT / task)}  # what the task module imports runs too
    assert code == imports | loaded, name
    params = next(d.params for d in stage.deps if hasattr(d, "params"))
    assert {"threads", "device"} <= set(params), name


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


# DVC cannot append to a list (deps: [str], no list interpolation), so these bodies write out another's code deps
# with one item's model added: (the body written out, the one whose list it repeats)
APPENDED = {("mixed", "base"), ("rl_orm", "rl")}


def written_deps(text: str) -> dict[str, list[str]]:
    """{stage group: its code deps} of every deps list dvc.yaml writes out, aliases (`*name`, `<<: *name`) not
    counted again: the group is the first stage whose body holds the list."""
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
    return {name: code for name, code in written.values()}


def repeated(text: str) -> list[str]:
    """The deps lists of dvc.yaml `text` that write out a module list already written (or a module twice)."""
    seen: dict[frozenset, str] = {}
    out = []
    for name, code in written_deps(text).items():
        key = frozenset(code)
        if len(key) < len(code):
            out.append(f"{name} lists a module twice")
        if key in seen and (name, seen[key]) not in APPENDED:
            out.append(f"{name} writes out {seen[key]}'s module list again")
        seen.setdefault(key, name)
    return out


def test_dvc_yaml_writes_each_module_list_once():
    text = (ROOT / "dvc.yaml").read_text()
    assert repeated(text) == []
    lists = written_deps(text)
    assert {"eval_base", "rl", "base"} <= set(lists) and not {"eval", "eval_orm", "rl_noeval", "mixed_p1"} & set(lists)
    # the same list written out by a second group is found
    again = text.replace("  eval_orm:\n    foreach: ${runs_orm}\n    do: *eval_rl\n",
                         "  eval_orm:\n    foreach: ${runs_orm}\n    do:\n      <<: *eval_rl\n      deps: ["
                         + ", ".join(map(json.dumps, lists["eval_base"])) + "]\n")
    assert again != text and repeated(again) == ["eval_orm writes out eval_base's module list again"]
