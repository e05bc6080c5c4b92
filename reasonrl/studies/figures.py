"""Figures shared by the study reports: curves with t-interval bands over seeds, panel grids, failure-mix
bars. Every figure goes through save_figure (tests/test_figures.py catches it there to read its data)."""

from __future__ import annotations

import math
import textwrap
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.font_manager import FontProperties  # noqa: E402
from scipy import stats as sps  # noqa: E402

from .. import stats  # noqa: E402
from ..io import atomic_path  # noqa: E402

# per-step training curves: a centred mean over this many steps, shrinking at the ends, so that the curve starts
# at step 1 where the data start (a trailing mean lags the raw value and kinks where its window fills)
SMOOTH = 9
SMOOTHING = f"centred {SMOOTH}-step mean"  # narrowing to the raw value at the first and last step
SMOOTH_NOTE = f"per-step curves: {SMOOTHING}, its window narrowing over the first and last {SMOOTH // 2} steps"
STEP = "RL step"
# Figure rule (docs/studies.md, "Figure rules"): an arm of fewer than MIN_BAND_RUNS runs draws each run (thin) and
# their mean; from MIN_BAND_RUNS runs on, the mean with its 95% run-level t-interval. Never a min–max band: over three
# runs it hides a spike of one, and over eight it grows with the number of runs.
MIN_BAND_RUNS = 5
SEED_RANGE = f"each run thin and their mean where fewer than {MIN_BAND_RUNS} runs; else mean and 95% CI over runs"
# A share (an accuracy, a rate, a fraction) is drawn on one axis from 0 to 1 (a margin for a marker at a bound), so
# sibling panels compare at a glance and a change near a ceiling is not magnified into a collapse.
SHARE_YLIM = (-0.02, 1.02)
SHARE_WORDS = ("accuracy", "pass@", "share", "fraction", "rate", "(0–1)")
VERIFIED_FLOOR = "verified floor: a guess verifies 0"

# Colours of hop world's outcome types (Problem.classify); an unknown type gets grey.
FAILURE_COLORS = {"correct": "#009E73", "overshoot": "#E69F00", "early": "#F0E442", "lookup": "#D55E00",
                  "miscopy": "#CC79A7", "malformed": "#999999"}


@dataclass
class Curve:
    label: str
    series: list[pd.Series]  # one per seed, each indexed by step; drawn as mean and 95% CI band over seeds
    smooth: int = 1  # centred moving average over this many steps before aggregating
    style: dict = field(default_factory=dict)  # passed to ax.plot (color, ls, marker, ...)
    points: bool = False  # evaluations every few steps: markers with error bars, not a band
    bounds: tuple[float, float] | None = None  # the measure's range (a share: 0-1); intervals are drawn inside it
    spread: str = "ci"  # kept for old callers: a min–max band is no longer drawn (MIN_BAND_RUNS)


@dataclass
class Panel:
    title: str
    ylabel: str
    curves: list[Curve]
    xlabel: str = STEP
    guess: float | None = None  # the random-guess accuracy: drawn so that a curve near it reads as chance
    ylim: tuple[float, float] | None = None  # one range shared by sibling figures, so they compare at a glance
    ref: tuple[float, str] | None = None  # a reference level and its label (e.g. the gold trace's length)
    stop: str | None = None  # why a curve can end early: its end is marked × and this note says why


def centred_mean(s: pd.Series, window: int) -> pd.Series:
    """The mean over `window` steps centred on each step, narrowed symmetrically at the ends (step 1 is its raw
    value, step 2 the mean of steps 1-3): no lag, and no window that reaches past the data on one side only."""
    half, n = window // 2, len(s)
    return pd.Series([s.iloc[i - r:i + r + 1].mean() for i in range(n) for r in [min(half, i, n - 1 - i)]],
                     index=s.index)


