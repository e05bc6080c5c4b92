"""Study `zero`: the R1-Zero question — does RL create thinking or select it?

GRPO from each mixed base (eval: think), so every run's evaluation at step 0 is its base's thinking
profile ("before") and the last one is the trained policy's ("after"). Think rate and accuracy against
step, the think rate per hop count before and after, accuracy when thinking vs when answering directly.

The think rate counts the responses that think *well* (`Task.thinks_well`: a trace, the mark, one answer, the
end; evaluate.think_profile's "think", the RL records' `rollout/think_rate`): a policy that writes trace steps
then garbage, or two answers, has not learned to think, and a count of any trace (`thinks`) would score it as
thinking. That looser count is shown beside it ("think_any": the table's "any trace" column and the metrics),
never in the verdicts. A response with a trace of the wrong form is neither thinking nor direct: "direct" is a
response with no trace at all (1 − think_any of them), so the two accuracies rest on think and 1 − think_any.

An arm is one run or a list of runs (one per seed) from one base; an exploration control (say, a higher
sampling temperature from the same base) is another arm, compared with its reference through `pairs`.
Reward controls (`controls`: a spurious reward, random or shuffled, from a base whose thinking answers beat
its direct ones) ask whether the reward or the updates alone elicit the thinking the base already has.
Each arm's think rate and accuracy after RL are compared with its own before (step 0, the base), each
pair's and each control's after with its reference's after, paired by seed; the in-training evaluation
keeps both per hop count, so the intervals resample seeds and hop counts (reports/zero/answers/)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .. import stats
from ..config import check
from ..io import write_json
from ..stats import fmt_effect
from . import pair_name, slug
from .answers import Answer, answers_table, write_answers
from .figures import (
    RANGES,
    SEED_RANGE,
    SHARE_YLIM,
    SMOOTH_NOTE,
    Panel,
    error_bars,
    evaluated,
    guess_line,
    legend_below,
    palette,
    panel_figure,
    save_figure,
    smoothed,
)
from .floors import chance, guess_sets
from .manifest import Manifest, manifest_answers
from .markdown import md_table, write_markdown
from .paths import answers_dir, manifest_path, run_inputs, study_metrics_path
from .runs import Run, as_runs, describe, eval_column, load_runs
from .wording import CONSTANT, DOWN, UP, change, neutral, of

SECTION = "studies.zero"
GUESS_ROLE = "think"  # the thinking set every run evaluates on: the random guess its figures draw, on its task's
OUT = "reports/zero"


@dataclass
class Config:
    runs: dict[str, list[str] | str] = field(default_factory=dict)  # arm label -> GRPO runs (one per seed)
    pairs: list[list[str]] = field(default_factory=list)  # [a, b]: arm b's think rate after RL against arm a's
    controls: dict[str, dict[str, list[str] | str]] = field(default_factory=dict)  # arm -> {reward -> runs}
    present: float = 0.01  # a base "already thinks" when its think rate before RL is at least this
    rise: float = 0.05  # RL "acted" when the think rate rose by at least this (absolute)
    equivalence: float = 0.01  # half-width of the equivalence region (set from params studies.equivalence)
    tasks: dict[str, str] = field(default_factory=dict)  # checkpoint -> its task, from params (stage.load_config)

    def __post_init__(self):
        self.runs = {label: as_runs(rs) for label, rs in self.runs.items()}
        check(bool(self.runs) and all(self.runs.values()), "runs", "need at least one arm with one run")
        check(0 <= self.present <= 1 and 0 <= self.rise <= 1, "present", "present and rise must be in [0, 1]")
        for pair in self.pairs:
            check(len(pair) == 2 and all(p in self.runs for p in pair), "pairs",
                  f"each pair is two arms of `runs`, got {pair}")
        for base, rewards in self.controls.items():
            check(base in self.runs, "controls", f"{base!r} is not an arm of `runs` (the true reward from that base)")
            check(bool(rewards), "controls", f"{base!r} names no reward")
            self.controls[base] = {r: as_runs(rs) for r, rs in rewards.items()}


def control_label(base: str, reward: str) -> str:
    return f"{base} with {reward} reward"


def arms_of(cfg: Config) -> dict[str, list[str]]:
    """Every arm label -> its runs: the true-reward arms, then each base's reward controls."""
    return {**cfg.runs, **{control_label(b, r): rs for b, rewards in cfg.controls.items() for r, rs in rewards.items()}}


