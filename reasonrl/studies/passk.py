"""Study `passk`, the edge of competence: does RL widen or narrow pass@k, depending on where its data sit?
Each arm of runs against the bases it started from, pass@k for k = 1…N on several sets beside the
random-guess baseline, with distinct answers and sample entropy (each beside a uniform guess's value: `guess`),
and where each arm's curve crosses the base's.

An arm is a list of models of `passk.models` (one per seed; `passk.arms`, default one model per arm), all
of one task. pass@k is computed per problem (the unbiased estimator from each problem's count of verified
samples; of right answers for the answer-only columns) so every curve carries a 95% band whose unit is the
seed (reasonrl.stats), and each arm is compared with its task's base arm (`passk.bases`) at every k, paired by
seed position and problem. A curve "crosses" the base's only when the interval excludes 0 on both sides."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .. import stats
from ..config import check, from_dict
from ..io import read_json, write_json
from ..metrics import pass_at_k
from . import PasskModel, newsol, pair_name
from . import passk_data_path as data_path
from .answers import Answer, ArmOutcomes, answers_table, arm_interval, with_answer, write_answers
from .figures import (
    MIN_BAND_RUNS,
    SHARE_YLIM,
    arm_style,
    arm_styles,
    error_bars,
    legend_below,
    save_figure,
    verified_floor,
)
from .manifest import Manifest, manifest_answers
from .markdown import md_table, write_markdown
from .paths import answers_dir, manifest_path, study_metrics_path
from .runs import seed_count

SECTION = "passk"
OUT = "reports/passk"
TIE = 1e-9  # differences of pass@k below this count as equal (no side of the base)


@dataclass
class Config:
    """What the report reads: params passk.bases, passk.models, passk.arms, passk.pairs; studies.equivalence."""

    bases: list[str] = field(default_factory=lambda: ["base"])  # each task's base arm: the others' reference
    models: dict[str, PasskModel] = field(default_factory=dict)  # model key -> checkpoint and task
    arms: dict[str, list[str]] = field(default_factory=dict)  # arm label -> model keys, one per seed ({}: one each)
    pairs: list[list[str]] = field(default_factory=list)  # further comparisons [a, b]: b against a
    equivalence: float = 0.01  # half-width of the equivalence region (set from params studies.equivalence)

    def __post_init__(self):
        if not self.arms:
            self.arms = {key: [key] for key, m in self.models.items() if m.draw == 1}  # a draw 2: newsol's
        for label, keys in self.arms.items():
            check(bool(keys) and all(k in self.models for k in keys), "arms",
                  f"{label}: {keys} must be keys of passk.models {list(self.models)}")
            check(len({self.models[k].task for k in keys}) == 1, "arms", f"{label}: its models are of "
                  f"tasks {sorted({self.models[k].task for k in keys})}; an arm holds one task")
            bad = [k for k in keys if self.models[k].sets and self.models[k].draw == 1]  # curves read every set
            check(not bad, f"models.{(bad or [''])[0]}.sets", f"in arm {label!r}: an arm's models sample every set")
        for b in self.bases:
            check(b in self.arms, "bases", f"{b!r} is not one of the arms {list(self.arms)}")
        tasks = [self.task_of(b) for b in self.bases]
        check(len(set(tasks)) == len(tasks) and set(tasks) == {self.task_of(a) for a in self.arms}, "bases",
              f"need one base arm per task of the arms, got {dict(zip(self.bases, tasks))}")
        for pair in self.pairs:
            check(len(pair) == 2 and all(a in self.arms for a in pair) and pair[0] != pair[1], "pairs",
                  f"{pair}: each pair is two different arms of {list(self.arms)}")
            check(self.task_of(pair[0]) == self.task_of(pair[1]), "pairs", f"{pair}: the two arms' tasks differ")

    def task_of(self, arm: str) -> str:
        return self.models[self.arms[arm][0]].task

    def base_of(self, arm: str) -> str:  # the base arm of `arm`'s task
        return next(b for b in self.bases if self.task_of(b) == self.task_of(arm))

    def tasks(self) -> dict[str, list[str]]:  # {task: its arms, base first}, tasks in the order of `bases`
        return {self.task_of(b): [b] + [a for a in self.arms if a != b and self.task_of(a) == self.task_of(b)]
                for b in self.bases}


READS = ("bases", "models", "arms", "pairs")


def load_config(params: dict) -> Config:
    return from_dict(Config, {k: v for k, v in (params.get(SECTION) or {}).items() if k in READS}, SECTION)


def inputs(cfg: Config) -> list[str]:
    return [data_path(key) for keys in cfg.arms.values() for key in keys] + newsol.inputs(cfg)


def outputs(cfg: Config) -> list[str]:
    return [f"{OUT}/passk.png", f"{OUT}/diversity.png", f"{OUT}/table.md", manifest_path("passk"),
            study_metrics_path("passk"), answers_dir("passk")]


# ----------------------------------------------------------------------------- per-problem pass@k

def arm_passk(cfg: Config, data: dict[str, dict], label: str, set_name: str, k: int,
              counts: str = "counts") -> ArmOutcomes:
    """pass@k per problem for each model (seed) of an arm from its verified `counts`, carrying the same from its
    answer-only ones ("counts_answer"); a one-model arm is seedless (pairs with all)."""
    keys = cfg.arms[label]
    by_seed = {None if len(keys) == 1 else i: np.array([pass_at_k(data[m]["N"], c, k)
                                                        for c in data[m]["sets"][set_name][counts]])
               for i, m in enumerate(keys)}
    arm = ArmOutcomes(label, by_seed, [str(i) for i in range(len(next(iter(by_seed.values()))))])
    return arm if counts != "counts" else with_answer(arm, arm_passk(cfg, data, label, set_name, k, "counts_answer"))


def curve_cis(cfg: Config, data: dict, set_name: str, ks: list[int],
              counts: str = "counts") -> dict[str, list[stats.Interval]]:
    """Every arm's pass@k at each k (verified; answer-only from "counts_answer"), 95% over seeds and problems."""
    return {label: [arm_interval(arm_passk(cfg, data, label, set_name, k, counts)) for k in ks] for label in cfg.arms}