def band_stats(series: list[pd.Series], smooth: int = 1, bounds: tuple[float, float] | None = None,
               spread: str = "ci") -> pd.DataFrame:
    """Mean over series (seeds) aligned on their index, each smoothed first (centred window), with the
    95% t-interval of that mean over the seeds that have a value at that step (df = their number - 1:
    the seed is the unit). Where fewer than two seeds have a value the interval is the mean itself, and
    `n` says how many seeds each step rests on (a run that stopped early leaves the others). `bounds`: the
    measure's range, which a t-interval of two seeds can overshoot; the interval is cut there. spread "range":
    lo and hi are the seeds' min and max instead."""
    wide = pd.concat([centred_mean(s, smooth) for s in series], axis=1).sort_index()
    n = wide.notna().sum(axis=1)
    mean = wide.mean(axis=1)
    half = (sps.t.ppf(0.5 + stats.CONFIDENCE / 2, (n - 1).clip(lower=1)) * wide.std(axis=1, ddof=1)
            / np.sqrt(n)).where(n > 1, 0.0).fillna(0.0)
    lo, hi = (wide.min(axis=1), wide.max(axis=1)) if spread == "range" else (mean - half, mean + half)
    if bounds is not None:
        lo, hi = lo.clip(lower=bounds[0]), hi.clip(upper=bounds[1])
    # the interval holds its mean even where the mean lies past a bound (a smoothed mean of values at the bound
    # can round beyond it): error bars of negative length are an error in matplotlib
    return pd.DataFrame({"mean": mean, "lo": np.minimum(lo, mean), "hi": np.maximum(hi, mean), "n": n})


def error_bars(ys, lows, highs) -> np.ndarray:
    """matplotlib's (2, n) yerr of bars at `ys` with whiskers from `lows` to `highs` (None: no whisker). A mean and
    its interval's ends computed apart can lie a float step the wrong way; a negative length is an error there."""
    return np.array([[0.0 if lo is None else max(0.0, y - lo) for y, lo in zip(ys, lows)],
                     [0.0 if hi is None else max(0.0, hi - y) for y, hi in zip(ys, highs)]])


def band(ax, curve: Curve) -> tuple[float, float, str] | None:
    """The mean of a curve over its runs: from MIN_BAND_RUNS runs with its 95% run-level interval (a band for
    per-step curves, error bars on the points of in-training evaluations: the line between them is not data);
    below that each run drawn thin beside the mean, so a spike of one run stays visible. A per-step curve returns
    its last drawn (step, value, colour), where a truncated arm is marked."""
    st = band_stats(curve.series, curve.smooth, curve.bounds)
    few = len(curve.series) < MIN_BAND_RUNS
    color = curve.style.get("color")
    if curve.points and len(curve.series) > 1:
        if few:
            for s in curve.series:
                ax.plot(s.index, s.values, ls="none", marker=curve.style.get("marker", "o"), ms=3, alpha=0.45,
                        color=color, label="_run")
            ax.errorbar(st.index, st["mean"], yerr=None, label=curve.label, lw=0.8, alpha=0.95, **curve.style)
        else:
            err = np.array([st["mean"] - st["lo"], st["hi"] - st["mean"]])
            ax.errorbar(st.index, st["mean"], yerr=err, label=curve.label, capsize=3, elinewidth=1, lw=0.8,
                        alpha=0.9, **curve.style)
    else:
        # a per-step curve stops where its first seed stopped (runs with a rollout budget end at different steps):
        # past it the mean would switch to fewer seeds, and the interval of two would spike at the end
        st = st[st["n"] == len(curve.series)]
        style = {**curve.style}
        if "marker" in style and len(st) > 12:  # the arm's marker every tenth of the curve: its style in grey
            style.setdefault("markevery", max(1, len(st) // 10))
            style.setdefault("ms", 5)
        (line,) = ax.plot(st.index, st["mean"], label=curve.label, **style)
        if len(curve.series) > 1 and few:
            for s in curve.series:
                r = centred_mean(s, curve.smooth).loc[:st.index[-1]]
                ax.plot(r.index, r.values, color=line.get_color(), lw=0.7, alpha=0.35, label="_run")
        elif len(curve.series) > 1:
            ax.fill_between(st.index, st["lo"], st["hi"], color=line.get_color(), alpha=0.2, lw=0)
        return float(st.index[-1]), float(st["mean"].iloc[-1]), line.get_color()
    return None


# Okabe & Ito's colour-blind-safe palette (black last), and line styles that keep coincident arms apart
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
LINESTYLES = ("-", "--", "-.", ":", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)))
MARKERS = ("o", "s", "^", "D", "v", "P")


