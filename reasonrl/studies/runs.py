"""An RL run's outputs loaded for a study (its training history, in-training evaluations, summary and
eval metrics), and the small summaries of them the tables print."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..io import read_json
from .paths import history_path, run_metrics_path, summary_path, task_of

TAIL = 0.1  # the "final" value of a per-step curve: mean over the last 10% of its steps (at least one)


@dataclass
class Run:
    name: str
    history: pd.DataFrame  # one row per step, indexed by step; columns as in the RL record
    evals: pd.DataFrame  # one row per in-training evaluation, indexed by step; nested keys joined by "."
    summary: dict  # reports/rl/<task>/<run>.json
    metrics: dict | None  # reports/eval/<task>/rl_<run>.json (the eval@ stage), when asked for

    @property
    def job(self) -> dict:
        return self.summary["job"]


def evals_frame(evals: list[dict]) -> pd.DataFrame:
    """In-training evaluations as a frame indexed by step ({"by_k": {"3": x}} -> column "by_k.3", for a task
    whose difficulty is k)."""
    if not evals:
        return pd.DataFrame(index=pd.Index([], name="step"))
    return pd.json_normalize(evals, sep=".").set_index("step").sort_index()


def load_run(root: Path, name: str, task: str, metrics: bool = True) -> Run:
    history = pd.read_csv(root / history_path(name, task=task)).set_index("step").sort_index()
    summary = read_json(root / summary_path(name, task=task))
    return Run(name=name, history=history, evals=evals_frame(summary["evals"]), summary=summary,
               metrics=read_json(root / run_metrics_path(name, task=task)) if metrics else None)


def load_runs(root: Path, names: Iterable[str], tasks: dict[str, str], metrics: bool = True) -> dict[str, Run]:
    """The runs `names`, each from its task's folders (`tasks`: paths.checkpoint_tasks of params)."""
    return {name: load_run(root, name, task_of(tasks, f"rl_{name}"), metrics) for name in dict.fromkeys(names)}


def tail_mean(series: pd.Series, frac: float = TAIL) -> float:
    """Mean of the last `frac` of a per-step series (at least its last value)."""
    return float(series.iloc[-max(1, math.ceil(len(series) * frac)):].mean())


def eval_column(run: Run, column: str) -> pd.Series:
    if column not in run.evals:
        raise KeyError(f"{summary_path(run.name, task=run.job['task'])}: the run's evaluations have no {column!r} "
                       f"(its eval is {run.job.get('eval')!r}); give the run the eval this study needs")
    return run.evals[column]


def seed_count(n: int) -> str:
    return f"{n} seed" + ("s" if n != 1 else "")


def describe(run: Run, keys: Iterable[str]) -> str:
    """'name (key value, key value)' from the run's job, for tables and the index."""
    return f"{run.name} (" + ", ".join(f"{k} {run.job[k]}" for k in keys) + ")"



def mean_sd(values: Iterable[float], fmt: str = ".3f") -> str:
    """'m ± sd' (sample standard deviation; one value gives just the value)."""
    s = pd.Series(list(values), dtype=float)
    return f"{s.mean():{fmt}}" if len(s) < 2 else f"{s.mean():{fmt}} ± {s.std():{fmt}}"


def mean_mix(mixes: list[dict[str, float]]) -> dict[str, float]:
    """The outcome-type shares averaged over several evaluations (types in the first one's order)."""
    return {t: sum(m[t] for m in mixes) / len(mixes) for t in mixes[0]}




def as_runs(value: str | list[str]) -> list[str]:
    """An arm named by one run or by a list of runs (one per seed)."""
    return [value] if isinstance(value, str) else list(value)
