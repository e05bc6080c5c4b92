"""Study `ablations`: one GRPO knob at a time against the defaults.

Each group (std normalisation, loss aggregation, KL placement, clip-higher, dynamic sampling) is one
figure with the same four panels — greedy accuracy, token entropy, zero-variance group fraction and the
length of wrong responses (where the Dr. GRPO length bias shows), mean and 95% CI band over seeds — and
rows of one table. An arm is one run or a list of runs (one per seed); each arm is compared with its
group's reference (the first arm), paired by seed and problem (reports/ablations/answers/)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..config import check
from ..io import write_json
from ..stats import fmt_ci
from .common import (
    Answer,
    Manifest,
    Panel,
    Run,
    answers_dir,
    answers_table,
    arm_interval,
    as_runs,
    compare,
    describe,
    eval_column,
    evaluated,
    load_runs,
    manifest_answers,
    manifest_path,
    md_table,
    pair_name,
    palette,
    panel_figure,
    run_arm,
    run_inputs,
    slug,
    smoothed,
    study_metrics_path,
    tail_mean,
    write_answers,
    write_markdown,
)

SECTION = "studies.ablations"
OUT = "reports/ablations"
SETTINGS = ("std_norm", "loss_agg", "beta", "kl_in", "kl_estimator", "num_iterations", "eps_high",
            "dynamic_sampling")


@dataclass
class Group:
    title: str = ""  # what the group varies, for the figure and the table
    runs: dict[str, list[str] | str] = field(default_factory=dict)  # label -> runs (one per seed); first = reference

    def __post_init__(self):
        self.runs = {label: as_runs(rs) for label, rs in self.runs.items()}
        check(len(self.runs) >= 1 and all(self.runs.values()), "runs", "need at least one arm with one run")


@dataclass
class Config:
    groups: dict[str, Group] = field(default_factory=dict)  # file name -> group
    set: str = "n12"  # the test set of the eval stages' outcome files the answers are computed on
    ci_seed: int = 0  # seeds the bootstrap of every interval

    def __post_init__(self):
        check(bool(self.groups), "groups", "need at least one group")
        for name in self.groups:
            check(slug(name) == name, "groups", f"{name!r}: a group name is a file name, [a-z0-9_]")


def all_runs(cfg: Config) -> list[str]:
    return list(dict.fromkeys(r for g in cfg.groups.values() for rs in g.runs.values() for r in rs))


def inputs(cfg: Config) -> list[str]:
    return run_inputs(all_runs(cfg))


def outputs(cfg: Config) -> list[str]:
    return [*(f"{OUT}/{name}.png" for name in cfg.groups), f"{OUT}/table.md", manifest_path("ablations"),
            study_metrics_path("ablations"), answers_dir("ablations")]


def group_answers(cfg: Config, root: Path, name: str, group: Group, runs: dict[str, Run]):
    """(answers of each arm against the group's reference, each arm's interval)."""
    arms = {label: run_arm(root, label, rs, runs, cfg.set) for label, rs in group.runs.items()}
    ref = next(iter(group.runs))
    answers = []
    for label in list(group.runs)[1:]:
        pair = f"{name}_" + pair_name(ref, label)
        answers.append(Answer(pair, ref, label, compare(arms[ref], arms[label], pair, cfg.ci_seed)))
    return answers, {label: arm_interval(a, cfg.ci_seed) for label, a in arms.items()}


def group_figure(group: Group, runs: dict[str, Run], path: Path) -> None:
    colors = palette(group.runs)

    def curves(column):
        if column == "acc":
            return [evaluated(label, [eval_column(runs[r], "acc") for r in rs], colors[label])
                    for label, rs in group.runs.items()]
        return [smoothed(label, [runs[r].history[column] for r in rs], colors[label])
                for label, rs in group.runs.items()]

    panel_figure([
        Panel("Greedy accuracy on the n = 12 set", "accuracy (fraction correct)", curves("acc")),
        Panel("Token entropy of the training samples", "entropy (nats per token)", curves("rollout/entropy")),
        Panel("Groups whose rewards are all equal (no gradient)", "zero-variance group fraction",
              curves("rollout/zero_var_frac")),
        Panel("Length of wrong responses (the length bias)", "characters per wrong response",
              curves("rollout/length_wrong")),
    ], f"Ablation — {group.title} (mean and 95% CI over seeds; per-step curves: 10-step moving average)", path)


def run_metrics(run: Run) -> dict:
    h = run.history
    return {"acc": run.metrics["greedy"]["acc"], "entropy_end": tail_mean(h["rollout/entropy"]),
            "zero_var_mean": float(h["rollout/zero_var_frac"].mean()),
            "length_wrong_end": tail_mean(h["rollout/length_wrong"]),
            "seconds_per_step": run.summary["seconds_per_step"]}


def arm_metrics(names: list[str], runs: dict[str, Run], iv) -> dict:
    """Per-run metrics averaged over the arm's seeds, with the accuracy's interval."""
    per = [run_metrics(runs[r]) for r in names]
    return {k: sum(m[k] for m in per) / len(per) for k in per[0]} | {"acc_ci_lo": iv.lo, "acc_ci_hi": iv.hi,
                                                                     "seeds": len(names)}


def table_rows(cfg: Config, metrics: dict, answers: dict[str, list[Answer]]) -> list[dict]:
    rows = []
    for name, group in cfg.groups.items():
        vs = {x.b: x for x in answers[name]}
        for label, rs in group.runs.items():
            m = metrics[name][label]
            x = vs.get(label)
            rows.append({"ablation": group.title, "setting": label, "runs": ", ".join(rs), "seeds": m["seeds"],
                         "final accuracy [95% CI]": fmt_ci(m["acc"], m["acc_ci_lo"], m["acc_ci_hi"]),
                         "vs reference [95% CI]": "reference" if x is None else
                         fmt_ci(x.cmp.effect, x.cmp.ci_lo, x.cmp.ci_hi, sign=True),
                         "MDE": "" if x is None else f"{x.cmp.mde:.3f}",
                         "entropy (last 10%)": m["entropy_end"],
                         "zero-variance fraction (mean)": m["zero_var_mean"],
                         "wrong length (last 10%)": m["length_wrong_end"], "seconds per step": m["seconds_per_step"]})
    return rows


def answer(cfg: Config, answers: dict[str, list[Answer]]) -> str:
    parts = [f"{g.title}: " + ("; ".join(x.text for x in answers[name]) or "reference only")
             for name, g in cfg.groups.items()]
    return f"Final greedy accuracy on {cfg.set} against each group's reference — " + " | ".join(parts) + "."


def report(cfg: Config, root: Path) -> None:
    runs = load_runs(root, all_runs(cfg))
    out = root / OUT
    answers, metrics = {}, {}
    for name, group in cfg.groups.items():
        group_figure(group, runs, out / f"{name}.png")
        answers[name], ivs = group_answers(cfg, root, name, group, runs)
        metrics[name] = {label: arm_metrics(rs, runs, ivs[label]) for label, rs in group.runs.items()}
    flat = [x for name in cfg.groups for x in answers[name]]
    write_markdown(out / "table.md", "Study: GRPO ablations", answer(cfg, answers), [
        md_table(pd.DataFrame(table_rows(cfg, metrics, answers)), "One knob at a time",
                 f"Accuracy: greedy on the {cfg.set} set (eval stages), mean over seeds and problems with its 95% "
                 "bootstrap interval; 'vs reference': the paired difference from the group's first row with its "
                 "95% interval and the design's MDE. Entropy and wrong-response length: mean over the last 10% of "
                 "steps; zero-variance fraction: mean over all steps (before any resampling); means over seeds."),
        answers_table(flat, "Paired comparisons", f"Greedy accuracy on the {cfg.set} set.")])
    write_json(root / study_metrics_path("ablations"), metrics)
    write_answers(root, "ablations", flat)
    manifest(cfg, runs, metrics, flat, answers).write(root)


def manifest(cfg: Config, runs: dict[str, Run], metrics: dict, flat: list[Answer], answers: dict) -> Manifest:
    figures = []
    for name, g in cfg.groups.items():
        m = metrics[name]
        figures.append((f"ablations/{name}.png", f"{g.title}: accuracy, entropy, zero-variance fraction and "
                        "wrong-response length against step (mean and 95% CI over seeds); final accuracy "
                        + ", ".join(f"{label} {fmt_ci(m[label]['acc'], m[label]['acc_ci_lo'], m[label]['acc_ci_hi'])}"
                                    for label in g.runs) + "; wrong length "
                        + ", ".join(f"{label} {m[label]['length_wrong_end']:.1f}" for label in g.runs) + "."))
    return Manifest("ablations", "GRPO ablations", "What does each GRPO design choice change: std normalisation, "
                    "loss aggregation, KL placement, clip-higher, dynamic sampling?", answer(cfg, answers),
                    [describe(runs[r], SETTINGS) for r in all_runs(cfg)], figures, ["ablations/table.md"],
                    manifest_answers(flat))