def all_runs(cfg: Config) -> list[str]:
    return list(dict.fromkeys(r for rs in arms_of(cfg).values() for r in rs))


def inputs(cfg: Config) -> list[str]:
    return [*run_inputs(all_runs(cfg), cfg.tasks, metrics=False), *guess_sets(all_runs(cfg), cfg.tasks, GUESS_ROLE)]


def outputs(cfg: Config) -> list[str]:
    figures = [f"{OUT}/training.png", f"{OUT}/by_hops.png", f"{OUT}/think_vs_direct.png"]
    figures += [f"{OUT}/rewards.png"] if cfg.controls else []
    return [*figures, f"{OUT}/table.md", manifest_path("zero"), study_metrics_path("zero"), answers_dir("zero")]


MEASURES = {"think": "", "acc": "_accuracy"}  # per-hop-count measure -> its answers' name suffix


def by_difficulty(run: Run, which: int, measure: str = "think") -> dict[int, np.ndarray]:
    """{seed: think rate (or accuracy) per hop count} of one evaluation (which = 0: the base, -1: after RL)."""
    cols = sorted((int(c.split(".")[1]), c) for c in run.evals if c.endswith(f".{measure}"))
    return {int(run.job["seed"]): np.array([float(run.evals[c].iloc[which]) for _, c in cols])}


def paired_rates(a_runs: list[Run], b_runs: list[Run], wa: int, wb: int,
                 measure: str = "think") -> tuple[np.ndarray, np.ndarray]:
    """(seeds, hop counts) rates of two arms (evaluation wa of a, wb of b) on their common seeds."""
    a = {k: v for r in a_runs for k, v in by_difficulty(r, wa, measure).items()}
    b = {k: v for r in b_runs for k, v in by_difficulty(r, wb, measure).items()}
    seeds = sorted(set(a) & set(b))
    if not seeds:
        raise ValueError(f"runs {[r.name for r in a_runs]} and {[r.name for r in b_runs]} share no seed")
    return np.stack([a[s] for s in seeds]), np.stack([b[s] for s in seeds])


def study_answers(cfg: Config, runs: dict[str, Run], measures=tuple(MEASURES)) -> list[Answer]:
    """Per measure (think rate, accuracy): each arm after RL vs before, each pair and reward control vs its
    reference after RL."""
    arms = {label: [runs[r] for r in rs] for label, rs in arms_of(cfg).items()}
    refs = [*cfg.pairs, *([b, control_label(b, r)] for b, rewards in cfg.controls.items() for r in rewards)]
    out = []
    for measure in measures:
        suffix = MEASURES[measure]
        for label, arm in arms.items():
            xa, xb = paired_rates(arm, arm, 0, -1, measure)
            out.append(Answer(f"{slug(label)}{suffix}_after_vs_before", f"{label} before", f"{label} after",
                              stats.paired(xa, xb), cfg.equivalence))
        for a, b in refs:
            xa, xb = paired_rates(arms[a], arms[b], -1, -1, measure)
            out.append(Answer(pair_name(a, b, f"after{suffix}"), f"{a} after", f"{b} after",
                              stats.paired(xa, xb), cfg.equivalence))
    return out


def profile(run: Run, which: int) -> dict:
    """The thinking profile of the first (which = 0, the base) or last (-1) evaluation: "think" the well-formed
    think rate, "think_any" any trace (an evaluation written before it existed counted any trace as "think":
    then both are that count); conditional accuracies are None when no response of that kind exists (thinking
    well: think > 0; direct, no trace at all: think_any < 1)."""
    row = run.evals.iloc[which]
    think = float(eval_column(run, "think").iloc[which])
    any_trace = float(row["think_any"]) if "think_any" in run.evals else think
    return {"think": think, "think_any": any_trace, "acc": float(row["acc"]),
            "acc_think": float(row["acc_think"]) if think > 0 else None,
            "acc_direct": float(row["acc_direct"]) if any_trace < 1 else None,
            "by_difficulty": {int(c.split(".")[1]): float(row[c]) for c in run.evals if c.endswith(".think")}}


