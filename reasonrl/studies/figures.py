"""Figures shared by the study reports: curves with bootstrap bands over seeds, panel grids, failure-mix
bars. Every figure goes through save_figure (tests/test_figures.py catches it there to read its data)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy import stats as sps  # noqa: E402

from .. import stats  # noqa: E402
from ..io import atomic_path  # noqa: E402

SMOOTH = 10  # per-step training curves are drawn as a trailing moving average over this many steps
STEP = "RL step"

# Colours of the outcome types of evaluate.classify; an unknown type gets grey.
FAILURE_COLORS = {"correct": "tab:green", "overshoot": "tab:orange", "early": "gold", "lookup": "tab:red",
                  "miscopy": "tab:purple", "malformed": "tab:gray"}


@dataclass
class Curve:
    label: str
    series: list[pd.Series]  # one per seed, each indexed by step; drawn as mean and 95% CI band over seeds
    smooth: int = 1  # trailing moving average over this many steps before aggregating
    style: dict = field(default_factory=dict)  # passed to ax.plot (color, ls, marker, ...)


@dataclass
class Panel:
    title: str
    ylabel: str
    curves: list[Curve]
    xlabel: str = STEP


def band_stats(series: list[pd.Series], smooth: int = 1, ci_seed: int = 0) -> pd.DataFrame:
    """Mean over series (seeds) aligned on their index, each smoothed first (trailing window), with the
    95% percentile bootstrap interval of that mean over the seeds (scipy, one vectorised call for every
    step). Where fewer than two series have a value the interval is the mean itself."""
    wide = pd.concat([s.rolling(smooth, min_periods=1).mean() for s in series], axis=1).sort_index()
    out = pd.DataFrame({"mean": wide.mean(axis=1), "lo": wide.mean(axis=1), "hi": wide.mean(axis=1)})
    full = wide.dropna()
    if wide.shape[1] > 1 and len(full):
        res = sps.bootstrap((full.to_numpy().T,), np.mean, axis=0, n_resamples=stats.RESAMPLES, vectorized=True,
                            method="percentile", rng=np.random.default_rng(ci_seed))
        out.loc[full.index, "lo"] = res.confidence_interval.low
        out.loc[full.index, "hi"] = res.confidence_interval.high
    return out


def band(ax, curve: Curve, ci_seed: int = 0) -> None:
    """The mean line of a curve, and the 95% bootstrap interval over seeds when it has several."""
    st = band_stats(curve.series, curve.smooth, ci_seed)
    (line,) = ax.plot(st.index, st["mean"], label=curve.label, **curve.style)
    if len(curve.series) > 1:
        ax.fill_between(st.index, st["lo"], st["hi"], color=line.get_color(), alpha=0.2, lw=0)


def palette(labels: Iterable[str]) -> dict[str, str]:
    """A fixed colour per label, so a label keeps its colour in every panel of a figure."""
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    return {label: colors[i % len(colors)] for i, label in enumerate(labels)}


def smoothed(label: str, series: list[pd.Series], color: str | None = None, **style) -> Curve:
    """A per-step training curve (moving average of SMOOTH steps)."""
    return Curve(label, series, SMOOTH, {"color": color, **style})


def evaluated(label: str, series: list[pd.Series], color: str | None = None, **style) -> Curve:
    """A curve of in-training evaluations (a point every eval_every steps, not smoothed)."""
    return Curve(label, series, 1, {"color": color, "marker": "o", "ms": 3, **style})


def panel_figure(panels: list[Panel], title: str, path: Path, ncols: int = 2, size=(6.2, 3.9)) -> None:
    """Panels in a grid (size: inches per panel), each with its curves, labelled axes and a legend."""
    nrows = math.ceil(len(panels) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(size[0] * ncols, size[1] * nrows), squeeze=False)
    for ax, p in zip(axes.flat, panels):
        for c in p.curves:
            band(ax, c)
        ax.set(title=p.title, xlabel=p.xlabel, ylabel=p.ylabel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    fig.suptitle(title)
    fig.tight_layout()
    save_figure(fig, path)


def legend_below(fig, ax) -> None:
    """One legend for the whole figure, centred under its panels (for panels whose curves fill every corner)."""
    handles, labels = ax.get_legend_handles_labels()
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.legend(handles, labels, loc="lower center", ncols=min(len(labels), 6), fontsize=9, frameon=False)


def failure_bars(ax, mixes: dict[str, dict[str, float]], title: str,
                 ci: dict[str, stats.Interval] | None = None, set_name: str = "n12") -> None:
    """Horizontal stacked bars, one per label (top to bottom in the given order), one segment per
    outcome type; the legend sits right of the axes so it never covers a bar or the axis label. `ci`:
    the 95% interval of a label's correct share, drawn as an error bar where the `correct` segment ends."""
    labels = list(mixes)[::-1]
    left = [0.0] * len(labels)
    for t in next(iter(mixes.values())):
        shares = [mixes[label][t] for label in labels]
        ax.barh(labels, shares, left=left, color=FAILURE_COLORS.get(t, "tab:gray"), label=t)
        left = [a + b for a, b in zip(left, shares)]
    for i, label in enumerate(labels):
        if ci and label in ci:
            iv = ci[label]
            ax.errorbar([iv.mean], [i], xerr=[[iv.mean - iv.lo], [iv.hi - iv.mean]], color="k", capsize=4, lw=1.2,
                        label="95% CI of correct" if i == min(j for j, x in enumerate(labels) if x in ci) else None)
    ax.set(xlim=(0, 1), xlabel=f"share of greedy responses on the {set_name} set", title=title)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)


def failure_figure(mixes: dict[str, dict[str, float]], title: str, path: Path,
                   ci: dict[str, stats.Interval] | None = None, set_name: str = "n12") -> None:
    fig, ax = plt.subplots(figsize=(9, max(2.4, 1.2 + 0.45 * len(mixes))))
    failure_bars(ax, mixes, title, ci, set_name)
    fig.tight_layout()
    save_figure(fig, path)


def save_figure(fig, path: Path) -> None:
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110, bbox_inches="tight", format="png")
    plt.close(fig)


