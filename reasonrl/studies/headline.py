"""Study `headline_<task>`: the headline run (the `rl:` defaults with the top-level `method`) from each of
several independently trained bases of one task, against its own base (a run's task is its base's). One report
per task (stage report_headline_<task>), so that a first result or a `-S method=...` experiment on one task
trains that task's runs alone; every task's runs write their records under reports/headline/ (rl/, eval/).

Each base seed is one pairing unit: base i and the run started from it share a seed index, so the pooled
answer resamples base seeds and problems together (reports/headline_<task>/answers/), and each base's own
comparison (problems only) shows whether the conclusion holds from every base. Measured on each test set
of the eval stages, by each per-problem measure (greedy or sampled accuracy)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..config import check
from ..io import read_json, write_json
from ..stats import fmt_ci
from . import pair_name
from .answers import MEASURES, Answer, answers_table, arm_interval, arm_outcomes, check_measure, write_answers
from .figures import SHARE_YLIM, arm_style, guess_line, save_figure, verified_floor
from .manifest import Manifest, manifest_answers
from .markdown import md_table, write_markdown
from .paths import (
    HEADLINE_TASKS,
    answers_dir,
    headline_study,
    manifest_path,
    outcomes_path,
    run_metrics_path,
    run_outcomes_path,
    study_metrics_path,
    summary_path,
    task_of,
)

SECTION = "studies.headline"
OUT = "reports/headline"  # where the headline runs' stages write (rl/, eval/), every task's
TASKS, study = HEADLINE_TASKS, headline_study  # the tasks with a report each, and each one's study name


@dataclass
class Config:
    runs: dict[str, str] = field(default_factory=dict)  # headline run -> the base (bases.<name>) it starts from
    sets: list[str] = field(default_factory=lambda: ["edge", "in"])  # test sets the answers are computed on
    measures: list[str] = field(default_factory=lambda: ["sampled", "correct"])  # keys of MEASURES
    equivalence: float = 0.01  # half-width of the equivalence region (set from params studies.equivalence)
    tasks: dict[str, str] = field(default_factory=dict)  # checkpoint -> its task, from params (stage.load_config)
    task: str | None = None  # the task this report pools, from the stage's argument (not a params key)

    def __post_init__(self):
        check(self.task is None or self.task in TASKS, "task", f"{self.task!r} is not one of {list(TASKS)}")
        check(bool(self.runs), "runs", "need at least one headline run and its base")
        check(len(set(self.runs.values())) == len(self.runs), "runs",
              "each run needs a base of its own (the pairing unit)")
        check(bool(self.sets) and bool(self.measures), "sets", "need at least one set and one measure")
        for s in self.sets:
            for m in self.measures:
                check_measure(m, s)


def task_of_report(cfg: Config) -> str:
    check(cfg.task is not None, "stages/report_headline.py", "expects <task>, the task whose runs it pools",
          f"run it as dvc.yaml does: python stages/report_headline.py {TASKS[0]}")
    return cfg.task


def pairs(cfg: Config) -> list[tuple[str, str]]:
    """[(run, base), ...]: the headline runs that start from a base of the report's task, in params order."""
    task = task_of_report(cfg)
    out = [(run, base) for run, base in cfg.runs.items() if task_of(cfg.tasks, f"base_{base}") == task]
    check(bool(out), "runs", f"no headline run starts from a {task} base", f"or drop dvc.yaml's report_headline_{task}")
    return out


def inputs(cfg: Config) -> list[str]:
    out = []
    for run, base in pairs(cfg):
        out += [summary_path(run, OUT), run_metrics_path(run, OUT), run_outcomes_path(run, OUT),
                outcomes_path(f"base_{base}", task=cfg.task)]
    return out


def outputs(cfg: Config) -> list[str]:
    name = study(task_of_report(cfg))
    return [f"reports/{name}/before_after.png", f"reports/{name}/table.md", manifest_path(name),
            study_metrics_path(name), answers_dir(name)]


def method_of(cfg: Config, root: Path) -> str:
    methods = {read_json(root / summary_path(r, OUT))["job"]["method"] for r, _ in pairs(cfg)}
    check(len(methods) == 1, "runs", f"the headline runs were trained with different methods {sorted(methods)}",
          "rerun them: they all take the top-level `method`")
    return methods.pop().upper()


