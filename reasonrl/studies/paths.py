"""Where the stages write a run's, a checkpoint's and a study's outputs, relative to the repository root."""

from __future__ import annotations

from collections.abc import Iterable

# `folder` is where the stages write: reports/, or reports/headline/ for the headline chain

def history_path(run: str, folder: str = "reports") -> str:
    return f"{folder}/rl/{run}.csv"


def summary_path(run: str, folder: str = "reports") -> str:
    return f"{folder}/rl/{run}.json"


def run_metrics_path(run: str, folder: str = "reports") -> str:
    return f"{folder}/eval/rl_{run}.json"


def base_metrics_path(base: str) -> str:
    return f"reports/eval/base_{base}.json"


def study_metrics_path(study: str) -> str:
    return f"reports/metrics/{study}.json"


def manifest_path(study: str) -> str:
    return f"reports/{study}/manifest.json"


def outcomes_path(checkpoint: str, folder: str = "reports") -> str:
    """Per-problem greedy outcomes of a checkpoint (models/<checkpoint>.pt), written by its eval stage."""
    return f"{folder}/eval/outcomes_{checkpoint}.csv"


def run_outcomes_path(run: str, folder: str = "reports") -> str:
    return outcomes_path(f"rl_{run}", folder)


def answers_dir(study: str) -> str:
    """The study's answer files, one flat JSON per compared pair (a DVC metrics directory)."""
    return f"reports/{study}/answers"


def answer_path(study: str, pair: str) -> str:
    return f"{answers_dir(study)}/{pair}.json"


def run_inputs(runs: Iterable[str], metrics: bool = True) -> list[str]:
    """The files `load_run` reads for each run, in order, without repeats (with `metrics`, also the
    eval stage's per-problem outcomes)."""
    out: list[str] = []
    for run in runs:
        extra = (run_metrics_path(run), run_outcomes_path(run)) if metrics else ()
        for path in (history_path(run), summary_path(run)) + extra:
            if path not in out:
                out.append(path)
    return out
