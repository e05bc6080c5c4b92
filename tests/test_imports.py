"""The library's import structure: no circles (module-level and function-level imports alike, and imports under
`if TYPE_CHECKING:` too: they never run, but a circle through them is still two modules that cannot be read
one without the other), and the stages that must not depend on the RL loop or on the supervised trainer do
not (their deps in dvc.yaml are derived from the imports that run: tests/test_deps.py); and the two wings: the
runner is one package that no science module imports."""

from __future__ import annotations

import ast
from pathlib import Path

from test_deps import ROOT, closure, import_names, imported, module_file

RL_LOOP = {"reasonrl/rl/train.py", "reasonrl/rl/algorithm.py", "reasonrl/rl/batch.py",
           "reasonrl/rl/context.py", "reasonrl/rl/layout.py", "reasonrl/rl/memory.py", "reasonrl/rl/run.py",
           "reasonrl/verifiers.py", "reasonrl/sampling.py"}


def graph() -> dict[str, set[str]]:
    """reasonrl module -> the reasonrl modules it imports, type-only imports included (a package's __init__
    counts as its parent). A module's own packages are not among them: Python runs them before the module,
    whatever it imports, so a package whose __init__ registers its submodules (reasonrl.tasks) is no circle."""
    out = {}
    for path in sorted((ROOT / "reasonrl").rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        name = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        out[name] = {n for n in imported(path, typing=True)
                     if n != name and module_file(n) and not name.startswith(n + ".")}
    return out


def cycle(g: dict[str, set[str]]) -> list[str] | None:
    """One import circle of g (as a path that returns to its start), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(g.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(g):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_a_module_importing_its_own_package_is_no_circle_but_a_real_one_is():
    g = graph()
    assert "reasonrl.tasks" not in g["reasonrl.tasks.hop"] and "reasonrl.rl" not in g["reasonrl.rl.job"]
    assert cycle({**g, "reasonrl.tasks.base": {"reasonrl.tasks.hop"}, "reasonrl.tasks.hop": {"reasonrl.tasks.base"}})


def test_no_module_imports_a_task_module_but_by_name():
    """Only the registry loads a task (tasks.get_task, by name), so a stage depends on its own task's module
    alone (tests/test_deps.py adds it): no library module, and no stage script, imports one."""
    tasks = {f"reasonrl.tasks.{p.stem}" for p in (ROOT / "reasonrl/tasks").glob("*.py")} - {
        "reasonrl.tasks.__init__", "reasonrl.tasks.base"}
    assert {"reasonrl.tasks.hop", "reasonrl.tasks.chain"} <= tasks
    for path in sorted((ROOT / "reasonrl").rglob("*.py")) + sorted((ROOT / "stages").glob("*.py")):
        assert not imported(path) & tasks, (path, sorted(imported(path) & tasks))


def test_the_cycle_finder_finds_a_circle_and_only_one():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_the_library_imports_no_circle():
    g = graph()
    assert "reasonrl.rl.algorithm" in g and "reasonrl.rl.layout" in g["reasonrl.rl.algorithm"]
    assert cycle(g) is None, " -> ".join(cycle(g))


def test_a_circle_through_a_type_only_import_is_one():
    g = graph()
    # layout.py imports the job and the batch for its annotations only
    assert {"reasonrl.rl.job", "reasonrl.rl.batch"} <= g["reasonrl.rl.layout"]
    assert not {"reasonrl.rl.job", "reasonrl.rl.batch"} & imported(ROOT / "reasonrl/rl/layout.py")
    # the job naming its plan through layout.py would be a circle
    assert cycle({**g, "reasonrl.rl.job": g["reasonrl.rl.job"] | {"reasonrl.rl.layout"}})


def test_the_rl_package_trims_no_heap_but_through_its_memory_policy():
    """The algorithm and its loop call hooks; only rl/memory.py, which the stages hand to the loop, touches the
    allocator, and it imports none of the runner's modules (reasonrl.runner.malloc)."""
    for path in sorted((ROOT / "reasonrl/rl").glob("*.py")):
        tree = ast.parse(path.read_text())
        modules = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        modules |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        names = {n.attr if isinstance(n, ast.Attribute) else n.id for n in ast.walk(tree)
                 if isinstance(n, (ast.Attribute, ast.Name))}
        assert not any("malloc" in m for m in modules), path.name
        if path.name != "memory.py":
            assert "ctypes" not in modules and not names & {"trim", "heap_trimmer", "trimmed_per_layer"}, path.name


def test_the_rl_package_imports_nothing():
    assert imported(ROOT / "reasonrl/rl/__init__.py") == set()


def test_exact_and_the_reports_depend_on_no_rl_loop_module():
    for script in ("exact", "report_exact", "report_index", "report_headline", "report_methods", "report_passk",
                   "report_zero", "report_hacking", "report_ablations", "report_primaries"):
        deps = closure(ROOT / f"stages/{script}.py")
        assert not deps & RL_LOOP, (script, sorted(deps & RL_LOOP))


def test_an_edit_to_the_supervised_trainer_reruns_no_evaluation():
    for script in ("eval", "passk"):
        assert "reasonrl/pretrain.py" not in closure(ROOT / f"stages/{script}.py"), script
    assert "reasonrl/pretrain.py" in closure(ROOT / "stages/base.py")  # the test would see it where it is


# ---- the two wings: the machinery that runs the pipeline (reasonrl.runner) and the science it runs ----------
# No science module nor stage script imports the runner, at any level (in a function, under TYPE_CHECKING, by a
# name in a string), so no stage's outputs or deps depend on how the pipeline was launched. The runner imports
# the science (numerics.machine for its log line, errors for the console script's one-line errors).

RUNNER = "reasonrl.runner"
RUNNER_MODULES = ("cli", "dvc_adapter", "experiment", "lockfile", "malloc", "parallel", "params_lookup", "plan",
                  "progress", "warm", "zygotes")  # issue 52; dvc_adapter issue 71


def science_files() -> list[Path]:
    """Every Python file of the package outside the runner, and every stage script."""
    files = [p for p in (ROOT / "reasonrl").rglob("*.py") if not p.relative_to(ROOT).as_posix().startswith(
        "reasonrl/runner/")]
    return sorted(files + list((ROOT / "stages").glob("*.py")))


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring constants: prose about the runner is allowed, code that names it is not."""
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(body, list) and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)):
            found.add(id(body[0].value))
    return found


def runner_imports(path: Path, root: Path = ROOT) -> set[str]:
    """The runner names `path` imports anywhere in it (module level, in a function, under TYPE_CHECKING), or
    names in a string its code uses (`importlib.import_module("reasonrl.runner.x")`, `-m reasonrl.runner.cli`)."""
    tree = ast.parse(path.read_text(), str(path))
    parts = path.relative_to(root).with_suffix("").parts
    package = ".".join(parts[:-1])
    docs, found = _docstrings(tree), set()
    for node in ast.walk(tree):
        names = import_names(node, package)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            names = [w.strip("`'\"(),;:") for w in node.value.replace("/", ".").split()]
        found |= {n.removesuffix(".py") for n in names if n == RUNNER or n.startswith(RUNNER + ".")}
    return found


def test_the_runner_is_one_package():
    for name in RUNNER_MODULES:
        assert (ROOT / "reasonrl/runner" / f"{name}.py").is_file(), name
        assert not (ROOT / "reasonrl" / f"{name}.py").exists(), f"reasonrl/{name}.py stands among the science"


def test_no_science_module_imports_the_runner():
    wrong = {}
    for path in science_files():
        if found := runner_imports(path):
            wrong[path.relative_to(ROOT).as_posix()] = sorted(found)
    assert not wrong, f"science modules that import the runner (only the reverse is allowed): {wrong}"


def test_the_wing_check_sees_every_form_of_import(tmp_path):
    """Each form it must catch, alone: a relative import in a function, a type-only import, an absolute one, a
    module named in a string; and what it lets through: a docstring that names the runner."""
    path = tmp_path / "reasonrl" / "rl" / "mod.py"
    path.parent.mkdir(parents=True)
    forms = {
        "def f():\n    from ..runner import malloc\n": {RUNNER, f"{RUNNER}.malloc"},
        "if TYPE_CHECKING:\n    from ..runner.plan import Plan\n": {f"{RUNNER}.plan", f"{RUNNER}.plan.Plan"},
        "import reasonrl.runner.warm\n": {f"{RUNNER}.warm"},
        "import importlib\nm = importlib.import_module('reasonrl.runner.cli')\n": {f"{RUNNER}.cli"},
        '"""How reasonrl.runner starts this (reasonrl/runner/warm.py)."""\nx = 1\n': set(),
        "from .. import numerics\n": set(),
    }
    for source, expected in forms.items():
        path.write_text(source)
        assert runner_imports(path, tmp_path) == expected, source
