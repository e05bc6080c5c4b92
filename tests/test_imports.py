"""The library's import structure: no circles (module-level and function-level imports alike; imports under
`if TYPE_CHECKING:` never run and are left out), and the stages that must not depend on the RL loop or on the
supervised trainer do not (their deps in dvc.yaml are derived from these imports: tests/test_deps.py)."""

from __future__ import annotations

from test_deps import ROOT, closure, imported, module_file

RL_LOOP = {"reasonrl/rl/train.py", "reasonrl/rl/collect.py", "reasonrl/rl/layout.py", "reasonrl/rl/run.py",
           "reasonrl/verifiers.py", "reasonrl/sampling.py"}


def graph() -> dict[str, set[str]]:
    """reasonrl module -> the reasonrl modules it imports (a package's __init__ counts as its parent). A
    module's own packages are not among them: Python runs them before the module, whatever it imports, so
    a package whose __init__ imports its submodules is no circle."""
    out = {}
    for path in sorted((ROOT / "reasonrl").rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        name = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        out[name] = {n for n in imported(path) if n != name and module_file(n) and not name.startswith(n + ".")}
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
    assert "reasonrl.rl.train" in g and "reasonrl.rl.collect" in g["reasonrl.rl.train"]
    assert cycle(g) is None, " -> ".join(cycle(g))


def test_the_rl_package_imports_nothing():
    assert imported(ROOT / "reasonrl/rl/__init__.py") == set()


def test_exact_and_the_reports_depend_on_no_rl_loop_module():
    for script in ("exact", "report_exact", "report_index", "report_headline", "report_methods", "report_passk",
                   "report_zero", "report_hacking", "report_ablations"):
        deps = closure(ROOT / f"stages/{script}.py")
        assert not deps & RL_LOOP, (script, sorted(deps & RL_LOOP))


def test_an_edit_to_the_supervised_trainer_reruns_no_evaluation():
    for script in ("eval", "passk"):
        assert "reasonrl/pretrain.py" not in closure(ROOT / f"stages/{script}.py"), script
    assert "reasonrl/pretrain.py" in closure(ROOT / "stages/base.py")  # the test would see it where it is