def compared(cfg: Config, data: dict, a: str, b: str, set_name: str, ks: list[int]) -> list[Answer]:
    """Arm b against arm a at each k, paired by seed (the i-th model of each) and problem."""
    return [Answer.of(pair_name(a, b, set_name, f"k{k:03d}"), f"{a} pass@{k}", f"{b} pass@{k}",
                      arm_passk(cfg, data, a, set_name, k), arm_passk(cfg, data, b, set_name, k), cfg.equivalence)
            for k in ks]


def comparisons(cfg: Config, data: dict, set_name: str, ks: list[int]) -> dict[str, list[Answer]]:
    """{arm: [its paired comparison with its task's base at each k]}."""
    return {label: compared(cfg, data, cfg.base_of(label), label, set_name, ks)
            for label in cfg.arms if label not in cfg.bases}


def paired_means(answers: list[Answer]) -> tuple[list[float], list[float]]:  # on the seeds both arms have
    return [x.cmp.a for x in answers], [x.cmp.b for x in answers]


def detected_crossing(ks: list[int], answers: list[Answer]) -> str:
    """Where the arm is detectably above and below the base (the interval excludes 0 and is not inside the
    equivalence region: `Answer.side`): a crossing only when both sides are detected."""
    above = [k for k, x in zip(ks, answers) if x.side > 0]
    below = [k for k, x in zip(ks, answers) if x.side < 0]
    if above and below:
        first, second = ("above", "below") if min(above) < min(below) else ("below", "above")
        return (f"detectably {first} the base at k = {', '.join(map(str, above if first == 'above' else below))} "
                f"and {second} at k = {', '.join(map(str, below if first == 'above' else above))}: the curves cross")
    if above:
        return f"detectably above the base at k = {', '.join(map(str, above))}, no detectable crossing"
    if below:
        return f"detectably below the base at k = {', '.join(map(str, below))}, no detectable crossing"
    return "no detectable difference from the base at any k"


