"""Where the stages write a run's, a checkpoint's and a study's outputs, relative to the repository root.

A study run's training record and every evaluation of a base or a study run sit in a folder of their task
(reports/rl/<task>/, reports/eval/<task>/): a report depends on the folders of the tasks its runs train, so
another task's runs, added or changed, rerun none of it. The headline's folder (reports/headline/) holds both
tasks' headline runs; each task's report (report_headline_<task>) names its own runs' files."""

from __future__ import annotations

from collections.abc import Iterable

from ..config import check

# `folder` is where the stages write: reports/, or reports/headline/ for the headline chain; `task` is the run's
# or checkpoint's task, the subfolder under reports/ (None under reports/headline/, which is not split)


def _at(kind: str, folder: str, task: str | None) -> str:
    return f"{folder}/{kind}/{task}" if task else f"{folder}/{kind}"


def rl_folder(task: str | None, folder: str = "reports") -> str:
    """The folder of the training records (stage rl@ and its kin) of a task's runs."""
    return _at("rl", folder, task)


def eval_folder(task: str | None, folder: str = "reports") -> str:
    """The folder of the eval stages' outputs for a task's checkpoints."""
    return _at("eval", folder, task)


def history_path(run: str, folder: str = "reports", task: str | None = None) -> str:
    return f"{rl_folder(task, folder)}/{run}.csv"


def summary_path(run: str, folder: str = "reports", task: str | None = None) -> str:
    return f"{rl_folder(task, folder)}/{run}.json"


def run_metrics_path(run: str, folder: str = "reports", task: str | None = None) -> str:
    return f"{eval_folder(task, folder)}/rl_{run}.json"


def base_metrics_path(base: str, task: str) -> str:
    return f"{eval_folder(task)}/base_{base}.json"


def study_metrics_path(study: str) -> str:
    return f"reports/metrics/{study}.json"


def manifest_path(study: str) -> str:
    return f"reports/{study}/manifest.json"


def outcomes_path(checkpoint: str, folder: str = "reports", task: str | None = None) -> str:
    """Per-problem greedy outcomes of a checkpoint (models/<checkpoint>.pt), written by its eval stage."""
    return f"{eval_folder(task, folder)}/outcomes_{checkpoint}.csv"


def run_outcomes_path(run: str, folder: str = "reports", task: str | None = None) -> str:
    return outcomes_path(f"rl_{run}", folder, task)


# The tasks with a headline report of their own: a report stage each in dvc.yaml (report_headline_<task>), a study
# each in the index (claims.STUDIES)
HEADLINE_TASKS = ("hop", "chain")


def headline_study(task: str) -> str:
    """The study name of one task's headline report: its folder reports/<study>/ and its metrics file."""
    return f"headline_{task}"


def answers_dir(study: str) -> str:
    """The study's answer files, one flat JSON per compared pair (a DVC metrics directory)."""
    return f"reports/{study}/answers"


def answer_path(study: str, pair: str) -> str:
    return f"{answers_dir(study)}/{pair}.json"


# The params groups of the RL runs that write under reports/rl/<task>/ (the headline's write under reports/headline/)
STUDY_RUN_GROUPS = ("runs", "runs_noeval", "runs_orm", "runs_prm")
# The params groups whose entries are checkpoints a study may read, with the stem each one's checkpoint has
CHECKPOINT_GROUPS = {"bases": "base_", **dict.fromkeys(STUDY_RUN_GROUPS, "rl_"), "headline": "rl_"}


def checkpoint_tasks(params: dict) -> dict[str, str]:
    """{checkpoint stem (base_<base>, rl_<run>): its task} for every base and RL run in params: the folder its
    outputs sit in. A run without `task` takes the rl: defaults' (as the job does)."""
    default = (params.get("rl") or {}).get("task")
    return {f"{stem}{name}": entry.get("task", default)
            for group, stem in CHECKPOINT_GROUPS.items() for name, entry in (params.get(group) or {}).items()}


def task_of(tasks: dict[str, str], checkpoint: str) -> str:
    """The task of `checkpoint` (a stem: base_<base>, rl_<run>) in `tasks` (checkpoint_tasks of params)."""
    check(checkpoint in tasks, checkpoint.split("_", 1)[-1],
          f"{checkpoint}: no such base or run in params (bases, runs, runs_noeval, runs_orm, runs_prm)")
    return tasks[checkpoint]


def run_inputs(runs: Iterable[str], tasks: dict[str, str], metrics: bool = True) -> list[str]:
    """The files `load_run` reads for each run, in order, without repeats (with `metrics`, also the
    eval stage's per-problem outcomes)."""
    out: list[str] = []
    for run in runs:
        task = task_of(tasks, f"rl_{run}")
        extra = (run_metrics_path(run, task=task), run_outcomes_path(run, task=task)) if metrics else ()
        for path in (history_path(run, task=task), summary_path(run, task=task)) + extra:
            if path not in out:
                out.append(path)
    return out
