"""The studies belong to no task: the random guess a figure draws, the gold length it marks and the files a
report reads come from the task of the runs it reads (their params, their summaries), never from a task's
name written in reasonrl/studies/."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from reasonrl import tasks

ROOT = Path(__file__).resolve().parents[1]
# The helpers whose arguments pick a task's set, module or folder
TASK_TAKING = {"eval_set", "guess_sets", "get_task", "data_path", "chance", "gold_length", "distribution", "cell",
               "history_path", "summary_path", "run_metrics_path", "base_metrics_path", "outcomes_path",
               "run_outcomes_path", "rl_folder", "eval_folder"}


def _name(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def hard_coded(source: str) -> list[str]:
    """Where `source` names a task itself: a task's name passed to a helper of TASK_TAKING, a default task in
    `.get("task", ...)`, or a path of a task's data or outputs spelled out."""
    names = set(tasks.names())
    spelled = re.compile(rf"(data/|reports/(rl|eval)/)({'|'.join(sorted(names))})[_/]")
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            args = [*node.args, *(k.value for k in node.keywords)]
            literals = [a.value for arg in args for a in ast.walk(arg) if isinstance(a, ast.Constant)]
            if _name(node.func) in TASK_TAKING and names & set(literals):
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
            if (_name(node.func) == "get" and len(node.args) == 2 and literals[:1] == ["task"]
                    and isinstance(node.args[1], ast.Constant)):
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and spelled.search(node.value):
            found.append(f"line {node.lineno}: {node.value!r}")
    return found


def test_the_scan_finds_a_hard_coded_guess_set():
    assert hard_coded('GUESS_SET = eval_set("hop", "val_edge")')
    assert hard_coded('guess = chance({**job, "task": "chain"}, root, declared)')
    assert hard_coded('task = job.get("task", "hop")')
    assert hard_coded('DECLARED = ["data/chain_think.jsonl"]')
    assert hard_coded('path = history_path(run, task="hop")')
    assert not hard_coded('GUESS_ROLE = "val_edge"\nsets = guess_sets(runs, cfg.tasks, GUESS_ROLE)')


def test_no_study_names_a_task():
    found = {path.name: hits for path in sorted((ROOT / "reasonrl/studies").glob("*.py"))
             if (hits := hard_coded(path.read_text()))}
    assert not found, found


def test_the_plots_stage_depends_on_the_folder_of_every_task_it_reads():
    # stages/plots.py reads each study run from its task's folder: a run of another task added to a study must
    # make that folder a dependency, or the stage would read it without rerunning when it changes
    import yaml

    from reasonrl.plotdata import STUDY_PLOTS, study_runs
    from reasonrl.studies.paths import STUDY_RUN_GROUPS, checkpoint_tasks, rl_folder

    root = Path(__file__).resolve().parents[1]
    params = yaml.safe_load((root / "params.yaml").read_text())
    deps = set(yaml.safe_load((root / "dvc.yaml").read_text())["stages"]["plots"]["deps"])
    defined = [run for group in STUDY_RUN_GROUPS for run in params.get(group) or {}]
    tasks_of = checkpoint_tasks(params)
    read = {tasks_of[f"rl_{run}"] for plot in STUDY_PLOTS.values() for run in study_runs(params, plot, defined)}
    assert read and {rl_folder(t) for t in read} <= deps
