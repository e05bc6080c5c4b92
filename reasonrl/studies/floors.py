"""What a reader holds a curve against: a random guess's accuracy on a run's evaluation set, and the length
of a gold response. Both come from the Task contract (`Problem.random_guess`, `Problem.target`), so any task
registered in reasonrl.tasks gets them, and a report that draws them depends on reasonrl/tasks."""

from __future__ import annotations

import random
from collections.abc import Iterable
from pathlib import Path

from ..config import check
from ..io import read_jsonl
from ..tasks import distribution, get_task
from .paths import task_of

GOLD_DRAWS = 256  # problems drawn from a run's training distribution to average its gold length over


def eval_set(task: str, role: str, folder: str = "data") -> str:
    """The file of a task's evaluation set by role, as the data stage names it (reasonrl.pipeline.data_path,
    which this module does not import: it would make every report stage depend on the pipeline's torch code)."""
    return f"{folder}/{task}_{role}.jsonl"


def guess_sets(runs: Iterable[str], tasks: dict[str, str], role: str) -> list[str]:
    """The evaluation set by `role` of each task the `runs` train (`tasks`: paths.checkpoint_tasks of params), in
    first-seen order: a study's figures draw the random guess of the run they plot, so they read its task's set."""
    return list(dict.fromkeys(eval_set(task_of(tasks, f"rl_{run}"), role) for run in runs))


def chance(job: dict, root: Path, declared: list[str]) -> float | None:
    """pass@1 of a uniform guess among the answers each prompt allows, averaged over the run's evaluation
    set; None where the run evaluates on no set. The set must be one of the study's `declared` inputs (its
    stage's deps in dvc.yaml): a run moved to another set fails here rather than leave a dep unlisted."""
    path = eval_set(job["task"], job.get("eval", ""))
    if job.get("eval", "none") == "none":
        return None
    check(path in declared, "eval", f"the run evaluates on {path}, which the study's inputs do not list {declared}")
    problems = [get_task(d["task"]).from_dict(d) for d in read_jsonl(root / path)]
    return sum(p.random_guess(1) for p in problems) / len(problems) if problems else None


def gold_length(job: dict, seed: int = 0) -> float | None:
    """Mean characters of a gold response (trace, answer mark, answer, end) over problems drawn from the
    run's training distribution (a fixed seed: the same number every time); None without a spec."""
    if not all(key in job for key in ("n_range", "k_min", "k_max")):
        return None
    task, rng = get_task(job["task"]), random.Random(seed)
    spec = distribution(task, job["n_range"], job["k_min"], job["k_max"])
    return sum(len(task.sample(rng, spec).target("cot")) for _ in range(GOLD_DRAWS)) / GOLD_DRAWS