ARM_MARKERS = (*MARKERS, "X", "<", ">", "h", "*", "p")
# Okabe & Ito's colours without black (the bases') and without the pale yellow, then Tol's: eleven arms of one figure
# (hop's and chain's together) each get a colour of their own
ARM_COLORS = (*OKABE_ITO[:6], "#882255", "#44AA99", "#999933", "#332288", "#AA3377")  # no pale yellow: unreadable


# Every arm's one style (colour, marker, line style) in every figure of every study, by its name before any " ("
# (a seed count, a compute note): the bases black, the arms of one figure at slots of different colours (slot mod
# 11; mostly consecutive slots) so that they differ in colour.
# The pairs (colour i mod 11, marker (i mod 11 + i div 11) mod 12) are distinct for the first 132 names.
BASES = {"base": ("k", "o", "-"), "chain base": ("k", "s", "--")}
ARMS = (
    "grpo", "sft", "rft",  # methods and the headline
    # pass@k, hop then chain: placed so that arms drawn together differ in hue, not only in shade
    "grpo in", "grpo far", "grpo edge", "exposure base", "grpo far, exposure", "grpo mix",
    "chain grpo in", "chain grpo far", "chain grpo edge",
    # run 2's hop seed-2 arms: the pass@k diversity figure draws its bars for every arm on one axis, where only
    # colour (and a task's hatch) tells arms apart, so they take colours no other hop arm there holds (1 and 2)
    "grpo edge, seed 2", "grpo far, exposure, seed 2",
    "think2", "think10", "think0, t 1.5",  # R1-Zero's bases, with noskill and think0 below: colours 3-5, 7, 8
    "true reward", "random reward", "shuffled reward",  # R1-Zero's reward controls
    "proxy reward", "true reward of the samples", "greedy accuracy on the validation set",  # a hacking arm's measures
    "random, adam, mu 1", "random, adam, mu 2",  # the random reward's clip
    "rloo", "dr. grpo", "token_mean", "seq_mean_token_mean", "no kl", "k1 in reward", "k3 in loss",  # ablations
    "mu 1", "mu 2, symmetric", "mu 2, clip-higher", "off", "on", "on, equal updates", "lr 1e-4", "lr 3e-6",
    "noskill", "think0",
    # run 2's chain arms, drawn beside chain grpo edge (colour 0), hop's arms and the hatch of their task
    "chain grpo edge, seed 2", "chain grpo edge, verified",
)
ARM_LINESTYLES = ("-", "--", "-.", ":", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)))


def arm_key(label: str) -> str:
    """The arm a legend label names: lower case, without a bracketed note ("GRPO edge (8 seeds)": "grpo edge")."""
    return " ".join(label.split(" (")[0].lower().split())


def arm_style(label: str) -> dict:
    """The one style of the arm `label` names, in every figure: {color, marker, ls}. A name not in ARMS gets a
    slot past them from its hash (tests/test_figure_rules.py checks that the arms drawn never share one)."""
    key = arm_key(label)
    if key in BASES:
        color, marker, ls = BASES[key]
        return {"color": color, "marker": marker, "ls": ls}
    i = ARMS.index(key) if key in ARMS else len(ARMS) + zlib.crc32(key.encode()) % (132 - len(ARMS))
    a, b = i % len(ARM_COLORS), i // len(ARM_COLORS)
    return {"color": ARM_COLORS[a], "marker": ARM_MARKERS[(a + b) % len(ARM_MARKERS)],
            "ls": ARM_LINESTYLES[i % len(ARM_LINESTYLES)]}


