"""Study `methods`: SFT vs RFT vs GRPO from the same base, several seeds each.

Accuracy, true reward, entropy and length against step (mean and min–max band over seeds), the final
greedy accuracy per method (mean ± sd), and the outcome-type mix before (the base) and after."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..config import check
from ..io import read_json, write_json
from .common import (
    Manifest,
    Panel,
    base_metrics_path,
    eval_column,
    evaluated,
    failure_figure,
    load_runs,
    manifest_path,
    md_table,
    mean_mix,
    mean_sd,
    palette,
    panel_figure,
    run_inputs,
    smoothed,
    study_metrics_path,
    tail_mean,
    write_markdown,
)

SECTION = "studies.methods"
OUT = "reports/methods"


@dataclass
class Config:
    base: str = "cot_L2"  # the starting base: its eval_base@ metrics are the "before"
    runs: dict[str, list[str]] = field(default_factory=dict)  # method label -> its runs (one per seed)

    def __post_init__(self):
        check(bool(self.runs) and all(self.runs.values()), "runs", "need at least one method with one run")


def all_runs(cfg: Config) -> list[str]:
    return [r for rs in cfg.runs.values() for r in rs]


def inputs(cfg: Config) -> list[str]:
    return [base_metrics_path(cfg.base), *run_inputs(all_runs(cfg))]


def outputs(cfg: Config) -> list[str]:
    return [f"{OUT}/curves.png", f"{OUT}/failure_mix.png", f"{OUT}/table.md", manifest_path("methods"),
            study_metrics_path("methods")]


def curves_figure(cfg: Config, runs: dict, path: Path) -> None:
    colors = palette(cfg.runs)

    def curves(make, column, sampled_only=False):
        return [make(m, [runs[r].history[column] if column in runs[r].history else eval_column(runs[r], column)
                         for r in rs], colors[m])
                for m, rs in cfg.runs.items() if not (sampled_only and runs[rs[0]].job["method"] == "sft")]

    seeds = sorted({runs[r].job["seed"] for r in all_runs(cfg)})
    panel_figure([
        Panel("Greedy accuracy on the n = 12 test set", "accuracy (fraction correct)", curves(evaluated, "acc")),
        Panel("True reward of the training samples (SFT: gold traces, not drawn)", "mean reward per sample (0–1)",
              curves(smoothed, "reward/true", sampled_only=True)),
        Panel("Token entropy of the training responses (SFT: of the gold traces)", "entropy (nats per token)",
              curves(smoothed, "rollout/entropy")),
        Panel("Response length (SFT: of the gold traces)", "characters per response",
              curves(smoothed, "rollout/length")),
    ], f"{' vs '.join(cfg.runs)} from base {cfg.base}: mean and min–max over seeds {', '.join(map(str, seeds))}"
       " (per-step curves: 10-step moving average)", path)


def method_row(label: str, names: list[str], runs: dict) -> dict:
    acc = [runs[r].metrics["greedy"]["acc"] for r in names]
    sampled = runs[names[0]].job["method"] != "sft"
    return {"method": label, "seeds": str(len(names)), "final n = 12 accuracy": mean_sd(acc),
            "min": min(acc), "max": max(acc),
            "true reward (last 10%)": mean_sd(tail_mean(runs[r].history["reward/true"]) for r in names)
            if sampled else "gold (≡ 1)",
            "entropy (nats)": mean_sd(tail_mean(runs[r].history["rollout/entropy"]) for r in names),
            "length (chars)": mean_sd((tail_mean(runs[r].history["rollout/length"]) for r in names), ".1f"),
            "train seconds": mean_sd((runs[r].summary["seconds"] for r in names), ".0f")}


def method_metrics(names: list[str], runs: dict) -> dict:
    acc = pd.Series([runs[r].metrics["greedy"]["acc"] for r in names])
    tails = {k: float(pd.Series([tail_mean(runs[r].history[c]) for r in names]).mean())
             for k, c in (("true_reward", "reward/true"), ("entropy", "rollout/entropy"), ("length", "rollout/length"))}
    return {"acc_mean": float(acc.mean()), "acc_sd": float(acc.std()) if len(acc) > 1 else 0.0,
            "acc_min": float(acc.min()), "acc_max": float(acc.max()), **tails,
            "failure_mix": mean_mix([runs[r].metrics["failure_mix"] for r in names])}


def report(cfg: Config, root: Path) -> None:
    runs = load_runs(root, all_runs(cfg))
    base = read_json(root / base_metrics_path(cfg.base))
    out = root / OUT
    curves_figure(cfg, runs, out / "curves.png")
    metrics = {"base": {"acc": base["greedy"]["acc"], "failure_mix": base["failure_mix"]},
               **{m: method_metrics(rs, runs) for m, rs in cfg.runs.items()}}
    mixes = {f"before: base {cfg.base}": base["failure_mix"]} | {
        f"after {m} (mean of {len(rs)})": metrics[m]["failure_mix"] for m, rs in cfg.runs.items()}
    failure_figure(mixes, "Outcome types of greedy answers before and after RL", out / "failure_mix.png")
    before = {"method": f"base {cfg.base} (before)", "seeds": "—", "final n = 12 accuracy": base["greedy"]["acc"]}
    table = pd.DataFrame([before] + [method_row(m, rs, runs) for m, rs in cfg.runs.items()])
    mix_table = pd.DataFrame([{"model": k, **v} for k, v in mixes.items()])
    write_markdown(out / "table.md", "Study: SFT vs RFT vs GRPO", answer(cfg, metrics), [
        md_table(table, "Final accuracy per method",
                 "Greedy accuracy on the n = 12 set from the eval@ stage, mean ± sd over seeds; the other columns "
                 "are means over the last 10% of training steps."),
        md_table(mix_table, "Outcome types of greedy answers (share of the n = 12 set)",
                 "After: mean over each method's seeds.")])
    write_json(root / study_metrics_path("methods"), metrics)
    manifest(cfg, runs, metrics).write(root)


def answer(cfg: Config, metrics: dict) -> str:
    accs = ", ".join(f"{m} {metrics[m]['acc_mean']:.3f} ± {metrics[m]['acc_sd']:.3f}" for m in cfg.runs)
    top = max(metrics[m]["acc_mean"] for m in cfg.runs)
    best = [m for m in cfg.runs if metrics[m]["acc_mean"] == top]
    return (f"Final greedy accuracy on n = 12: base {metrics['base']['acc']:.3f}; {accs}. "
            f"Highest: {', '.join(best)}{' (tied)' if len(best) > 1 else ''}.")


def manifest(cfg: Config, runs: dict, metrics: dict) -> Manifest:
    accs = ", ".join(f"{m} {metrics[m]['acc_mean']:.3f}" for m in cfg.runs)
    correct = ", ".join(f"{m} {metrics[m]['failure_mix']['correct']:.2f}" for m in cfg.runs)
    return Manifest(
        "methods", "SFT vs RFT vs GRPO", "Which training method reaches the highest accuracy, and how do "
        "entropy and length move while it trains?", answer(cfg, metrics),
        [f"{m}: " + ", ".join(f"{r} (seed {runs[r].job['seed']})" for r in rs) for m, rs in cfg.runs.items()],
        [("methods/curves.png", f"Accuracy, true reward, entropy and length against step per method (mean and "
          f"min–max over seeds); final accuracy {accs} (base {metrics['base']['acc']:.3f})."),
         ("methods/failure_mix.png", f"Outcome types of greedy answers before and after each method; correct share "
          f"base {metrics['base']['failure_mix']['correct']:.2f} → {correct}.")],
        ["methods/table.md"])