def verdict(before: float, after: float, x: Answer, cfg: Config) -> tuple[str, str]:
    """(the kind, a short phrase with the numbers): "created" or "selected" only where the think rate's
    interval (after − before, seeds as the unit) lies above 0 and the rise reaches `rise`; "raised" above 0
    by less, "lowered" below; else the interval's neutral word (`wording`)."""
    k = of(x.cmp, cfg.equivalence)
    if k == UP:
        kind = ("created" if before < cfg.present else "selected") if after - before >= cfg.rise else "raised"
    else:
        kind = "lowered" if k == DOWN else neutral(k, cfg.equivalence)
    return kind, f"{kind}: think rate {before:.1%} → {after:.1%}, {change(x.cmp, cfg.equivalence)}"


def own_change(answers: list[Answer]) -> dict[str, Answer]:
    """{arm: its think rate after RL against its own before}."""
    return {x.a.removesuffix(" before"): x for x in answers if x.pair.endswith("_after_vs_before")}


PHRASES = {"selected": "RL selects thinking in", "created": "creates it in", "lowered": "lowers it in"}


def phrase(kind: str, cfg: Config) -> str:
    if kind == "raised":
        return f"raises it by less than {cfg.rise:.0%} (absolute) in"
    return PHRASES.get(kind, f"{kind} in")


THINK_YLABEL = "share of responses with a well-formed trace"  # the think rate (thinks_well), every figure's axis


def training_figure(cfg: Config, runs: dict[str, Run], path: Path, guess: float | None = None) -> None:
    colors = palette(cfg.runs)

    def curves(make, column, from_evals):
        cut = {} if from_evals else {"bounds": RANGES[column]}
        return [make(b, [eval_column(runs[r], column) if from_evals else runs[r].history[column] for r in rs],
                     colors[b], **cut) for b, rs in cfg.runs.items()]

    panel_figure([
        Panel("Think rate on the fixed thinking set (16 samples per problem)", THINK_YLABEL,
              curves(evaluated, "think", True)),
        Panel("Verified accuracy on the fixed thinking set (sampled)", "accuracy (fraction correct)",
              curves(evaluated, "acc", True), guess=guess),
        Panel("Think rate of the training samples", THINK_YLABEL, curves(smoothed, "rollout/think_rate", False)),
        Panel("True (verified) reward of the training samples", "mean reward per sample (0–1)",
              curves(smoothed, "reward/true", False)),
    ], f"GRPO from each mixed base: thinking and accuracy during RL ({SEED_RANGE}; {SMOOTH_NOTE})",
       path)


def rewards_figure(cfg: Config, runs: dict[str, Run], path: Path, guess: float | None = None) -> None:
    """Per base with reward controls: think rate and accuracy against step, the true reward beside each control."""
    panels = []
    for base, rewards in cfg.controls.items():
        arms = {"true reward": cfg.runs[base], **{f"{r} reward": rs for r, rs in rewards.items()}}
        colors = palette(arms)
        for column, what, ylabel in (("think", "think rate", THINK_YLABEL),
                                     ("acc", "accuracy", "accuracy (fraction correct)")):
            panels.append(Panel(f"Base {base}: {what} on the thinking set", ylabel,
                                [evaluated(label, [eval_column(runs[r], column) for r in rs], colors[label])
                                 for label, rs in arms.items()], guess=guess if column == "acc" else None))
    panel_figure(panels, "Reward controls: GRPO with the true reward and with each control reward from the same base "
                 f"(verified accuracy; {SEED_RANGE})", path)


