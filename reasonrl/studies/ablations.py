"""Study `ablations`: one GRPO knob at a time against the defaults.

Each group (std normalisation, loss aggregation, KL placement, clip-higher, dynamic sampling) is one
figure with the same four panels — greedy accuracy, token entropy, zero-variance group fraction and the
length of wrong responses (where the Dr. GRPO length bias shows), mean and 95% CI band over seeds — and
rows of one table. An arm is one run or a list of runs (one per seed); each arm is compared with its
group's reference (the first arm), paired by seed and problem (reports/ablations/answers/)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..config import check
from ..io import write_json
from ..plotdata import undefined
from ..stats import SHARE, fmt_ci, fmt_effect, fmt_mde, fmt_share
from . import pair_name, slug, wording
from .answers import (
    MEASURES,
    Answer,
    answers_table,
    arm_interval,
    check_measure,
    common_seeds,
    compare,
    run_arm,
    scalar_arm,
    write_answers,
)
from .figures import RANGES, SEED_RANGE, SMOOTH_NOTE, Panel, evaluated, palette, panel_figure, save_figure, smoothed
from .floors import chance, gold_length, guess_sets
from .manifest import Manifest, manifest_answers
from .markdown import md_table, write_markdown
from .mechanisms import ablation_extra, run_updates
from .paths import answers_dir, manifest_path, run_inputs, study_metrics_path
from .runs import Run, as_runs, describe, eval_column, load_runs, tail_mean

SECTION = "studies.ablations"
GUESS_ROLE = "val_edge"  # where every run evaluates in training: its figures' random guess, on its task's set
OUT = "reports/ablations"
SETTINGS = ("advantage", "loss_agg", "beta", "kl_in", "kl_estimator", "num_iterations", "eps_high",
            "dynamic_sampling")


@dataclass
class Group:
    title: str = ""  # what the group varies, for the figure and the table
    runs: dict[str, list[str] | str] = field(default_factory=dict)  # label -> runs (one per seed); first = reference
    pairs: list[list[str]] = field(default_factory=list)  # further [a, b] comparisons within the group

    def __post_init__(self):
        self.runs = {label: as_runs(rs) for label, rs in self.runs.items()}
        check(len(self.runs) >= 1 and all(self.runs.values()), "runs", "need at least one arm with one run")
        for pair in self.pairs:
            check(len(pair) == 2 and all(p in self.runs for p in pair), "pairs",
                  f"each pair is two arms of the group's runs, got {pair}")

    def comparisons(self) -> list[tuple[str, str]]:
        ref = next(iter(self.runs))
        out = [(ref, label) for label in list(self.runs)[1:]]
        return out + [(a, b) for a, b in self.pairs if (a, b) not in out]


@dataclass
class Stability:
    """A stability map: each variant trained at each learning rate (one run per seed); the first variant is
    the reference every other one is compared with at the same learning rate."""

    title: str = "final accuracy by learning rate and variant"
    variants: dict[str, dict[str, list[str] | str]] = field(default_factory=dict)  # variant -> {lr -> runs}

    def __post_init__(self):
        self.variants = {v: {lr: as_runs(rs) for lr, rs in cells.items()} for v, cells in self.variants.items()}
        check(bool(self.variants) and all(self.variants.values()), "variants", "need at least one variant with runs")
        lrs = list(next(iter(self.variants.values())))
        for v, cells in self.variants.items():
            check(list(cells) == lrs and all(cells.values()), "variants",
                  f"{v!r}: every variant needs runs at the same learning rates {lrs}, got {list(cells)}")

    @property
    def lrs(self) -> list[str]:
        return list(next(iter(self.variants.values())))

    def runs(self) -> list[str]:  # variant by variant, learning rate by learning rate
        return [r for cells in self.variants.values() for rs in cells.values() for r in rs]


@dataclass
class Config:
    groups: dict[str, Group] = field(default_factory=dict)  # file name -> group
    stability: Stability | None = None  # an lr x variant map (figure stability.png), or none
    set: str = "edge"  # the test set of the eval stages' outcome files the answers are computed on
    measure: str = "correct"  # the per-problem outcome compared: a key of MEASURES (greedy or sampled accuracy)
    equivalence: float = 0.01  # half-width of the equivalence region (set from params studies.equivalence)
    tasks: dict[str, str] = field(default_factory=dict)  # checkpoint -> its task, from params (stage.load_config)

    def __post_init__(self):
        check_measure(self.measure, self.set)
        check(bool(self.groups) or self.stability is not None, "groups", "need at least one group or a stability map")
        for name in self.groups:
            check(slug(name) == name and name != "stability", "groups",
                  f"{name!r}: a group name is a file name, [a-z0-9_], other than 'stability'")


def all_runs(cfg: Config) -> list[str]:
    runs = [r for g in cfg.groups.values() for rs in g.runs.values() for r in rs]
    if cfg.stability:
        runs += cfg.stability.runs()
    return list(dict.fromkeys(runs))


def inputs(cfg: Config) -> list[str]:
    return [*run_inputs(all_runs(cfg), cfg.tasks), *guess_sets(all_runs(cfg), cfg.tasks, GUESS_ROLE)]


def outputs(cfg: Config) -> list[str]:
    return [*(f"{OUT}/{name}.png" for name in cfg.groups), *([f"{OUT}/stability.png"] if cfg.stability else []),
            f"{OUT}/table.md", manifest_path("ablations"), study_metrics_path("ablations"), answers_dir("ablations")]


# ----------------------------------------------------------------------------- the stability map

def stability_answers(cfg: Config, root: Path, runs: dict[str, Run]) -> tuple[list[Answer], dict]:
    """(each variant against the reference variant at every lr, {(variant, lr): interval})."""
    st = cfg.stability
    ref = next(iter(st.variants))
    arms = {(v, lr): run_arm(root, f"{v} @ lr {lr}", rs, runs, cfg.set, cfg.measure)
            for v, cells in st.variants.items() for lr, rs in cells.items()}
    answers = []
    for v in list(st.variants)[1:]:
        for lr in st.lrs:
            pair = "stability_" + pair_name(ref, v, "lr", lr)
            extra = ablation_extra(*([runs[r] for r in st.variants[x][lr]] for x in (ref, v)))
            answers.append(Answer.of(pair, f"{ref} @ lr {lr}", f"{v} @ lr {lr}", arms[ref, lr], arms[v, lr],
                                     cfg.equivalence, extra=extra))
    return answers, {key: arm_interval(a) for key, a in arms.items()}


def stability_figure(st: Stability, ivs: dict, answers: list[Answer], path: Path, measure: str,
                     guess: float | None = None) -> None:
    """Heatmap of final accuracy (variants x lrs), each cell with its 95% CI; ▲/▼: the paired interval
    against the reference variant at that lr excludes 0 (above / below); the guess floor marked on the colour bar."""
    variants, lrs = list(st.variants), st.lrs
    mark = {(x.b.split(" @ lr ")[0], x.b.split(" @ lr ")[1]): {1: "▲", -1: "▼", 0: ""}[x.side] for x in answers}
    grid = np.array([[ivs[v, lr].mean for lr in lrs] for v in variants])
    fig, ax = plt.subplots(figsize=(1.6 + 1.9 * len(lrs), 1.2 + 0.75 * len(variants)))
    # cividis: ordered and readable with any colour vision; the scale fits the cells' accuracies
    im = ax.imshow(grid, cmap="cividis", vmin=float(grid.min()), vmax=float(grid.max()), aspect="auto")
    mid = (grid.min() + grid.max()) / 2
    for i, v in enumerate(variants):
        for j, lr in enumerate(lrs):
            iv = ivs[v, lr]  # the t-interval of a few seeds can overshoot an accuracy's range: cut, as the bands are
            ax.text(j, i, f"{iv.mean:.3f}{mark.get((v, lr), '')}\n[{max(iv.lo, 0.0):.3f}, {min(iv.hi, 1.0):.3f}]",
                    ha="center", va="center", fontsize=8, color="k" if iv.mean > mid else "w")
    ax.set_xticks(range(len(lrs)), lrs)
    ax.set_yticks(range(len(variants)), variants)
    ax.set(xlabel="learning rate", ylabel="variant",
           title=f"{st.title}\n(mean over seeds and problems [95% CI, cut at 0 and 1];\n"
                 f"▲/▼: differs from {variants[0]} at that lr)")
    bar = fig.colorbar(im, ax=ax, label=f"final {MEASURES[measure]}")
    if guess is not None:  # a heatmap has no y-axis of accuracy to draw it on: its colour bar has
        shown = im.norm.vmin <= guess <= im.norm.vmax  # the bar's own range (a flat grid's is widened)
        if shown:
            bar.ax.axhline(guess, color="w", ls=":", lw=2)
        ax.set_title(ax.get_title() + f"\nrandom guess {guess:.3f}, answer only"
                     + (": dotted on the colour bar" if shown else ": outside the scale"))
    fig.tight_layout()
    save_figure(fig, path)


def stability_rows(st: Stability, ivs: dict, answers: list[Answer]) -> list[dict]:
    vs = {x.b: x for x in answers}
    rows = []
    for v, cells in st.variants.items():
        for lr, rs in cells.items():
            iv, x = ivs[v, lr], vs.get(f"{v} @ lr {lr}")
            rows.append({"variant": v, "lr": lr, "runs": ", ".join(rs), "seeds": len(rs),
                         "final accuracy [95% CI]": fmt_share(iv),
                         "vs reference [95% CI]": "reference" if x is None else
                         fmt_ci(x.cmp.effect, x.cmp.ci_lo, x.cmp.ci_hi, sign=True, bounds=x.bounds),
                         "MDE": "" if x is None else fmt_mde(x.cmp)})
    return rows


def curve(run: Run, column: str) -> pd.Series:
    """A per-step history column, missing (NaN) at the steps where it measured nothing (plotdata.undefined:
    the wrong-response length of a step that sampled no wrong response)."""
    h = run.history
    return h[column].mask(undefined(column, h["reward/true"]))


def wrong_length(run: Run) -> pd.Series:
    return curve(run, "rollout/length_wrong")


# per-seed training-curve answers beside accuracy: (pair suffix, what, the run's value)
CURVE_ANSWERS = (("wrong_length", "wrong-response length", lambda run: tail_mean(wrong_length(run).dropna())),
                 ("entropy", "entropy", lambda run: tail_mean(run.history["rollout/entropy"])))


def group_answers(cfg: Config, root: Path, name: str, group: Group, runs: dict[str, Run]):
    """(answers of each arm against the group's reference and of the group's pairs, each arm's interval).

    Accuracy is compared on the eval stages' per-problem outcomes; the wrong-response length and the
    entropy at the end of training (last 10% of steps) per seed, where the two arms share two seeds or more. Each
    answer of arms (a, b) carries the mechanisms' numbers of the two arms' runs (`mechanisms.ablation_extra`)."""
    arms = {label: run_arm(root, label, rs, runs, cfg.set, cfg.measure) for label, rs in group.runs.items()}
    answers = []
    for a, b in group.comparisons():
        pair, extra = f"{name}_" + pair_name(a, b), ablation_extra(*([runs[r] for r in group.runs[x]] for x in (a, b)))
        answers.append(Answer.of(pair, a, b, arms[a], arms[b], cfg.equivalence, extra=extra))
        for suffix, what, value in CURVE_ANSWERS:
            xa, xb = (scalar_arm(x, group.runs[x], runs, value) for x in (a, b))
            if common_seeds(xa, xb) >= 2:
                # a length or an entropy has no upper end: its interval is printed uncut
                answers.append(Answer(f"{pair}_{suffix}", f"{a} ({what})", f"{b} ({what})",
                                      compare(xa, xb), cfg.equivalence, bounds=None, extra=extra))
    return answers, {label: arm_interval(a) for label, a in arms.items()}


def rollouts(group: Group, runs: dict[str, Run]) -> dict[str, float]:
    """Each arm's mean rollouts per run (its training samples, `rollout/count` summed over steps); {} where a run
    does not record them."""
    if not all("rollout/count" in runs[r].history for rs in group.runs.values() for r in rs):
        return {}
    return {label: float(np.mean([runs[r].history["rollout/count"].sum() for r in rs]))
            for label, rs in group.runs.items()}


def compute_labels(group: Group, runs: dict[str, Run]) -> dict[str, str]:
    """Each arm's legend label: where the arms' rollouts differ by more than 5%, with its rollouts as a multiple of
    the first arm's (an x axis in updates hides that compute)."""
    spent = rollouts(group, runs)
    first = next(iter(group.runs))
    if not spent or max(spent.values()) <= 1.05 * min(spent.values()):
        return {label: label for label in group.runs}
    return {label: label if label == first else f"{label} ({spent[label] / spent[first]:.1f}× the rollouts of {first})"
            for label in group.runs}


def group_figure(group: Group, runs: dict[str, Run], path: Path, guess: float | None = None) -> None:
    colors = palette(group.runs)
    names = compute_labels(group, runs)

    def curves(column):
        if column == "acc":
            return [evaluated(names[label], [eval_column(runs[r], "acc") for r in rs], colors[label])
                    for label, rs in group.runs.items()]
        return [smoothed(names[label], [curve(runs[r], column) for r in rs], colors[label], RANGES[column])
                for label, rs in group.runs.items()]

    job = runs[next(iter(group.runs.values()))[0]].job
    dynamic = any(runs[r].job.get("dynamic_sampling") for rs in group.runs.values() for r in rs)
    stop = "the run spent its rollout budget (dynamic sampling resamples)" if dynamic else None
    gold = gold_length(job)
    panel_figure([
        Panel("Verified greedy accuracy on the validation set during training", "accuracy (fraction correct)",
              curves("acc"), guess=guess),
        Panel("Token entropy of the training samples", "entropy (nats per token)", curves("rollout/entropy"),
              stop=stop),
        Panel("Groups whose rewards are all equal (no gradient)", "zero-variance group fraction",
              curves("rollout/zero_var_frac"), stop=stop),
        Panel("Length of wrong responses" + ("" if gold is None else " (dashed: the gold response's length; rising"
                                             " toward it is traces completing, not a length bias)"),
              "characters per wrong response", curves("rollout/length_wrong"), stop=stop,
              ref=None if gold is None else (gold, f"gold response ({gold:.0f} characters)")),
    ], f"Ablation — {group.title} ({SEED_RANGE}; {SMOOTH_NOTE})", path)


def run_metrics(run: Run, set_name: str) -> dict:
    h = run.history
    return {"acc": run.metrics[set_name]["greedy"]["acc"], "entropy_end": tail_mean(h["rollout/entropy"]),
            "zero_var_mean": float(h["rollout/zero_var_frac"].mean()),
            "length_wrong_end": tail_mean(wrong_length(run).dropna()),
            "rollouts_per_step": float(h["rollout/count"].mean()),
            # the compute an arm spent, stated beside its accuracy: dynamic sampling trades one for the other
            "rollouts": float(h["rollout/count"].sum()), "updates": float(run_updates(run))}


def arm_metrics(names: list[str], runs: dict[str, Run], iv, set_name: str) -> dict:
    """Per-run metrics averaged over the arm's seeds, with the accuracy's interval."""
    per = [run_metrics(runs[r], set_name) for r in names]
    # the accuracy is the compared measure's (its interval's mean), not the greedy one of run_metrics
    return {k: sum(m[k] for m in per) / len(per) for k in per[0]} | {"acc": iv.mean, "acc_ci_lo": iv.lo,
                                                                     "acc_ci_hi": iv.hi, "seeds": len(names)}


ACC_KEYS = ("acc", "acc_ci_lo", "acc_ci_hi")  # an arm's accuracy with its interval, as stored in metrics


def table_rows(cfg: Config, metrics: dict, answers: dict[str, list[Answer]]) -> list[dict]:
    rows = []
    for name, group in cfg.groups.items():
        ref = next(iter(group.runs))
        vs = {x.b: x for x in answers[name] if x.a == ref}
        for label, rs in group.runs.items():
            m = metrics[name][label]
            x = vs.get(label)
            rows.append({"ablation": group.title, "setting": label, "runs": ", ".join(rs), "seeds": m["seeds"],
                         "final accuracy [95% CI]": fmt_ci(*(m[k] for k in ACC_KEYS), bounds=SHARE),
                         "vs reference [95% CI]": "reference" if x is None else
                         fmt_ci(x.cmp.effect, x.cmp.ci_lo, x.cmp.ci_hi, sign=True, bounds=x.bounds),
                         "MDE": "" if x is None else fmt_mde(x.cmp),
                         "entropy (last 10%)": m["entropy_end"],
                         "zero-variance fraction (mean)": m["zero_var_mean"],
                         "wrong length (last 10%)": m["length_wrong_end"],
                         "rollouts per step (mean)": m["rollouts_per_step"],
                         "rollouts (per run)": m["rollouts"], "updates (per run)": m["updates"]})
    return rows


def answer(cfg: Config, answers: dict[str, list[Answer]]) -> str:
    parts = [f"{g.title}: " + ("; ".join(x.text for x in answers[name]) or "reference only")
             for name, g in cfg.groups.items()]
    if cfg.stability:
        parts.append(f"{cfg.stability.title}: " + ("; ".join(x.text for x in answers["stability"])
                                                    or "reference only"))
    return f"Final {MEASURES[cfg.measure]} on {cfg.set} against each group's reference — " + " | ".join(parts) + "."


def summary(cfg: Config, answers: dict[str, list[Answer]]) -> str:
    """The front page's paragraph: the accuracy comparisons grouped by what their intervals support, an
    effect shown where it has a direction (the length and entropy answers: details)."""
    curves = tuple(f"_{suffix}" for suffix, *_ in CURVE_ANSWERS)
    by: dict[str, list[tuple[str, Answer]]] = {}
    for group in cfg.groups:
        for x in (x for x in answers[group] if not x.pair.endswith(curves)):
            by.setdefault(wording.of(x.cmp, x.equivalence), []).append((group, x))
    # arm labels hold commas ("mu 2, symmetric"): items are named by their group and split by semicolons
    parts = [f"{head} — " + "; ".join(f"{g}: {x.b} − {x.a} {fmt_effect(x.cmp, x.bounds)}" for g, x in by[k])
             for k, head in ((wording.UP, "above it"), (wording.DOWN, "below it")) if k in by]
    # the undirected ones are counted, not listed: each needs its interval, and the paragraph has 80 words
    rest = {word: len(by[k]) for k, word in ((wording.EQUIVALENT, "equivalent"), (wording.NONE, "undecided"),
                                             (wording.CONSTANT, "not testable")) if k in by}
    kinds = next(iter(rest)) if len(rest) == 1 else ", ".join(f"{n} {w}" for w, n in rest.items())
    tail = f"; the other {sum(rest.values())}: {kinds} (details)" if rest else ""
    what = MEASURES[cfg.measure].capitalize()
    return f"{what} on {cfg.set}, arm − group reference [95% CI]; " + "; ".join(parts) + tail + "."


def report(cfg: Config, root: Path) -> None:
    runs = load_runs(root, all_runs(cfg), cfg.tasks)
    out = root / OUT
    answers, metrics = {}, {}
    for name, group in cfg.groups.items():
        first = runs[next(iter(group.runs.values()))[0]]
        group_figure(group, runs, out / f"{name}.png", chance(first.job, root, inputs(cfg)))
        answers[name], ivs = group_answers(cfg, root, name, group, runs)
        metrics[name] = {label: arm_metrics(rs, runs, ivs[label], cfg.set) for label, rs in group.runs.items()}
    parts = []
    if cfg.groups:
        parts.append(md_table(pd.DataFrame(table_rows(cfg, metrics, answers)), "One knob at a time",
                     f"Accuracy: {MEASURES[cfg.measure]} on the {cfg.set} set (eval stages), mean over seeds and "
                     "problems with its 95% "
                     "t-interval (the run is the unit); 'vs reference': the paired difference from the group's first "
                     "row with its "
                     "95% interval and the design's MDE. Entropy and wrong-response length: mean over the last 10% of "
                     "steps; zero-variance fraction: mean over all steps (before any resampling); rollouts per step: "
                     "mean of rollout/count (what dynamic sampling's resampling rounds cost); rollouts and updates per "
                     "run: rollout/count summed over the steps, and num_iterations x the steps with a non-zero "
                     "gradient (the compute each arm spent); means over seeds."))
    if cfg.stability:
        answers["stability"], st_ivs = stability_answers(cfg, root, runs)
        guess = runs[cfg.stability.runs()[0]].metrics[cfg.set]["random_baseline"]["1"]  # the test set's
        stability_figure(cfg.stability, st_ivs, answers["stability"], out / "stability.png", cfg.measure, guess)
        parts.append(md_table(pd.DataFrame(stability_rows(cfg.stability, st_ivs, answers["stability"])),
                              f"Stability map: {cfg.stability.title}",
                              "Each variant against the first at the same learning rate, paired by seed and problem."))
        metrics["stability"] = {f"{v} @ lr {lr}": {"acc": iv.mean, "acc_ci_lo": iv.lo, "acc_ci_hi": iv.hi}
                                for (v, lr), iv in st_ivs.items()}
    flat = [x for xs in answers.values() for x in xs]
    what = f"{MEASURES[cfg.measure].capitalize()} on the {cfg.set} set."
    parts.append(answers_table(flat, "Paired comparisons", what))
    write_markdown(out / "table.md", "Study: GRPO ablations", answer(cfg, answers), parts)
    write_json(root / study_metrics_path("ablations"), metrics)
    write_answers(root, "ablations", flat)
    manifest(cfg, runs, metrics, flat, answers).write(root)


def manifest(cfg: Config, runs: dict[str, Run], metrics: dict, flat: list[Answer], answers: dict) -> Manifest:
    figures = []
    for name, g in cfg.groups.items():
        m = metrics[name]
        # the accuracy panel draws the in-training evaluations on the validation set: quote those, and name
        # the test-set numbers (the eval stage's, in the table) as what they are
        last = {label: np.mean([eval_column(runs[r], "acc").iloc[-1] for r in rs]) for label, rs in g.runs.items()}
        val = runs[next(iter(g.runs.values()))[0]].job.get("eval")
        figures.append((f"ablations/{name}.png", f"{g.title}: accuracy on {val}, entropy, zero-variance fraction "
                        f"and wrong-response length against step ({SEED_RANGE}; {SMOOTH_NOTE}); "
                        f"last {val} evaluation "
                        + ", ".join(f"{label} {v:.3f}" for label, v in last.items())
                        + f"; final {MEASURES[cfg.measure]} on the test set {cfg.set} (not drawn) "
                        + ", ".join(f"{label} {fmt_ci(*(m[label][k] for k in ACC_KEYS), bounds=SHARE)}"
                                    for label in g.runs) + "; wrong length "
                        + ", ".join(f"{label} {m[label]['length_wrong_end']:.1f}" for label in g.runs) + "."))
    if cfg.stability:
        st = metrics["stability"]
        figures.append(("ablations/stability.png", f"{cfg.stability.title}: final accuracy per variant and learning "
                        "rate with 95% CIs; " + ", ".join(f"{k} {v['acc']:.3f}" for k, v in st.items()) + "."))
    return Manifest("ablations", "GRPO ablations", "What does each GRPO design choice change: std normalisation, "
                    "loss aggregation, KL placement, clip-higher, dynamic sampling?", answer(cfg, answers),
                    [describe(runs[r], SETTINGS) for r in all_runs(cfg)], figures, ["ablations/table.md"],
                    manifest_answers(flat), summary=summary(cfg, answers))