# ----------------------------------------------------------------------------- where curves cross

def crossings(ks: list[int], base: list[float], other: list[float]) -> list[tuple[int, int, str]]:
    """Each sign change of other − base: (last k on the old side, first k on the new side, "above → below"
    or "below → above"); points within TIE of the base are skipped."""
    side = [(k, 1 if o - b > TIE else -1) for k, b, o in zip(ks, base, other) if abs(o - b) > TIE]
    name = {1: "above", -1: "below"}
    return [(k0, k1, f"{name[s0]} → {name[s1]}") for (k0, s0), (k1, s1) in zip(side, side[1:]) if s0 != s1]


def describe_crossing(ks: list[int], base: list[float], other: list[float]) -> str:
    """Where the mean curves cross, untested: each phrase names the means (the test: `detected_crossing`)."""
    found = crossings(ks, base, other)
    if found:
        return "; ".join(f"means cross {d} between k = {k0} and k = {k1}" for k0, k1, d in found)
    diffs = [o - b for b, o in zip(base, other)]
    if all(abs(d) <= TIE for d in diffs):
        return "means equal at every k"
    return f"mean {'above' if max(diffs) > TIE else 'below'} the base's at every k"


def first_crossing(ks: list[int], base: list[float], other: list[float]) -> int | None:
    return next((k1 for _, k1, _ in crossings(ks, base, other)), None)


# ----------------------------------------------------------------------------- report

def curve(data: dict, set_name: str, key: str = "pass_at_k") -> tuple[list[int], list[float]]:
    return [int(k) for k in data["sets"][set_name][key]], list(data["sets"][set_name][key].values())


def arm_mean(cfg: Config, data: dict, label: str, set_name: str, key: str) -> float:
    return sum(data[m]["sets"][set_name][key] for m in cfg.arms[label]) / len(cfg.arms[label])


def guess(info: dict, N: int) -> tuple[float, float]:
    """(distinct answers, answer-token entropy in nats) of a uniform guess among the n answers each problem
    allows, N draws per problem, on one set of a data file (`info`: data["sets"][name]): the values the passk@
    stage wrote (`guess_distinct`, `guess_answer_entropy`: evaluate.uniform_guess_diversity, n (1 - (1 - 1/n)^N)
    and ln n averaged over the set's problems). A file measured before they existed holds only the guess's mean
    pass@1 g (`random_baseline`): n = 1 / g then, exact where every problem allows the same n (chain: 7 digits),
    otherwise n's harmonic mean over the problems (hop edge, rings 15 and 16: 15.48 for a mean 15.5).

    The measured entropy is not the answer's: it is the mean per token over the whole response (trace, mark,
    answer, end; `sample_entropy`), so ln n is the reference for the answer token alone, shown beside it under
    its own name, neither a floor nor a ceiling of it (a policy that guesses the answer uniformly and writes every
    other token for certain has a per-token mean of ln n over the response's length)."""
    if "guess_distinct" in info and "guess_answer_entropy" in info:
        return info["guess_distinct"], info["guess_answer_entropy"]
    n = 1 / info["random_baseline"]["1"]
    return n * (1 - (1 - 1 / n) ** N), float(np.log(n))


def measured(info: dict) -> str:  # "248 of 1,000 problems" (passk.eval.problems), or "1,000 problems": all
    n, of = info["problems"], info.get("of", info["problems"])
    return f"{n:,} problems" if n == of else f"{n:,} of {of:,} problems"


def base_data(cfg: Config, data: dict, task: str | None = None) -> dict:
    """The data of the first model of `task`'s base arm (the first task's when None): sets, ks and N."""
    return data[cfg.arms[cfg.bases[0] if task is None else cfg.tasks()[task][0]][0]]