def arm_styles(groups: Iterable[list[str]]) -> dict[str, tuple[str, str]]:
    """(colour, marker) per arm of every group (task) of one figure: `arm_style`'s, the same in every figure."""
    return {arm: (arm_style(arm)["color"], arm_style(arm)["marker"]) for g in groups for arm in g}


def palette(labels: Iterable[str]) -> dict[str, str]:
    """Each label's arm colour (`arm_style`), the same in every panel and every figure."""
    return {label: arm_style(label)["color"] for label in labels}


def is_share(ylabel: str) -> bool:
    """Whether a y label names a share (0–1), not a difference of shares."""
    low = ylabel.lower()
    return any(w in low for w in SHARE_WORDS) and not any(w in low for w in ("minus", "−", "gain", "difference"))


# The range of each per-step training record that has one: a t-interval over a few seeds that split can
# overshoot it, and a band is cut there (an entropy or a length is never negative, a share stays in 0-1)
RANGES = {"reward/true": (0.0, 1.0), "rollout/think_rate": (0.0, 1.0), "rollout/think_any_rate": (0.0, 1.0),
          "rollout/zero_var_frac": (0.0, 1.0),
          "rollout/entropy": (0.0, math.inf), "rollout/length": (0.0, math.inf),
          "rollout/length_wrong": (0.0, math.inf), "losses/kl": (0.0, math.inf), "losses/clip_frac": (0.0, 1.0)}


def smoothed(label: str, series: list[pd.Series], color: str | None = None,
             bounds: tuple[float, float] | None = None, spread: str = "ci", **style) -> Curve:
    """A per-step training curve (centred mean of SMOOTH steps); `bounds`: the measure's range, if any."""
    return Curve(label, series, SMOOTH, {"color": color, **style}, bounds=bounds, spread=spread)


def evaluated(label: str, series: list[pd.Series], color: str | None = None, **style) -> Curve:
    """A curve of in-training evaluations (a share: accuracy or think rate, every eval_every steps, not
    smoothed): markers with their intervals, not joined (the policy between two evaluations is not measured)."""
    return Curve(label, series, 1, {"color": color, "marker": "o", "ms": 5, "ls": "none", **style}, points=True,
                 bounds=(0.0, 1.0))


def panel_figure(panels: list[Panel], title: str, path: Path, ncols: int = 2, size=(6.2, 3.9)) -> None:
    """Panels in a grid (size: inches per panel), each with its curves in their arms' styles (`arm_style`) and
    labelled axes; a share's axis is SHARE_YLIM. One legend under the grid names every panel's arms and references
    once (a legend inside a panel covers its data: arms at the ceiling sit where it would go)."""
    nrows = math.ceil(len(panels) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(size[0] * ncols, size[1] * nrows), squeeze=False)
    for ax, p in zip(axes.flat, panels):
        points = [c for c in p.curves if c.points]
        steps = sorted({x for c in points for s in c.series for x in s.index})
        gap = min(np.diff(steps)) if len(steps) > 1 else 1.0
        ends = []
        for c in p.curves:
            own = arm_style(c.label)
            if c.points:  # markers of their own, side by side: arms at the same value stay visible
                dodge = (points.index(c) - (len(points) - 1) / 2) * 0.06 * gap
                c = replace(c, series=[s.set_axis(s.index + dodge) for s in c.series],
                            style={**c.style, "color": c.style.get("color") or own["color"], "marker": own["marker"]})
            else:
                c = replace(c, style={"ls": own["ls"], "marker": own["marker"], **{k: v for k, v in c.style.items()
                                                                                  if v is not None}})
                c.style.setdefault("color", own["color"])
            ends.append(band(ax, c))
        if p.ylim is None and is_share(p.ylabel):
            p = replace(p, ylim=SHARE_YLIM)
        guide_lines(ax, p)
        last = max((e[0] for e in ends if e), default=None)
        for end in ends:
            if p.stop and end and end[0] < last:
                ax.plot([end[0]], [end[1]], marker="x", ms=10, mew=2.5, color=end[2], ls="none")
                # above the mark, or below it in the axis' top fifth, where above would run into the top spine
                y0, y1 = ax.get_ylim()
                up = (end[1] - y0) / (y1 - y0) < 0.8
                ax.annotate(f"stops at step {end[0]:.0f}", end[:2], textcoords="offset points",
                            xytext=(6, 14 if up else -14), va="bottom" if up else "top", fontsize=8, color=end[2],
                            bbox={"fc": "white", "ec": "none", "alpha": 0.85, "pad": 1})
        # a long panel title runs into its neighbour's: broken into lines of the panel's width
        head = "\n".join(textwrap.wrap(p.title, int(size[0] * 11)) + ([f"(×: {p.stop})"] if p.stop else []))
        ax.set(title=head, xlabel=p.xlabel, ylabel=p.ylabel)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    fig.suptitle(wrapped(title, fig))
    legend_below(fig, *list(axes.flat)[:len(panels)])  # every panel's arms and references once, under the grid
    save_figure(fig, path)


