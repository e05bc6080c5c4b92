"""Study `methods`: SFT vs RFT vs GRPO from the same base, several seeds each.

Accuracy, true reward, entropy and length against step (mean and 95% CI band over seeds), the final
greedy accuracy per method with its 95% run-level t-interval, each method against
the base and against the reference method (paired by seed and problem: reports/methods/answers/), and
the outcome-type mix before (the base) and after."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd

from ..config import check
from ..io import read_json, write_json
from ..stats import SHARE, fmt_ci, fmt_share
from . import pair_name
from .answers import MEASURES, Answer, answers_table, arm_interval, arm_outcomes, check_measure, run_arm, write_answers
from .figures import (
    FAILURE_BAR,
    FAILURE_TITLE,
    RANGES,
    SEED_RANGE,
    SMOOTH_NOTE,
    Panel,
    evaluated,
    failure_figure,
    palette,
    panel_figure,
    smoothed,
)
from .floors import chance, guess_sets
from .manifest import Manifest, manifest_answers
from .markdown import md_table, write_markdown
from .paths import (
    answers_dir,
    base_metrics_path,
    manifest_path,
    outcomes_path,
    run_inputs,
    study_metrics_path,
    task_of,
)
from .runs import as_runs, eval_column, load_runs, mean_mix, mean_sd, tail_mean

SECTION = "studies.methods"
GUESS_ROLE = "val_edge"  # where every run evaluates in training: its figures' random guess, on its task's set
OUT = "reports/methods"


@dataclass
class Config:
    base: str = "cot"  # the starting base: its eval_base@ metrics are the "before"
    runs: dict[str, list[str] | str] = field(default_factory=dict)  # method label -> its runs (one per seed)
    reference: str | None = None  # the arm every other method is compared with (None: the first)
    set: str = "edge"  # the test set of the eval stages' outcome files the answers are computed on
    measure: str = "correct"  # the per-problem outcome compared: a key of MEASURES (greedy or sampled accuracy)
    equivalence: float = 0.01  # half-width of the equivalence region (set from params studies.equivalence)
    tasks: dict[str, str] = field(default_factory=dict)  # checkpoint -> its task, from params (stage.load_config)

    def __post_init__(self):
        check_measure(self.measure, self.set)
        self.runs = {label: as_runs(rs) for label, rs in self.runs.items()}
        check(bool(self.runs) and all(self.runs.values()), "runs", "need at least one method with one run")
        check(self.reference is None or self.reference in self.runs, "reference",
              f"{self.reference!r} is not one of the arms {list(self.runs)}")

    @property
    def ref(self) -> str:
        return self.reference or next(iter(self.runs))


def all_runs(cfg: Config) -> list[str]:
    return [r for rs in cfg.runs.values() for r in rs]


def base_task(cfg: Config) -> str:
    return task_of(cfg.tasks, f"base_{cfg.base}")


def base_outcomes(cfg: Config) -> str:
    return outcomes_path(f"base_{cfg.base}", task=base_task(cfg))


def inputs(cfg: Config) -> list[str]:
    return [base_metrics_path(cfg.base, base_task(cfg)), base_outcomes(cfg), *run_inputs(all_runs(cfg), cfg.tasks),
            *guess_sets(all_runs(cfg), cfg.tasks, GUESS_ROLE)]


def outputs(cfg: Config) -> list[str]:
    return [f"{OUT}/curves.png", f"{OUT}/failure_mix.png", f"{OUT}/table.md", manifest_path("methods"),
            study_metrics_path("methods"), answers_dir("methods")]


def study_answers(cfg: Config, root: Path, runs: dict) -> tuple[list[Answer], dict]:
    """Each method against the base, then each other method against the reference; and each arm's
    interval (the base's under its own label)."""
    base_label = f"base {cfg.base}"
    base = arm_outcomes(root, base_label, {None: base_outcomes(cfg)}, cfg.set, cfg.measure)
    arms = {m: run_arm(root, m, rs, runs, cfg.set, cfg.measure) for m, rs in cfg.runs.items()}
    out = [Answer.of(pair_name("base", m), base_label, m, base, arms[m], cfg.equivalence)
           for m in cfg.runs]
    out += [Answer.of(pair_name(cfg.ref, m), cfg.ref, m, arms[cfg.ref], arms[m], cfg.equivalence)
            for m in cfg.runs if m != cfg.ref]
    intervals = {base_label: arm_interval(base)} | {m: arm_interval(a) for m, a in arms.items()}
    return out, intervals


def curves_figure(cfg: Config, runs: dict, path: Path, guess: float | None = None) -> None:
    colors = palette(cfg.runs)

    def curves(make, column, sampled_only=False):
        cut = {"bounds": RANGES[column]} if make is smoothed else {}
        return [make(m, [runs[r].history[column] if column in runs[r].history else eval_column(runs[r], column)
                         for r in rs], colors[m], **cut)
                for m, rs in cfg.runs.items() if not (sampled_only and runs[rs[0]].job["method"] == "sft")]

    seeds = "; ".join(f"{m} " + ", ".join(map(str, sorted({runs[r].job["seed"] for r in rs})))
                      for m, rs in cfg.runs.items())
    panel_figure([
        Panel("Verified greedy accuracy on the validation set during training", "accuracy (fraction correct)",
              curves(evaluated, "acc"), guess=guess),
        Panel("True (verified) reward of the training samples (SFT: gold traces, not drawn)",
              "mean reward per sample (0–1)",
              curves(smoothed, "reward/true", sampled_only=True)),
        Panel("Token entropy of the training responses (SFT: of the gold traces)", "entropy (nats per token)",
              curves(smoothed, "rollout/entropy")),
        Panel("Response length (SFT: of the gold traces)", "characters per response",
              curves(smoothed, "rollout/length")),
    ], f"{' vs '.join(cfg.runs)} from base {cfg.base}: {SEED_RANGE} (seeds: {seeds})"
       f" ({SMOOTH_NOTE})", path)


def final_acc(run, cfg: Config) -> float:
    """A run's final accuracy on cfg.set by cfg.measure, from its eval stage's summary."""
    m = run.metrics[cfg.set]
    return m["greedy"]["acc"] if cfg.measure == "correct" else m["sampled_acc"]


def method_row(cfg: Config, label: str, names: list[str], runs: dict, iv) -> dict:
    acc = [final_acc(runs[r], cfg) for r in names]
    sampled = runs[names[0]].job["method"] != "sft"
    return {"method": label, "seeds": str(len(names)), "final accuracy [95% CI]": fmt_share(iv),
            "per-seed min": min(acc), "per-seed max": max(acc),
            "true reward (last 10%)": mean_sd(tail_mean(runs[r].history["reward/true"]) for r in names)
            if sampled else "gold (≡ 1)",
            "entropy (nats)": mean_sd(tail_mean(runs[r].history["rollout/entropy"]) for r in names),
            "length (chars)": mean_sd((tail_mean(runs[r].history["rollout/length"]) for r in names), ".1f")}


def method_metrics(cfg: Config, names: list[str], runs: dict, iv) -> dict:
    acc = pd.Series([final_acc(runs[r], cfg) for r in names])
    tails = {k: float(pd.Series([tail_mean(runs[r].history[c]) for r in names]).mean())
             for k, c in (("true_reward", "reward/true"), ("entropy", "rollout/entropy"), ("length", "rollout/length"))}
    return {"acc_mean": float(acc.mean()), "acc_ci_lo": iv.lo, "acc_ci_hi": iv.hi,
            "acc_sd": float(acc.std()) if len(acc) > 1 else 0.0,
            "acc_min": float(acc.min()), "acc_max": float(acc.max()), **tails,
            "failure_mix": mean_mix([runs[r].metrics[cfg.set]["failure_mix"] for r in names])}


def report(cfg: Config, root: Path) -> None:
    runs = load_runs(root, all_runs(cfg), cfg.tasks)
    base = read_json(root / base_metrics_path(cfg.base, base_task(cfg)))[cfg.set]
    answers, ivs = study_answers(cfg, root, runs)
    out = root / OUT
    curves_figure(cfg, runs, out / "curves.png", chance(runs[all_runs(cfg)[0]].job, root, inputs(cfg)))
    base_label = f"base {cfg.base}"
    metrics = {"base": {"acc": ivs[base_label].mean, "acc_ci_lo": ivs[base_label].lo,
                        "acc_ci_hi": ivs[base_label].hi, "failure_mix": base["failure_mix"]},
               **{m: method_metrics(cfg, rs, runs, ivs[m]) for m, rs in cfg.runs.items()}}
    for x in answers[:len(cfg.runs)]:  # each method against the base: both arms' answer-only accuracy
        if x.answer_only:
            metrics["base"]["acc_answer"], metrics[x.b]["acc_mean_answer"] = x.answer_only.a, x.answer_only.b
    before = f"before: base {cfg.base}"
    mixes = {before: base["failure_mix"]} | {
        f"after {m} (mean of {len(rs)})": metrics[m]["failure_mix"] for m, rs in cfg.runs.items()}
    # the bars are greedy outcome types, judged by the answer: their error bars are answer-only greedy intervals
    greedy = study_answers(replace(cfg, measure="correct_answer"), root, runs)[1]
    ci = {before: greedy[base_label]} | {f"after {m} (mean of {len(rs)})": greedy[m] for m, rs in cfg.runs.items()}
    failure_figure(mixes, f"{FAILURE_TITLE}, before and after RL; error bar: {FAILURE_BAR}", out / "failure_mix.png",
                   ci, cfg.set)
    iv = ivs[base_label]
    first = {"method": f"{base_label} (before)", "seeds": "—", "final accuracy [95% CI]": fmt_share(iv)}
    table = pd.DataFrame([first] + [method_row(cfg, m, rs, runs, ivs[m]) for m, rs in cfg.runs.items()])
    mix_table = pd.DataFrame([{"model": k, **v} for k, v in mixes.items()])
    write_markdown(out / "table.md", "Study: SFT vs RFT vs GRPO", answer(cfg, metrics, answers), [
        md_table(table, "Final accuracy per method",
                 f"{MEASURES[cfg.measure].capitalize()} on the {cfg.set} set from the eval stages' per-problem "
                 "outcomes: the mean over "
                 "seeds and problems with its 95% t-interval (the seed is the unit); per-seed min/max; the other "
                 "columns are means (± sd over seeds) over the last 10% of training steps."),
        answers_table(answers, "Paired comparisons", f"{MEASURES[cfg.measure].capitalize()} on the {cfg.set} set."),
        md_table(mix_table, f"Outcome types of greedy answers (share of the {cfg.set} set)",
                 "After: mean over each method's seeds.")])
    write_json(root / study_metrics_path("methods"), metrics)
    write_answers(root, "methods", answers)
    manifest(cfg, runs, metrics, answers).write(root)


ACC_KEYS = ("acc_mean", "acc_ci_lo", "acc_ci_hi")


def answer(cfg: Config, metrics: dict, answers: list[Answer]) -> str:
    accs = ", ".join(f"{m} {fmt_ci(*(metrics[m][k] for k in ACC_KEYS), bounds=SHARE)}"
                     for m in cfg.runs)
    return (f"Final {MEASURES[cfg.measure]} on {cfg.set} [95% CI]: base {metrics['base']['acc']:.3f}; {accs}. "
            + "; ".join(x.text for x in answers) + ".")


def manifest(cfg: Config, runs: dict, metrics: dict, answers: list[Answer]) -> Manifest:
    accs = ", ".join(f"{m} {fmt_ci(*(metrics[m][k] for k in ACC_KEYS), bounds=SHARE)}"
                     for m in cfg.runs)
    correct = ", ".join(f"{m} {metrics[m]['failure_mix']['correct']:.2f}" for m in cfg.runs)
    return Manifest(
        "methods", "SFT vs RFT vs GRPO", "Which training method reaches the highest accuracy, and how do "
        "entropy and length move while it trains?", answer(cfg, metrics, answers),
        [f"{m}: " + ", ".join(f"{r} (seed {runs[r].job['seed']})" for r in rs) for m, rs in cfg.runs.items()],
        [("methods/curves.png", f"Verified accuracy, true reward, entropy and length against step per method "
          f"({SEED_RANGE}; {SMOOTH_NOTE}); final accuracy {accs} (base {metrics['base']['acc']:.3f})."),
         ("methods/failure_mix.png", f"Outcome types of greedy answers before and after each method, judged by the "
          f"answer alone (answer-only), with the {FAILURE_BAR}; answer-only correct share base "
          f"{metrics['base']['failure_mix']['correct']:.2f} → {correct}.")],
        ["methods/table.md"], manifest_answers(answers))