def arm_colors(cfg: Config, part: int = 0) -> dict[str, str]:
    """A colour per arm, bases black (part=1: a marker); no two arms of any task share (colour, marker)."""
    return {arm: style[part] for arm, style in arm_styles(cfg.tasks().values()).items()}


def curve_panels(cfg: Config, data: dict, task: str, arms: list[str], s: str, cis: dict, cmps: dict,
                 ax, diff_ax, colors: dict) -> None:
    """One set of one task: each arm's pass@k curve on `ax` (verified: its floor is 0; the answer-only guess is a
    labelled reference, not a floor), each arm minus the base on `diff_ax`, and each further pair (`cfg.pairs`: the
    exposure arm against its own base) there too. An arm of fewer than MIN_BAND_RUNS seeds draws each seed's curve;
    from MIN_BAND_RUNS on, its 95% interval over seeds and problems."""
    markers = arm_colors(cfg, part=1)
    ks, _ = curve(base_data(cfg, data, task), s)
    for label in arms:
        ivs = cis[s][label]
        style = {"color": colors[label], "lw": 2.2 if label in cfg.bases else 1.5, "marker": markers[label],
                 "ls": arm_style(label)["ls"]}
        name = f"{label} ({seed_count(len(cfg.arms[label]))})"
        ax.plot(ks, [iv.mean for iv in ivs], ms=4, label=name, **style)
        if len(cfg.arms[label]) >= MIN_BAND_RUNS:  # pass@k lies in [0, 1]: an interval that overshoots is cut there
            ax.fill_between(ks, [max(0.0, iv.lo) for iv in ivs], [min(1.0, iv.hi) for iv in ivs],
                            color=style["color"], alpha=0.12, lw=0)
        else:
            for m in cfg.arms[label]:
                ax.plot(*curve(data[m], s), color=style["color"], lw=0.7, alpha=0.4, label="_run")
    pairs = [(label, cfg.base_of(label), cmps[s][label]) for label in arms[1:]]
    pairs += [(b, a, cmps.get("pairs", {}).get(s, {}).get((a, b))) for a, b in cfg.pairs if b in arms]
    for label, ref, answers in pairs:
        if not answers:
            continue
        name = label if ref == arms[0] else f"{label} (minus {ref})"
        diff_ax.plot(ks, [x.cmp.effect for x in answers], marker=markers[label], ms=4, color=colors[label],
                     ls=arm_style(label)["ls"], label=name)
        if len(cfg.arms[label]) >= MIN_BAND_RUNS:
            diff_ax.fill_between(ks, [max(-1.0, x.cmp.ci_lo) for x in answers],
                                 [min(1.0, x.cmp.ci_hi) for x in answers], color=colors[label], alpha=0.12, lw=0)
    if all(abs(x.cmp.effect) < 1e-12 and x.cmp.ci_lo == x.cmp.ci_hi for _, _, xs in pairs if xs for x in xs):
        diff_ax.text(0.5, 0.75, f"every arm equals {arms[0]} at every k here\n(nothing to compare)",
                     transform=diff_ax.transAxes, ha="center", va="center", fontsize=9, color="0.3")
    diff_ax.axhline(0, color="k", lw=1)
    verified_floor(ax)
    gks, ys = curve(base_data(cfg, data, task), s, "random_baseline")
    ax.plot(gks, ys, color="0.45", ls=":", lw=1.2, label="answer-only guess 1 − (1 − 1/n)^k: a reference (verifies 0)")
    info = base_data(cfg, data, task)["sets"][s]
    for a in (ax, diff_ax):
        a.set_xscale("log", base=2)
        a.set_xticks(ks, [str(k) for k in ks], minor=False)
        a.minorticks_off()
        a.set_xlabel("k (samples per problem, log scale)")
        a.grid(alpha=0.3)
    ax.set(title=f"{task}, {s}: difficulty {', '.join(map(str, info['difficulties']))}, {measured(info)}",
           ylabel="verified pass@k (fraction of problems solved)", ylim=SHARE_YLIM)
    diff_ax.set(title=f"{task}, {s}: arm minus {arms[0]} (paired; CI from {MIN_BAND_RUNS} seeds)",
                ylabel="verified pass@k minus the reference's")