def guide_lines(ax, p: Panel) -> None:
    """A panel's reference levels: the random-guess floor, a reference such as the gold length, and its range."""
    if p.guess is not None:
        guess_line(ax, p.guess)
    if p.ref is not None:
        ax.axhline(p.ref[0], color="0.2", ls=(0, (6, 2)), lw=1.2, label=p.ref[1])
    if p.ylim is not None:
        ax.set_ylim(*p.ylim)


def guess_line(ax, guess: float, label: str | None = None) -> None:
    """The random-guess accuracy as a dotted line, the same on every figure: a guessed answer comes with no
    verified trace, so it is a reference for answer-only counts, not the floor of a verified one (which is 0)."""
    label = label or f"random guess ({guess:.3f}, answer only; verifies 0)"
    ax.axhline(guess, color="0.35", ls=":", lw=1.5, label=label)


def verified_floor(ax) -> None:
    """The floor of a verified accuracy: 0, since a guessed answer comes with no verified trace."""
    ax.axhline(0.0, color="k", lw=1.0, label=VERIFIED_FLOOR)


def share_ylim(drawn: list[float], span: float = 0.2) -> tuple[float, float]:
    """A share's axis: from 0, at least `span` tall (a fitted axis of a share near 0 reads ±0.02 as a change), up
    to the data with a margin, and not past 1 by more than that margin."""
    hi = max(span, max(drawn, default=0.0) * 1.08)
    return 0.0, min(hi, 1.05)


def wrapped(title: str, fig) -> str:
    """A figure title with each of its lines broken into lines that fit the figure's width (a long one otherwise
    runs off its edges)."""
    size = FontProperties(size=matplotlib.rcParams["figure.titlesize"]).get_size_in_points()
    per_line = int(fig.get_figwidth() * 72 / (0.55 * size))  # characters: an average glyph is ~0.55 em wide
    return "\n".join(part for line in title.splitlines() for part in textwrap.wrap(line, per_line) or [""])


def legend_below(fig, *axes) -> None:
    """One legend for the whole figure, centred under its panels (a legend inside a panel covers its data): each
    entry of the given axes once, in order."""
    entries: dict[str, object] = {}
    for ax in axes:
        for h, label in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(label, h)
    rows = math.ceil(len(entries) / 4)
    fig.tight_layout(rect=(0, min(0.3, (0.35 + 0.22 * rows) / fig.get_figheight()), 1, 1))
    fig.legend(list(entries.values()), list(entries), loc="lower center", ncols=min(len(entries), 4), fontsize=9,
               frameon=False)


FAILURE_TITLE = ("Outcome types of greedy answers, judged by the answer alone (answer-only: a right answer with a "
                 "wrong trace counts as correct)")