def by_hops_figure(cfg: Config, prof: dict, path: Path) -> None:
    fig, axes = plt.subplots(1, len(cfg.runs), figsize=(3.6 * len(cfg.runs), 3.8), squeeze=False)
    for ax, b in zip(axes[0], cfg.runs):
        drawn = []
        for when, style in (("before", {"ls": "--", "marker": "o", "mfc": "none"}), ("after", {"marker": "o"})):
            ks = sorted(prof[b][when]["by_difficulty"])
            ys = [prof[b][when]["by_difficulty"][k] for k in ks]
            err = prof[b][when].get("by_difficulty_ci")
            # a rate lies in [0, 1]: a t-interval of few seeds that overshoots is cut there
            yerr = None if err is None else [[max(0.0, y - max(0.0, err[k][0])) for k, y in zip(ks, ys)],
                                             [max(0.0, min(1.0, err[k][1]) - y) for k, y in zip(ks, ys)]]
            ax.errorbar(ks, ys, yerr=yerr, capsize=3, label=f"{when} RL", **style)
            drawn += ys if err is None else [min(1.0, max(0.0, v)) for k in ks for v in err[k]]
        ax.set(title=f"base {b}", xlabel="hop count k", ylim=SHARE_YLIM)  # siblings: one share axis
        ax.set_ylabel(THINK_YLABEL)
        ax.grid(alpha=0.3)
    fig.suptitle("Think rate per hop count before (the mixed base) and after GRPO (mean over seeds; error bars: "
                 "95% CI over seeds where there are several)")
    legend_below(fig, axes[0][0])
    save_figure(fig, path)


RARE = 0.01  # bars resting on fewer than this share of the responses are marked in the figure


def think_vs_direct_figure(cfg: Config, prof: dict, path: Path, guess: float | None = None) -> None:
    # a thinking response's accuracy is verified (answer and trace); a direct one has no trace to verify, so its
    # accuracy is the answer's alone: the two are marked apart (hatched: answer-only)
    bars = [("acc_think", "before", "thinking, before (verified)"),
            ("acc_think", "after", "thinking, after (verified)"),
            ("acc_direct", "before", "direct, before (answer-only)"),
            ("acc_direct", "after", "direct, after (answer-only)")]
    colors = ["#56B4E9", "#0072B2", "#F0E442", "#E69F00"]
    fig, ax = plt.subplots(figsize=(1.6 + 1.9 * len(cfg.runs), 4.2))
    width = 0.8 / len(bars)
    for i, ((key, when, label), color) in enumerate(zip(bars, colors)):
        xs = [j + (i - 1.5) * width for j in range(len(cfg.runs))]
        ys = [prof[b][when][key] for b in cfg.runs]
        # share of the responses behind each bar: a bar resting on a handful of responses is marked
        # (thinking well: think; direct, no trace at all: 1 - think_any; a trace of the wrong form is in neither)
        shares = [prof[b][when]["think"] if key == "acc_think" else 1 - prof[b][when].get("think_any",
                                                                                            prof[b][when]["think"])
                  for b in cfg.runs]
        cis = [prof[b][when].get(f"{key}_ci") for b in cfg.runs]
        ends = [(None, None) if None in (y, ci) else (max(0.0, ci[0]), min(1.0, ci[1])) for y, ci in zip(ys, cis)]
        err = error_bars(ys, *zip(*ends))
        ax.bar(xs, [y if y is not None else 0 for y in ys], width, color=color, label=label, yerr=err,
               capsize=2, error_kw={"elinewidth": 0.8}, hatch="//" if key == "acc_direct" else None,
               edgecolor="0.3" if key == "acc_direct" else None, lw=0)
        for x, y, share, (_, top) in zip(xs, ys, shares, ends):
            note = "n/a" if y is None else f"<{RARE:.0%}" if share < RARE else None
            if note:  # above the whisker too, so the two never cross
                ax.text(x, max(y or 0, top or 0) + 0.02, note, rotation=90, ha="center", va="bottom", size=7, c="0.4")
    if guess is not None:
        guess_line(ax, guess)
    ax.set_xticks(range(len(cfg.runs)), [f"base {b}" for b in cfg.runs])
    ax.set(xlabel="starting base", ylabel="accuracy (thinking: verified; direct: answer-only)", ylim=SHARE_YLIM,
           title=f"Accuracy when thinking (verified) vs when answering directly (answer-only, hatched; 95% CI over "
                 f"seeds)\n(n/a: no such "
                 f"responses; <{RARE:.0%}: under {RARE:.0%} of the responses, a handful of answers)")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    fig.tight_layout()
    save_figure(fig, path)


def fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def table_rows(cfg: Config, prof: dict, own: dict[str, Answer]) -> list[dict]:
    rows = []
    for b, p in prof.items():
        before, after = p["before"], p["after"]
        rows.append({"base": b, "think before": before["think"], "think after": after["think"],
                     "any trace before → after": f"{fmt(before.get('think_any'))} → {fmt(after.get('think_any'))}",
                     "accuracy before": before["acc"], "accuracy after": after["acc"],
                     "acc. thinking before → after": f"{fmt(before['acc_think'])} → {fmt(after['acc_think'])}",
                     "acc. direct before → after": f"{fmt(before['acc_direct'])} → {fmt(after['acc_direct'])}",
                     "does RL create or select thinking?": verdict(before["think"], after["think"], own[b], cfg)[1]})
    return rows


def verdicts(cfg: Config, prof: dict, answers: list[Answer], entry) -> str:
    """The arms grouped by verdict, in order of first appearance, each as entry(arm, its answer)."""
    own = own_change(answers)
    kinds = {b: verdict(p["before"]["think"], p["after"]["think"], own[b], cfg)[0] for b, p in prof.items()}
    order = [*PHRASES, "raised", *dict.fromkeys(kinds.values())]  # the directed verdicts first, as the table
    return "; ".join(f"{phrase(kind, cfg)} " + ", ".join(entry(b, own[b]) for b in prof if kinds[b] == kind)
                     for kind in dict.fromkeys(order) if kind in kinds.values())


def answer(cfg: Config, prof: dict, answers: list[Answer], acc: list[Answer] = ()) -> str:
    def entry(b, x):
        p = prof[b]
        return f"{b} ({p['before']['think']:.1%} → {p['after']['think']:.1%}, {change(x.cmp, cfg.equivalence)})"

    text = verdicts(cfg, prof, answers, entry) + ". Think rate: " + "; ".join(x.text for x in answers) + "."
    return text + (" Accuracy: " + "; ".join(x.text for x in acc) + "." if acc else "")


def summary(cfg: Config, prof: dict, answers: list[Answer]) -> str:
    """The front page's paragraph: each arm's think rate after − before with its interval, grouped by what
    the interval supports (the accuracy and the pairs: details)."""
    def entry(b, x):
        return b if of(x.cmp, cfg.equivalence) == CONSTANT else f"{b} {fmt_effect(x.cmp, x.bounds)}"

    return ("Think rate after − before GRPO [95% CI]: " + verdicts(cfg, prof, answers, entry)
            + " (MDEs and accuracy: details).")


def arm_profile(arm: list[Run], which: int) -> dict:
    """The thinking profile averaged over an arm's seeds (conditional accuracies over the seeds that have
    such responses), with the 95% interval over seeds of the think rate per hop count when it has several."""
    profs = [profile(r, which) for r in arm]

    def avg(key):
        vals = [p[key] for p in profs if p[key] is not None]
        return sum(vals) / len(vals) if vals else None

    ks = sorted(profs[0]["by_difficulty"])
    out = {key: avg(key) for key in ("think", "think_any", "acc", "acc_think", "acc_direct")}
    for key in ("acc_think", "acc_direct"):  # over the seeds that have such responses (the seed is the unit)
        vals = [[p[key]] for p in profs if p[key] is not None]
        iv = stats.mean_ci(vals) if len(vals) > 1 else None
        out[f"{key}_ci"] = None if iv is None else (iv.lo, iv.hi)
    out["by_difficulty"] = {k: sum(p["by_difficulty"][k] for p in profs) / len(profs) for k in ks}
    if len(profs) > 1:
        ivs = {k: stats.mean_ci([[p["by_difficulty"][k]] for p in profs]) for k in ks}
        out["by_difficulty_ci"] = {k: (iv.lo, iv.hi) for k, iv in ivs.items()}
    return out