def passk_figure(cfg: Config, data: dict[str, dict], sets: list[str], cis: dict, cmps: dict, path: Path) -> None:
    """Per task, a row of every arm's pass@k curve and a row of each arm minus the base, paired by seed and
    problem: near the ceiling the curves overlap within a line's width, so the differences (the study's
    question) get panels of their own, on one scale shared by every difference panel."""
    colors = arm_colors(cfg)
    tasks = cfg.tasks()
    ks = {s: curve(base_data(cfg, data), s)[0] for s in sets}
    cmps = {**cmps, "pairs": {s: {(a, b): compared(cfg, data, a, b, s, ks[s]) for a, b in cfg.pairs} for s in sets}}
    fig, axes = plt.subplots(2 * len(tasks), len(sets), figsize=(5.2 * len(sets), 8.2 * len(tasks)), squeeze=False)
    for row, (task, arms) in enumerate(tasks.items()):
        for col, s in enumerate(sets):
            curve_panels(cfg, data, task, arms, s, cis, cmps, axes[2 * row][col], axes[2 * row + 1][col], colors)
    diffs = [axes[2 * row + 1][col] for row in range(len(tasks)) for col in range(len(sets))]
    reach = max(max(abs(v) for v in ax.get_ylim()) for ax in diffs)
    for ax in diffs:  # sibling panels: one range
        ax.set_ylim(-min(reach, 1.05), min(reach, 1.05))
    fig.suptitle(f"Verified pass@k of each task's base and arms (unbiased estimator from N = "
                 f"{base_data(cfg, data)['N']} samples per problem; under {MIN_BAND_RUNS} seeds each seed's curve "
                 f"drawn thin, from {MIN_BAND_RUNS} the mean and 95% CI over seeds and problems)")
    handles = {}  # the curves' entries (with their seeds), and the difference panels' own pairs
    for row in range(len(tasks)):
        for col in range(len(sets)):
            for h, label in zip(*axes[2 * row][col].get_legend_handles_labels()):
                handles.setdefault(label, h)
            for h, label in zip(*axes[2 * row + 1][col].get_legend_handles_labels()):
                if "(minus " in label:
                    handles.setdefault(label, h)
    fig.tight_layout(rect=(0, 0.16 / len(tasks), 1, 0.98))
    fig.legend(list(handles.values()), list(handles), loc="lower center", ncols=min(len(handles), 4), fontsize=9,
               frameon=False)
    save_figure(fig, path)


GUESS_DASHES = {":": "dotted", "--": "dashed", "-.": "dash-dotted"}


def guess_dashes(cfg: Config) -> dict[str, str]:
    """Each task's line style for its uniform guess in the diversity figure: the tasks' guesses share one colour and
    one panel, so their dashes tell them apart."""
    return {task: list(GUESS_DASHES)[i % len(GUESS_DASHES)] for i, task in enumerate(cfg.tasks())}