FAILURE_BAR = "95% CI of the answer-only failure share (1 − correct)"


LABEL_GAP_PT = 5.0  # a bar's label starts this far past its end: clear of an error bar's cap (capsize 4 points)


def failure_bars(ax, mixes: dict[str, dict[str, float]], title: str,
                 ci: dict[str, stats.Interval] | None = None, set_name: str = "edge") -> None:
    """Horizontal stacked bars of the failures, one bar per label (top to bottom in the given order), one
    segment per failure type (every type but `correct`, which is judged by the answer alone: a right answer with a
    wrong trace counts as correct); the axis fits the largest failure share, so types stay visible when nearly
    everything is correct, and each row prints its failure share (a bar too short to see is still labelled).
    `ci`: the 95% interval of a label's answer-only correct share, drawn as the interval of its failure share
    (1 - correct) at the bar's end, cut at 0 and 1. The legend sits under the axes so it never covers a bar."""
    labels = list(mixes)[::-1]
    left = [0.0] * len(labels)
    for t in next(iter(mixes.values())):
        if t == "correct":
            continue
        shares = [mixes[label][t] for label in labels]
        ax.barh(labels, shares, left=left, color=FAILURE_COLORS.get(t, "tab:gray"), label=t)
        left = [a + b for a, b in zip(left, shares)]
    right = max(left)
    ends = list(left)
    for i, label in enumerate(labels):
        if ci and label in ci:
            iv = ci[label]  # cut at the share's range, which a t-interval over a few seeds can overshoot
            fail, lo, hi = 1 - iv.mean, max(0.0, 1 - iv.hi), min(1.0, 1 - iv.lo)
            right, ends[i] = max(right, hi), max(ends[i], hi)
            ax.errorbar([fail], [i], xerr=[[fail - lo], [hi - fail]], color="k", capsize=4, lw=1.2,
                        label=FAILURE_BAR if i == min(j for j, x in enumerate(labels) if x in ci) else None)
    xmax = min(1.0, max(right * 1.12, 0.01))
    for i, (width, end) in enumerate(zip(left, ends)):
        text = ("none fail (by the answer)" if width == 0 else "< 0.001 fail" if width < 0.0005
                else f"{width:.3f} fail")
        # a few points past the bar or its whisker, so that the label clears the whisker's cap
        ax.annotate(text, (end, i), xytext=(LABEL_GAP_PT, 0), textcoords="offset points", va="center", ha="left",
                    fontsize=8, color="0.25", annotation_clip=False)
    ax.set(xlim=(0, xmax), title="\n".join(textwrap.wrap(title, 90)),
           xlabel=f"share of greedy responses on the {set_name} set that fail by the answer, by failure type")
    # under the axes, clear of the bars and of the numbers at their ends
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.1 - 0.9 / ax.figure.get_figheight()), ncols=4,
              frameon=False)


def failure_figure(mixes: dict[str, dict[str, float]], title: str, path: Path,
                   ci: dict[str, stats.Interval] | None = None, set_name: str = "edge") -> None:
    fig, ax = plt.subplots(figsize=(9, max(3.2, 2.0 + 0.45 * len(mixes))))
    failure_bars(ax, mixes, title, ci, set_name)
    fig.tight_layout()
    labels_off_the_spine(ax)
    save_figure(fig, path)


def labels_off_the_spine(ax) -> None:
    """Each text label of `ax` that would run across its right spine starts past it instead, as the label of a bar
    that reaches the edge does: a spine through a number makes it hard to read. Call it once the layout is final,
    since whether a label crosses depends on the axis' width in points."""
    renderer = ax.figure.canvas.get_renderer()
    edge, right = ax.get_window_extent(renderer).x1, ax.get_xlim()[1]
    for text in ax.texts:
        box = text.get_window_extent(renderer)
        if box.x0 < edge < box.x1:
            text.xy = (right, text.xy[1])


def save_figure(fig, path: Path) -> None:
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110, bbox_inches="tight", format="png")
    plt.close(fig)


