"""Study `hacking`: how a proxy reward gets exploited.

GRPO with the true reward, learned verifiers (ORM, full-step PRM), a random reward, and defences (a
format guard, a length penalty): proxy and true reward against step, one figure per run; the outcome
mix at the end; the "fooled" examples (proxy > 0.9, wrong). And the random reward at μ = 1 vs μ = 2:
does it move the policy only when the PPO clip acts?"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..config import check
from ..io import read_json, write_json
from .common import (
    Manifest,
    Panel,
    Run,
    base_metrics_path,
    code,
    describe,
    eval_column,
    evaluated,
    failure_figure,
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

SECTION = "studies.hacking"
OUT = "reports/hacking"
SETTINGS = ("reward", "guard", "len_pen", "num_iterations", "beta")  # what distinguishes the runs
CLIP_COLUMNS = {"mu": "μ", "clip_frac": "mean clip fraction", "kl_end": "KL to the start (last 10%)",
                "acc_start": "greedy acc. at step 0", "acc_end": "greedy acc. at the end",
                "entropy_end": "entropy (last 10%)"}


@dataclass
class Config:
    base: str = "cot_L2"  # the runs' starting base: its eval_base@ outcome mix is the "before"
    runs: dict[str, str] = field(default_factory=dict)  # reward label -> run
    random_pair: list[str] = field(default_factory=list)  # two runs of `runs`: random reward at μ = 1, μ = 2

    def __post_init__(self):
        check(bool(self.runs), "runs", "need at least one run")
        check(len(self.random_pair) == 2 and all(r in self.runs.values() for r in self.random_pair),
              "random_pair", f"need two runs of `runs` (μ = 1, μ = 2), got {self.random_pair}")


def inputs(cfg: Config) -> list[str]:
    return [base_metrics_path(cfg.base), *run_inputs(cfg.runs.values())]


def reward_png(run: str) -> str:
    return f"{OUT}/reward_{run}.png"


def outputs(cfg: Config) -> list[str]:
    return [*(reward_png(r) for r in cfg.runs.values()), f"{OUT}/failure_mix.png", f"{OUT}/random_clip.png",
            f"{OUT}/table.md", manifest_path("hacking"), study_metrics_path("hacking")]


def reward_figure(label: str, run: Run, path: Path) -> None:
    h = run.history
    panel_figure([Panel("Proxy (training) reward vs true reward", "reward per sample (batch mean)", [
        smoothed("proxy reward (training signal)", [h["reward/proxy"]], "tab:red"),
        smoothed("true reward", [h["reward/true"]], "tab:blue"),
        evaluated("greedy accuracy on n = 12 (eval)", [eval_column(run, "acc")], "k")])],
        f"Reward {label}, run {run.name}\n" + ", ".join(f"{k} {run.job[k]}" for k in SETTINGS)
        + "; per-step curves: 10-step moving average", path, ncols=1, size=(8.5, 4.2))


def random_clip_figure(cfg: Config, runs: dict[str, Run], path: Path) -> None:
    pair = [runs[r] for r in cfg.random_pair]
    labels = {r.name: f"μ = {r.job['num_iterations']} ({r.name})" for r in pair}
    colors = palette(labels.values())

    def curves(column):
        make = evaluated if column == "acc" else smoothed
        return [make(labels[r.name], [eval_column(r, column) if column == "acc" else r.history[column]],
                     colors[labels[r.name]]) for r in pair]

    panel_figure([
        Panel("Fraction of tokens whose ratio was clipped", "clip fraction", curves("losses/clip_frac")),
        Panel("KL to the starting model (k3 estimate)", "KL (nats per token)", curves("losses/kl")),
        Panel("Greedy accuracy on the n = 12 set", "accuracy (fraction correct)", curves("acc")),
        Panel("True reward of the training samples", "mean reward per sample (0–1)", curves("reward/true")),
    ], "Random reward: does it change the policy only when clipping acts? (per-step curves: 10-step moving average)",
        path)


def clip_effect(run: Run) -> dict:
    acc = eval_column(run, "acc")
    h = run.history
    return {"run": run.name, "mu": run.job["num_iterations"], "clip_frac": float(h["losses/clip_frac"].mean()),
            "kl_end": tail_mean(h["losses/kl"]), "acc_start": float(acc.iloc[0]),
            "acc_end": float(acc.iloc[-1]), "entropy_end": tail_mean(h["rollout/entropy"])}


def clip_answer(effects: list[dict]) -> str:
    a, b = effects
    parts = [f"μ = {e['mu']} (mean clip fraction {e['clip_frac']:.3f}): KL to the start {e['kl_end']:.4f}, greedy "
             f"accuracy {e['acc_start']:.3f} → {e['acc_end']:.3f}" for e in effects]
    ratio = b["kl_end"] / a["kl_end"] if a["kl_end"] > 0 else float("inf")
    return f"Random reward — {'; '.join(parts)}; μ = {b['mu']} ends {ratio:.1f}× as far from the start (KL)."


def fooled_rows(label: str, run: Run) -> list[dict]:
    """The fooled examples of the last recorded step that has any."""
    found = [e for e in run.summary.get("examples", []) if e["fooled"]]
    if not found:
        return []
    last = found[-1]
    return [{"reward": label, "run": run.name, "step": last["step"], "prompt": code(f["prompt"]),
             "gold": code(f["gold"]), "response": code(f["response"]), "proxy score": f["proxy"]}
            for f in last["fooled"]]


def run_row(label: str, run: Run) -> dict:
    mix = run.metrics["failure_mix"]
    worst = max((t for t in mix if t != "correct"), key=lambda t: mix[t])
    return {"reward": label, "run": run.name, **{k: run.job[k] for k in SETTINGS[1:]},
            "proxy (last 10%)": tail_mean(run.history["reward/proxy"]),
            "true (last 10%)": tail_mean(run.history["reward/true"]),
            "greedy acc. n = 12": run.metrics["greedy"]["acc"], "main failure": f"{worst} {mix[worst]:.2f}",
            "fooled examples": len(fooled_rows(label, run))}


def report(cfg: Config, root: Path) -> None:
    runs = load_runs(root, cfg.runs.values())
    base = read_json(root / base_metrics_path(cfg.base))
    out = root / OUT
    for label, r in cfg.runs.items():
        reward_figure(label, runs[r], root / reward_png(r))
    mixes = {f"before: base {cfg.base}": base["failure_mix"]} | {
        f"{label} ({r})": runs[r].metrics["failure_mix"] for label, r in cfg.runs.items()}
    failure_figure(mixes, "Outcome types of greedy answers at the end of each run", out / "failure_mix.png")
    random_clip_figure(cfg, runs, out / "random_clip.png")
    rows = [run_row(label, runs[r]) for label, r in cfg.runs.items()]
    fooled = [f for label, r in cfg.runs.items() for f in fooled_rows(label, runs[r])]
    effects = [clip_effect(runs[r]) for r in cfg.random_pair]
    write_markdown(out / "table.md", "Study: reward hacking", answer(rows, effects), [
        md_table(pd.DataFrame(rows), "Proxy vs true reward at the end of each run",
                 "Proxy and true: mean reward per training sample over the last 10% of steps. Greedy accuracy and "
                 "the main failure type (share of the n = 12 set) from the eval@ stage."),
        md_table(pd.DataFrame(fooled) if fooled else pd.DataFrame({"fooled examples": ["none recorded"]}),
                 "Fooled examples: proxy score above 0.9, true reward 0",
                 "From the last recorded step with any (recorded for GRPO with a reward other than `true`)."),
        md_table(pd.DataFrame(effects).rename(columns=CLIP_COLUMNS), "Random reward: μ = 1 vs μ = 2",
                 clip_answer(effects))])
    metrics = {row["reward"]: {"proxy_end": row["proxy (last 10%)"], "true_end": row["true (last 10%)"],
                               "acc": row["greedy acc. n = 12"], "failure_mix": runs[r].metrics["failure_mix"]}
               for row, r in zip(rows, cfg.runs.values())}
    write_json(root / study_metrics_path("hacking"), {**metrics, "random_clip": effects})
    manifest(cfg, runs, rows, effects).write(root)


def answer(rows: list[dict], effects: list[dict]) -> str:
    gaps = ", ".join(f"{r['reward']} {r['proxy (last 10%)'] - r['true (last 10%)']:+.3f}" for r in rows)
    return f"Proxy − true reward at the end: {gaps}. {clip_answer(effects)}"


def manifest(cfg: Config, runs: dict[str, Run], rows: list[dict], effects: list[dict]) -> Manifest:
    figures = [(reward_png(row["run"])[len("reports/"):],
                f"Proxy and true reward against step for reward {row['reward']}; at the end proxy "
                f"{row['proxy (last 10%)']:.3f} vs true {row['true (last 10%)']:.3f}.") for row in rows]
    correct = ", ".join(f"{row['reward']} {runs[row['run']].metrics['failure_mix']['correct']:.2f}" for row in rows)
    a, b = effects
    figures += [("hacking/failure_mix.png", f"Outcome types of greedy answers at the end of each run; correct share "
                 f"{correct}."),
                ("hacking/random_clip.png", f"Random reward at μ = {a['mu']} vs μ = {b['mu']}: clip fraction, KL to "
                 f"the start, accuracy and true reward; KL at the end {a['kl_end']:.4f} vs {b['kl_end']:.4f}.")]
    return Manifest("hacking", "Reward hacking", "How do learned and random rewards get exploited, and what "
                    "do a format guard and a length penalty change?", answer(rows, effects),
                    [describe(runs[r], SETTINGS) for r in cfg.runs.values()], figures, ["hacking/table.md"])