def diversity_figure(cfg: Config, data: dict[str, dict], sets: list[str], path: Path) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(12, 6))  # the height holds the legend of every arm and both references
    width = 0.8 / len(cfg.arms)
    colors = arm_colors(cfg)
    # the tasks' bases share black, and this figure draws every task's arms on one axis: a hatch per task
    hatches = {task: ("", "//", "..", "xx")[i % 4] for i, task in enumerate(cfg.tasks())}
    for ax, key, title, ylabel in (
            (axes[0], "distinct_answers", "Distinct answers per problem (mean)", "distinct answers per problem"),
            (axes[1], "entropy", "Token entropy of own samples (nats, per response token)", "nats per response token")):
        for i, label in enumerate(cfg.arms):
            xs = [j + (i - (len(cfg.arms) - 1) / 2) * width for j in range(len(sets))]
            per_seed = [[data[m]["sets"][s][key] for m in cfg.arms[label]] for s in sets]
            ys = [sum(v) / len(v) for v in per_seed]
            # the spread over seeds: under MIN_BAND_RUNS each seed a dot on its bar; from MIN_BAND_RUNS the 95%
            # t-interval of the mean over seeds (never a min–max whisker)
            many = len(cfg.arms[label]) >= MIN_BAND_RUNS
            ivs = [stats.mean_ci(np.array(v, dtype=float)) if many else None for v in per_seed]
            # both measures are counts or entropies, never below 0: an interval over a few seeds is cut there
            yerr = error_bars(ys, [max(0.0, iv.lo) if iv else None for iv in ivs],
                              [iv.hi if iv else None for iv in ivs])
            ax.bar(xs, ys, width, color=colors[label], label=label, yerr=yerr if many else None, capsize=3,
                   hatch=hatches[cfg.task_of(label)], edgecolor="white", lw=0)
            if not many and len(cfg.arms[label]) > 1:
                for x, v in zip(xs, per_seed):
                    ax.plot([x] * len(v), v, ls="none", marker="o", ms=2.5, mfc="white", mec="0.15", mew=0.7,
                            label="_run")
        # what guessing alone would give (`guess`): n (1 - (1 - 1/n)^N) distinct answers of N draws; ln n, the
        # uniform guess's entropy at the answer token (the measured entropy is per token over the whole response)
        n_draws = base_data(cfg, data)["N"]
        dashes = guess_dashes(cfg)
        for j, s in enumerate(sets):
            for task in cfg.tasks():
                info = base_data(cfg, data, task)["sets"][s]
                n = 1 / info["random_baseline"]["1"]
                value = guess(info, n_draws)[0 if key == "distinct_answers" else 1]
                what = "distinct answers" if key == "distinct_answers" else "answer-token entropy ln n"
                ax.hlines(value, j - 0.45, j + 0.45, color="k", ls=dashes[task], lw=1.4,
                          label=f"uniform guess among ~{n:.0f} answers ({task}), its {what}: a reference"
                          if j == 0 else None)
        ax.set_xticks(range(len(sets)), sets)
        ax.set(xlabel="test set", ylabel=ylabel,
               title=f"{title}\n(dots: each seed under {MIN_BAND_RUNS}; whiskers: 95% CI from {MIN_BAND_RUNS} seeds)")
        ax.grid(alpha=0.3, axis="y")
    fig.suptitle(f"Diversity of {base_data(cfg, data)['N']} samples per problem at temperature 1")
    legend_below(fig, *axes)  # the right panel's reference lines are the guess's entropy, not its distinct answers
    save_figure(fig, path)


GUESS_DISTINCT, GUESS_ENTROPY = "uniform guess: distinct answers", "uniform guess: answer-token entropy ln n"
ENTROPY = "token entropy (nats)"


def table_rows(cfg: Config, data: dict[str, dict], sets: list[str], cis: dict, cmps: dict,
               answer: dict) -> list[dict]:
    """One row per set and arm; the diversity columns each with a uniform guess's value beside it (`guess`, on
    the arm's task)."""
    rows = []
    for s in sets:
        ks, _ = curve(base_data(cfg, data), s)
        for label in cfg.arms:
            ivs, (one, most) = cis[s][label], answer[s][label]
            rows.append({"set": s, "task": cfg.task_of(label), "arm": label, "seeds": len(cfg.arms[label]),
                         "pass@1 [95% CI]": stats.fmt_share(ivs[0]),
                         f"pass@{ks[-1]} [95% CI]": stats.fmt_share(ivs[-1]),
                         f"answer-only pass@1 / {ks[-1]}": f"{one.mean:.3f} / {most.mean:.3f}",
                         "distinct answers": arm_mean(cfg, data, label, s, "distinct_answers"),
                         GUESS_DISTINCT: (g := guess(base_data(cfg, data, cfg.task_of(label))["sets"][s],
                                                     base_data(cfg, data)["N"]))[0],
                         ENTROPY: arm_mean(cfg, data, label, s, "entropy"), GUESS_ENTROPY: g[1],
                         "mean curve vs base": "—" if label in cfg.bases else
                         describe_crossing(ks, *paired_means(cmps[s][label])),
                         "with 95% CIs": "—" if label in cfg.bases else detected_crossing(ks, cmps[s][label])})
    return rows


