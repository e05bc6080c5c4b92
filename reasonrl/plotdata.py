"""Long-format plot data for `dvc plots show`: one row per (run, step) with the run in a column.

One Vega-Lite template (.dvc/plots/runs.json) then colours every run of a study distinctly, and a
study's plot in dvc.yaml names one file, not one line per run: a run added to a study shows up
without an edit there.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable
from dataclasses import dataclass

EVAL_PREFIX = "eval/"  # columns read from the in-training evaluations (summary["evals"]), not the step rows


@dataclass(frozen=True)
class StudyPlot:
    section: str  # dotted params section naming the study's runs (anywhere inside, by name)
    columns: tuple[str, ...]  # per-step history columns, or eval/<key> of the in-training evaluations


# What each study's plot shows: what varies between its runs (SFT's true reward is 1 at every step, so
# the methods plot shows the in-training greedy accuracy, which every method has).
STUDY_PLOTS = {
    "methods": StudyPlot("studies.methods", ("eval/acc",)),
    "zero": StudyPlot("studies.zero", ("rollout/think_rate", "eval/acc")),
    "hacking": StudyPlot("studies.hacking", ("reward/proxy", "reward/true")),
    "ablations": StudyPlot("studies.ablations", ("rollout/zero_var_frac", "rollout/length_wrong")),
}


def undefined(column: str, true_reward):
    """Whether a step's `column` is no measurement (elementwise for a Series of true rewards): the loop
    records the mean length of wrong responses as 0 at a step whose samples were all correct (mean true
    reward 1), where there was no wrong response to measure."""
    return (column == "rollout/length_wrong") & (true_reward >= 1)


def runs_named(node, defined: Iterable[str]) -> list[str]:
    """Every string inside `node` (nested dicts and lists) that names a defined run, first-seen order."""
    defined, out = set(defined), []

    def walk(x):
        if isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
        elif isinstance(x, str) and x in defined and x not in out:
            out.append(x)

    walk(node)
    return out


def study_runs(params: dict, plot: StudyPlot, defined: Iterable[str]) -> list[str]:
    """The runs plot.section names; a missing section is an error naming it."""
    node = params
    for part in plot.section.split("."):
        if not isinstance(node, dict) or part not in node:
            raise KeyError(f"params: missing section {plot.section!r}")
        node = node[part]
    return runs_named(node, defined)


def long_rows(run: str, history: list[dict], evals: list[dict], columns: tuple[str, ...]) -> list[dict]:
    """Rows {step, run, <columns>} of one run: step rows for history columns, evaluation rows for eval/
    columns (a row holds only the columns measured at that step; the others stay empty)."""
    steps = [c for c in columns if not c.startswith(EVAL_PREFIX)]
    evs = [c for c in columns if c.startswith(EVAL_PREFIX)]
    rows = [{"step": int(r["step"]), "run": run,
             **{c: "" if undefined(c, float(r.get("reward/true") or 0)) else r[c] for c in steps}}
            for r in history] if steps else []
    rows += [{"step": int(e["step"]), "run": run, **{c: e[c[len(EVAL_PREFIX):]] for c in evs}}
             for e in evals] if evs else []
    return sorted(rows, key=lambda r: r["step"])  # stable: at one step, the step row before the evaluation


def study_csv(plot: StudyPlot, runs: list[str], read: Callable[[str], tuple[list[dict], list[dict]]]) -> str:
    """CSV of every run's rows; `read(run)` returns (history rows, evaluations) of that run."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, ["step", "run", *plot.columns], lineterminator="\n")
    writer.writeheader()
    for run in runs:
        writer.writerows(long_rows(run, *read(run), plot.columns))
    return buf.getvalue()