def comparisons(cfg: Config, root: Path, method: str, task: str, runs: list[tuple[str, str]], set_name: str,
                measure: str):
    """(pooled answer, per-base answers, pooled base and run intervals, per-base (base, run) intervals):
    one task's runs against their bases, paired by base index and problem. The pooled interval's unit is the
    base (df = bases - 1); a per-base one has a single run and is over problems only."""
    before = arm_outcomes(root, "base", {i: outcomes_path(f"base_{b}", task=task) for i, (_, b) in enumerate(runs)},
                          set_name, measure)
    after = arm_outcomes(root, method, {i: run_outcomes_path(r, OUT) for i, (r, _) in enumerate(runs)},
                         set_name, measure)
    # named for the role, not the method: `dvc exp show` lines up experiments that changed `method`
    name = pair_name("base", "headline", task, set_name, measure)
    pooled = Answer.of(name, "base", method, before, after, cfg.equivalence)
    per_base, per_base_ivs = [], []
    for i, (run, base) in enumerate(runs):
        a = arm_outcomes(root, f"base {base}", {i: outcomes_path(f"base_{base}", task=task)}, set_name, measure)
        b = arm_outcomes(root, f"{method} {run}", {i: run_outcomes_path(run, OUT)}, set_name, measure)
        pair = pair_name(f"base {base}", run, set_name, measure)
        per_base.append(Answer.of(pair, a.label, b.label, a, b, cfg.equivalence))
        per_base_ivs.append((arm_interval(a), arm_interval(b)))
    return pooled, per_base, arm_interval(before), arm_interval(after), per_base_ivs


def figure(cfg: Config, method: str, cells: dict, path: Path, chance: dict | None = None) -> None:
    """One panel per (task, set, measure), all on one 0–1 axis (siblings compare at a glance; a fitted axis made
    −0.004 near the ceiling look like a collapse): base and run accuracy per base seed and pooled, verified
    (filled, with 95% CIs) and answer-only (a hollow ring around it). The verified floor is 0; the random guess is
    an answer-only reference. Each run's gain over its base is printed along the panel's foot, clear of the markers.
    `chance`: (task, set) -> the random-guess accuracy."""
    keys = list(cells)
    ncols = min(2, len(keys))
    nrows = -(-len(keys) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(6.2 * ncols, 4.4 * nrows), squeeze=False)
    for ax in axes.flat[len(keys):]:
        ax.set_visible(False)
    for ax, key in zip(axes.flat, keys):
        pooled, per_base, iv_a, iv_b, per_base_ivs = cells[key]
        labels = [*(c.a.removeprefix("base ") for c in per_base), "pooled"]
        x = np.arange(len(labels))
        pts_a = [(a.mean, a.lo, a.hi) for a, _ in per_base_ivs] + [(iv_a.mean, iv_a.lo, iv_a.hi)]
        pts_b = [(b.mean, b.lo, b.hi) for _, b in per_base_ivs] + [(iv_b.mean, iv_b.lo, iv_b.hi)]
        # an accuracy lies in [0, 1]: a t-interval over five bases may not, so its bar is drawn cut there
        pts_a = [(m, max(lo, 0.0), min(hi, 1.0)) for m, lo, hi in pts_a]
        pts_b = [(m, max(lo, 0.0), min(hi, 1.0)) for m, lo, hi in pts_b]
        answer_only = [c.answer_only for c in [*per_base, pooled]]
        for shift, pts, name, side in ((-0.15, pts_a, "base", "a"), (0.15, pts_b, method, "b")):
            style = arm_style(name)
            m = np.array([p[0] for p in pts])
            err = np.array([[p[0] - p[1] for p in pts], [p[2] - p[0] for p in pts]])
            ax.errorbar(x + shift, m, yerr=err, fmt=style["marker"], color=style["color"], capsize=4,
                        label=f"{name} (verified)")
            if all(answer_only):  # a ring wider than the dot, on top: where the two agree it circles the dot
                ax.plot(x + shift, [getattr(c, side) for c in answer_only], ls="none", marker=style["marker"],
                        mfc="none", color=style["color"], ms=12, mew=1.2, zorder=3,
                        label=f"{name} (answer-only, ring)")
        effects = [c.cmp for c in per_base] + [pooled.cmp]
        for xi, c in zip(x, effects):  # along the foot of the panel, never on a marker
            ax.annotate(f"{c.effect:+.3f}", (xi, 0), xycoords=("data", "axes fraction"), xytext=(0, 3),
                        textcoords="offset points", ha="center", va="bottom", fontsize=8,
                        bbox={"fc": "white", "ec": "0.8", "pad": 1.5, "lw": 0.5})
        task, set_name, measure = key
        verified_floor(ax)
        guess = (chance or {}).get((task, set_name))
        if guess is not None:
            guess_line(ax, guess, "random guess (answer-only reference; verifies 0)")
        ax.set(title=f"{task}, {set_name}: {MEASURES[measure]}", xticks=x, xticklabels=labels,
               xlabel="starting base (number at the foot: the run's verified gain)",
               ylabel="accuracy (fraction correct)", ylim=SHARE_YLIM, xlim=(-0.6, len(labels) - 0.4))
        ax.grid(alpha=0.3)
    legend = {}  # every panel's entries once
    for ax in axes.flat:
        for h, name in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(name, h)
    fig.legend(list(legend.values()), list(legend), loc="upper center", ncols=min(len(legend), 3),
               bbox_to_anchor=(0.5, 1 - 0.74 / fig.get_figheight()), fontsize=9)
    tasks = ", ".join(dict.fromkeys(task for task, _, _ in keys))
    fig.suptitle(f"Headline, {tasks}: {method} against its own base, per base seed and pooled (95% CIs: per base over "
                 "problems only, one RL run per base,\nnot the run-to-run spread; pooled over bases, df = bases − 1)")
    fig.tight_layout(rect=(0, 0, 1, 1 - 1.1 / fig.get_figheight()))
    save_figure(fig, path)