def study_metrics(cfg: Config, sets: list[str], ks: dict, cis: dict, cmps: dict, answer: dict | None = None) -> dict:
    """Each arm's pass@1 and pass@k_max per set; `answer`: curve_cis of "counts_answer" at those two ks."""
    out = {}
    for label in cfg.arms:
        out[label] = {}
        for s in sets:
            ivs = cis[s][label]
            out[label][s] = {"pass_at_1": ivs[0].mean, "pass_at_1_ci": [ivs[0].lo, ivs[0].hi],
                             "pass_at_max": ivs[-1].mean, "pass_at_max_ci": [ivs[-1].lo, ivs[-1].hi],
                             "k_max": ks[s][-1], "seeds": len(cfg.arms[label])}
            for key, iv in zip(("pass_at_1_answer", "pass_at_max_answer"), answer[s][label] if answer else ()):
                out[label][s][key] = iv.mean
            if label not in cfg.bases:
                out[label][s]["first_crossing_k"] = first_crossing(ks[s], *paired_means(cmps[s][label]))
                out[label][s]["with_cis"] = detected_crossing(ks[s], cmps[s][label])
    return out


def report(cfg: Config, root: Path) -> None:
    data = newsol.aligned({Path(p).stem: read_json(root / p) for p in inputs(cfg)})  # by model key, draw 2 too
    sets = list(base_data(cfg, data)["sets"])
    ks = {s: curve(base_data(cfg, data), s)[0] for s in sets}
    cis = {s: curve_cis(cfg, data, s, ks[s]) for s in sets}
    cmps = {s: comparisons(cfg, data, s, ks[s]) for s in sets}
    ans = {s: curve_cis(cfg, data, s, [ks[s][0], ks[s][-1]], "counts_answer") for s in sets}
    extra = {s: [compared(cfg, data, a, b, s, ks[s]) for a, b in cfg.pairs] for s in sets}
    passk_figure(cfg, data, sets, cis, cmps, root / OUT / "passk.png")
    diversity_figure(cfg, data, sets, root / OUT / "diversity.png")
    rows = table_rows(cfg, data, sets, cis, cmps, ans)
    # answer files at the ends of the curve (k = 1 and the largest k); the table has every k
    files = [x for s in sets for xs in cmps[s].values() for x in (xs[0], xs[-1])]
    new = newsol.results(cfg, data)  # the per-problem new solutions (a claim's primary)
    files += [x for s in sets for xs in extra[s] for x in (xs[0], xs[-1])] + [r.answer for r in new if r.answer]
    every = [x for s in sets for xs in [*cmps[s].values(), *extra[s]] for x in xs]
    on = "; ".join(f"{s}: {measured(base_data(cfg, data)['sets'][s])}" for s in sets)
    write_markdown(root / OUT / "table.md", "Study: pass@k of the base and of each arm", answer(cfg, rows, sets), [
        md_table(pd.DataFrame(rows), "pass@k, diversity, and where each arm's curve crosses the base's",
                 f"N = {base_data(cfg, data)['N']} samples per problem at temperature 1 ({on}); pass@k is the "
                 "unbiased estimator per problem from its verified samples (answer and trace right; answer-only: a "
                 "right answer), averaged over problems and seeds, with its 95% t-interval (the seed is the unit, with "
                 "the test set's problem term). Distinct answers: distinct parsed answers among a problem's N samples "
                 "(an unparsable one counts as one value), beside a uniform guess's among the n answers the problem "
                 "allows, n (1 − (1 − 1/n)^N), averaged over the problems. Token entropy: the mean per token over "
                 "the whole sampled response (trace, mark, answer, end), in nats; beside it a uniform guess's "
                 "entropy at the answer token, ln n averaged over the problems: the reference for the answer "
                 "position alone, not a floor or a ceiling of the measure (a policy that guesses the answer "
                 "uniformly and writes every other token for certain has a per-token mean of ln n over the "
                 "response's length). 'mean curve': where the mean curves cross, the base's over the arm's seeds "
                 "('between k = a and k = b': the last k on the old side and the first on the new side); 'with "
                 "95% CIs': the k at which the paired interval excludes 0."),
        answers_table(every, "Paired comparisons with the base at every k", "pass@k per problem."), newsol.table(new)])
    write_json(root / study_metrics_path("passk"), study_metrics(cfg, sets, ks, cis, cmps, ans))
    write_answers(root, "passk", files)
    manifest(cfg, data, rows, sets, files, newsol.not_computed(new)).write(root)


