"""Study `ablations`: one GRPO knob at a time against the defaults.

Each group (std normalisation, loss aggregation, KL placement, clip-higher, dynamic sampling) is one
figure with the same four panels — greedy accuracy, token entropy, zero-variance group fraction and the
length of wrong responses (where the Dr. GRPO length bias shows) — and rows of one table."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..config import check
from ..io import write_json
from .common import (
    Manifest,
    Panel,
    Run,
    describe,
    eval_column,
    evaluated,
    load_runs,
    manifest_path,
    md_table,
    palette,
    panel_figure,
    run_inputs,
    smoothed,
    study_metrics_path,
    tail_mean,
    write_markdown,
)

SECTION = "studies.ablations"
OUT = "reports/ablations"
SETTINGS = ("advantage", "loss_agg", "beta", "kl_in", "kl_estimator", "num_iterations", "eps_high",
            "dynamic_sampling")


@dataclass
class Group:
    title: str = ""  # what the group varies, for the figure and the table
    runs: dict[str, str] = field(default_factory=dict)  # label -> run; the first is the group's reference

    def __post_init__(self):
        check(len(self.runs) >= 1, "runs", "need at least one run")


@dataclass
class Config:
    groups: dict[str, Group] = field(default_factory=dict)  # file name -> group

    def __post_init__(self):
        check(bool(self.groups), "groups", "need at least one group")


def all_runs(cfg: Config) -> list[str]:
    return list(dict.fromkeys(r for g in cfg.groups.values() for r in g.runs.values()))


def inputs(cfg: Config) -> list[str]:
    return run_inputs(all_runs(cfg))


def outputs(cfg: Config) -> list[str]:
    return [*(f"{OUT}/{name}.png" for name in cfg.groups), f"{OUT}/table.md", manifest_path("ablations"),
            study_metrics_path("ablations")]


def group_figure(group: Group, runs: dict[str, Run], path: Path) -> None:
    colors = palette(group.runs)

    def curves(column):
        if column == "acc":
            return [evaluated(label, [eval_column(runs[r], "acc")], colors[label]) for label, r in group.runs.items()]
        return [smoothed(label, [runs[r].history[column]], colors[label]) for label, r in group.runs.items()]

    panel_figure([
        Panel("Greedy accuracy on the n = 12 set", "accuracy (fraction correct)", curves("acc")),
        Panel("Token entropy of the training samples", "entropy (nats per token)", curves("rollout/entropy")),
        Panel("Groups whose rewards are all equal (no gradient)", "zero-variance group fraction",
              curves("rollout/zero_var_frac")),
        Panel("Length of wrong responses (the length bias)", "characters per wrong response",
              curves("rollout/length_wrong")),
    ], f"Ablation — {group.title} (per-step curves: 10-step moving average)", path)


def run_metrics(run: Run) -> dict:
    h = run.history
    return {"acc": run.metrics["greedy"]["acc"], "entropy_end": tail_mean(h["rollout/entropy"]),
            "zero_var_mean": float(h["rollout/zero_var_frac"].mean()),
            "length_wrong_end": tail_mean(h["rollout/length_wrong"]),
            "seconds_per_step": run.summary["seconds_per_step"]}


def table_rows(cfg: Config, metrics: dict) -> list[dict]:
    rows = []
    for name, group in cfg.groups.items():
        ref = metrics[name][next(iter(group.runs))]["acc"]
        for label, run in group.runs.items():
            m = metrics[name][label]
            rows.append({"ablation": group.title, "setting": label, "run": run, "final n = 12 accuracy": m["acc"],
                         "vs reference": f"{m['acc'] - ref:+.3f}", "entropy (last 10%)": m["entropy_end"],
                         "zero-variance fraction (mean)": m["zero_var_mean"],
                         "wrong length (last 10%)": m["length_wrong_end"], "seconds per step": m["seconds_per_step"]})
    return rows


def answer(cfg: Config, metrics: dict) -> str:
    parts = [f"{g.title}: " + ", ".join(f"{label} {metrics[name][label]['acc']:.3f}" for label in g.runs)
             for name, g in cfg.groups.items()]
    return "Final greedy accuracy on n = 12 — " + "; ".join(parts) + "."


def report(cfg: Config, root: Path) -> None:
    runs = load_runs(root, all_runs(cfg))
    out = root / OUT
    for name, group in cfg.groups.items():
        group_figure(group, runs, out / f"{name}.png")
    metrics = {name: {label: run_metrics(runs[r]) for label, r in g.runs.items()} for name, g in cfg.groups.items()}
    write_markdown(out / "table.md", "Study: GRPO ablations", answer(cfg, metrics), [
        md_table(pd.DataFrame(table_rows(cfg, metrics)), "One knob at a time",
                 "Accuracy: greedy on the n = 12 set (eval@ stage); 'vs reference': against the group's first row. "
                 "Entropy and wrong-response length: mean over the last 10% of steps; zero-variance fraction: mean "
                 "over all steps (before any resampling).")])
    write_json(root / study_metrics_path("ablations"), metrics)
    manifest(cfg, runs, metrics).write(root)


def manifest(cfg: Config, runs: dict[str, Run], metrics: dict) -> Manifest:
    figures = []
    for name, g in cfg.groups.items():
        m = metrics[name]
        figures.append((f"ablations/{name}.png", f"{g.title}: accuracy, entropy, zero-variance fraction and "
                        "wrong-response length against step; final accuracy "
                        + ", ".join(f"{label} {m[label]['acc']:.3f}" for label in g.runs) + "; wrong length "
                        + ", ".join(f"{label} {m[label]['length_wrong_end']:.1f}" for label in g.runs) + "."))
    return Manifest("ablations", "GRPO ablations", "What does each GRPO design choice change: std normalisation, "
                    "loss aggregation, KL placement, clip-higher, dynamic sampling?", answer(cfg, metrics),
                    [describe(runs[r], SETTINGS) for r in all_runs(cfg)], figures, ["ablations/table.md"])