def report(cfg: Config, root: Path) -> None:
    runs = load_runs(root, all_runs(cfg), cfg.tasks, metrics=False)
    arms = {b: [runs[r] for r in rs] for b, rs in arms_of(cfg).items()}
    prof = {b: {"before": arm_profile(arm, 0), "after": arm_profile(arm, -1)}
            for b, arm in arms.items()}
    think, acc = study_answers(cfg, runs, ("think",)), study_answers(cfg, runs, ("acc",))
    answers, own = think + acc, own_change(think)
    out = root / OUT
    guess = chance(runs[all_runs(cfg)[0]].job, root, inputs(cfg))
    training_figure(cfg, runs, out / "training.png", guess)
    by_hops_figure(cfg, prof, out / "by_hops.png")
    think_vs_direct_figure(cfg, prof, out / "think_vs_direct.png", guess)
    if cfg.controls:
        rewards_figure(cfg, runs, out / "rewards.png", guess)
    write_markdown(out / "table.md", "Study: does RL create thinking or select it?", answer(cfg, prof, think, acc), [
        md_table(pd.DataFrame(table_rows(cfg, prof, own)),
                 "Thinking before (the mixed base) and after GRPO",
                 f"Sampled on the thinking set (n = 8, k = 1…7), 16 samples per problem; means over each arm's seeds. "
                 f"'think': the share of responses with a well-formed trace (a trace, the mark, one answer, the end), "
                 f"the measure every verdict reads; 'any trace': the share with a trace step before the mark of any "
                 f"form, shown beside it (a degenerate policy's garbage after a trace counts there alone). Accuracy "
                 f"thinking: of the well-formed traces (verified); direct: of the responses with no trace "
                 f"(answer-only). "
                 f"'created': the 95% interval of the think rate's change lies above 0, the base thought in under "
                 f"{cfg.present:.0%} of its responses and the rate rose by at least {cfg.rise:.0%} (absolute); "
                 f"'selected': the same from a base that already thought at least that often; 'raised': above 0 but "
                 f"by less; 'lowered': below 0; otherwise the interval's word (no detectable difference, equivalent)."),
        answers_table(think, "Paired comparisons of the think rate",
                      "Think rate per hop count (seeds x hop counts: the in-training evaluation keeps no per-problem "
                      "record)."),
        answers_table(acc, "Paired comparisons of the accuracy",
                      "Sampled accuracy per hop count on the thinking set (seeds x hop counts).")])
    metrics = {b: {"think_before": p["before"]["think"], "think_after": p["after"]["think"],
                   "think_any_before": p["before"]["think_any"], "think_any_after": p["after"]["think_any"],
                   "acc_before": p["before"]["acc"], "acc_after": p["after"]["acc"],
                   "acc_think_after": p["after"]["acc_think"], "acc_direct_after": p["after"]["acc_direct"],
                   "seeds": len(arms[b]),
                   "verdict": verdict(p["before"]["think"], p["after"]["think"], own[b], cfg)[0]}
               for b, p in prof.items()}
    write_json(root / study_metrics_path("zero"), metrics)
    write_answers(root, "zero", answers)
    manifest(cfg, runs, prof, think, acc).write(root)


def manifest(cfg: Config, runs: dict[str, Run], prof: dict, answers: list[Answer], acc: list[Answer]) -> Manifest:
    think = ", ".join(f"{b} {p['before']['think']:.2f} → {p['after']['think']:.2f}" for b, p in prof.items())
    accuracy = ", ".join(f"{b} {p['before']['acc']:.2f} → {p['after']['acc']:.2f}" for b, p in prof.items())
    last = list(cfg.runs)[-1]
    hops = prof[last]["after"]["by_difficulty"]
    controls = [("zero/rewards.png", f"Think rate and accuracy against step from {', '.join(cfg.controls)} under "
                 f"the true reward and each control reward ({SEED_RANGE}).")] if cfg.controls else []
    return Manifest(
        "zero", "R1-Zero: does RL create thinking or select it?",
        "Starting from bases that think rarely or never, does GRPO make the policy write traces?",
        answer(cfg, prof, answers, acc), [describe(runs[r], ("init", "method", "reward", "seed", "temperature"))
                                   for r in all_runs(cfg)],
        [("zero/training.png", f"Think rate (well-formed traces) and verified accuracy against step from each mixed "
          f"base ({SEED_RANGE}; {SMOOTH_NOTE}); think rate {think}."),
         ("zero/by_hops.png", f"Think rate per hop count before and after RL; after RL from {last}: "
          + ", ".join(f"k={k} {v:.2f}" for k, v in sorted(hops.items())) + "."),
         ("zero/think_vs_direct.png", f"Accuracy of responses that think vs answer directly, before and after; "
          f"overall accuracy {accuracy}.")] + controls,
        ["zero/table.md"], manifest_answers(answers + acc), summary=summary(cfg, prof, answers))