def answer(cfg: Config, rows: list[dict], sets: list[str]) -> str:
    return "; ".join(f"on {r['set']}: {r['arm']} {r['with 95% CIs']}" for r in rows if r["arm"] not in cfg.bases) + "."


def manifest(cfg: Config, data: dict, rows: list[dict], sets: list[str], files: list[Answer], lost: dict) -> Manifest:
    s = "edge" if "edge" in sets else sets[0]  # where RL's data sit
    kmax = [k for k in rows[0] if k.startswith("pass@")][-1]  # the largest k's column
    at = ", ".join(f"{r['arm']} {r['pass@1 [95% CI]']} / {r[kmax]}" for r in rows if r["set"] == s)
    ent = ", ".join(f"{r['arm']} {r['distinct answers']:.2f} / {r[ENTROPY]:.3f}" for r in rows if r["set"] == s)
    guesses = ", ".join(f"{task} {r[GUESS_DISTINCT]:.2f} / ln n {r[GUESS_ENTROPY]:.3f}" for task in cfg.tasks()
                        for r in [next(r for r in rows if r["set"] == s and r["task"] == task)])
    dashed = ", ".join(f"{task} {GUESS_DASHES[ls]}" for task, ls in guess_dashes(cfg).items())
    return Manifest(
        "passk", "pass@k at the edge of competence: where does RL widen or narrow what the model can solve?",
        "Where RL's data sit against the base's competence: does RL raise pass@1, pass@k at large k, or neither, "
        "and does its curve cross the base's?", answer(cfg, rows, sets),
        [f"{label}: " + ", ".join(f"models/{data[m]['model']}.pt" for m in keys) for label, keys in cfg.arms.items()],
        [("passk/passk.png", f"pass@k against k (log scale) on {', '.join(sets)} beside the random-guess baseline, "
          f"with 95% CI bands, and each arm minus the base (paired); pass@1 / {kmax.split(' ')[0]} on {s}: {at}."),
         ("passk/diversity.png", f"Mean distinct answers per problem and token entropy of the samples (per "
          f"response token), each beside a uniform guess's ({dashed}: its distinct answers, and its entropy at the "
          f"answer token, ln n); on {s} (distinct / entropy): {ent}; a uniform guess: {guesses}.")],
        ["passk/table.md"], manifest_answers(files), summary=summary(cfg, data, rows, s, kmax), not_computed=lost)


def summary(cfg: Config, data: dict, rows: list[dict], s: str, kmax: str) -> str:
    """The front page's paragraph: each arm's pass@1 / pass@kmax on s, each task beside a random guess's."""
    parts = []
    for task in cfg.tasks():
        _, guess = curve(base_data(cfg, data, task), s, "random_baseline")
        parts.append(f"{task} (answer-only guess {guess[0]:.3f} / {guess[-1]:.3f}): " + ", ".join(
            f"{r['arm'].removeprefix(task + ' ')} {r['pass@1 [95% CI]'].split(' ')[0]} / {r[kmax].split(' ')[0]}"
            for r in rows if r["set"] == s and r["task"] == task))
    return (f"Verified pass@1 / {kmax.split(' ')[0]} on {s}, seed means (a guess verifies 0). "
            + "; ".join(parts) + ".")