def answer(method: str, cells: dict) -> str:
    parts = []
    for (task, set_name, measure), (pooled, per_base, *_) in cells.items():
        signs = {c.side for c in per_base}
        held = "on every base" if signs == {1} else f"per base: {', '.join(c.text for c in per_base)}"
        parts.append(f"{task}, {MEASURES[measure]} on {set_name} ({len(per_base)} bases): {pooled.text} ({held})")
    return f"{method} from each base — " + "; ".join(parts) + "."


def summary(method: str, cells: dict, measure: str) -> str:
    """The front page's paragraph: the pooled comparison on one measure, per task and set."""
    parts = [f"{t} {s}: {pooled.text}" for (t, s, m), (pooled, *_) in cells.items() if m == measure]
    return f"{method} against its own base, {MEASURES[measure]} pooled over bases — " + "; ".join(parts) + "."


def corruption(c: Answer) -> str:
    """The trace-corruption rate of a pair, base → run: the share judged right by its answer but not verified (a wrong
    step on the way), answer-only minus verified of the same outcomes; "—" without answer-only outcomes."""
    if not c.answer_only:
        return "—"
    return f"{c.answer_only.a - c.cmp.a:.3f} → {c.answer_only.b - c.cmp.b:.3f}"


def title(method: str, cfg: Config) -> str:
    """'Headline: GRPO from 5 hop bases'."""
    n = len(pairs(cfg))
    return f"Headline: {method} from {n} {cfg.task} base{'s' * (n != 1)}"


def report(cfg: Config, root: Path) -> None:
    method, task, runs = method_of(cfg, root), task_of_report(cfg), pairs(cfg)
    name = study(task)
    cells = {(task, s, m): comparisons(cfg, root, method, task, runs, s, m) for s in cfg.sets for m in cfg.measures}
    # a random guess's accuracy as the eval stage measured it on that set (its run's metrics, an input)
    evals = read_json(root / run_metrics_path(runs[0][0], OUT))
    figure(cfg, method, cells, root / "reports" / name / "before_after.png",
           {(t, s): evals[s]["random_baseline"]["1"] for t, s, _ in cells})
    pooled = [c[0] for c in cells.values()]
    per_base = [a for c in cells.values() for a in c[1]]
    rows = [{"task": t, "set": s, "measure": MEASURES[m], "base": c.a.removeprefix("base "),
             "run": c.b.removeprefix(f"{method} "), "base acc.": c.cmp.a, f"{method} acc.": c.cmp.b,
             "gain [95% CI]": fmt_ci(c.cmp.effect, c.cmp.ci_lo, c.cmp.ci_hi, sign=True, bounds=c.bounds),
             "answer-only base → run": f"{c.answer_only.a:.3f} → {c.answer_only.b:.3f}" if c.answer_only else "—",
             "answer right, trace wrong: base → run": corruption(c)}
            for (t, s, m), (_, pb, *_) in cells.items() for c in pb]
    text = answer(method, cells)
    write_markdown(root / "reports" / name / "table.md", title(method, cfg), text, [
        answers_table(pooled, "Pooled over bases (paired by base seed and problem)",
                      "Each base and the run started from it share a seed index."),
        md_table(pd.DataFrame(rows), "Per base",
                 "Each base's own comparison, its interval over problems only. Answer right, trace wrong: the share "
                 "judged right by its answer alone but not verified (a wrong step on the way to the right answer), "
                 "answer-only minus verified.")])
    write_json(root / study_metrics_path(name), {
        f"{t}_{s}_{m}": {"base": iv_a.mean, "base_ci": [iv_a.lo, iv_a.hi], "run": iv_b.mean,
                         "run_ci": [iv_b.lo, iv_b.hi], "per_base_gain": [c.cmp.effect for c in pb]}
        | ({"base_answer": p.answer_only.a, "run_answer": p.answer_only.b} if p.answer_only else {})
        for (t, s, m), (p, pb, iv_a, iv_b, _) in cells.items()})
    write_answers(root, name, pooled)
    Manifest(name, title(method, cfg),
             "Does the headline method improve on its starting base, and does that hold from every base seed?",
             text, [f"{r} from base {b}" for r, b in runs],
             [(f"{name}/before_after.png", f"{method} against its base per base seed and pooled; pooled: "
               + "; ".join(f"{t}, {s} {MEASURES[m]} {c[0].cmp.a:.3f} → {c[0].cmp.b:.3f}"
                           for (t, s, m), c in cells.items()))],
             [f"{name}/table.md"], manifest_answers(pooled + per_base),
             summary=summary(method, cells, cfg.measures[0])).write(root)
