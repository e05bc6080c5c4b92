"""Study figures checked for content, not existence (issue #17, item 4).

Each figure function is called on synthetic runs whose every column holds its own recognisable numbers;
the figure is caught before saving (the module-level `save_figure` replaced) and its matplotlib objects
are read: the lines' data arrays, the number of series, the bars' heights, the axis labels. A figure
that plots the wrong column, drops a series or mislabels an axis fails here.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.container import BarContainer, ErrorbarContainer  # noqa: E402

from reasonrl import evaluate as ev  # noqa: E402
from reasonrl.config import ConfigError  # noqa: E402
from reasonrl.stats import Comparison, Interval  # noqa: E402
from reasonrl.studies import (  # noqa: E402
    PasskModel,
    ablations,
    answers,
    figures,
    floors,
    hacking,
    headline,
    methods,
    passk,
    zero,
)
from reasonrl.studies.runs import Run, evals_frame  # noqa: E402

STEPS = np.arange(1, 21)  # 20 training steps
EVAL_STEPS = [0, 10, 20]
# each per-step column is a constant of its own, so that a centred 9-step mean leaves it as it is and a
# wrong column shows as a wrong number
COLUMNS = {"reward/true": 0.11, "reward/proxy": 0.22, "rollout/entropy": 0.33, "rollout/length": 4.4,
           "rollout/think_rate": 0.55, "rollout/zero_var_frac": 0.66, "rollout/length_wrong": 7.7,
           "losses/clip_frac": 0.088, "losses/kl": 0.099}


def make_run(name: str, shift: float, job: dict | None = None, evals: list[dict] | None = None) -> Run:
    history = pd.DataFrame({c: v + shift for c, v in COLUMNS.items()}, index=pd.Index(STEPS, name="step"))
    evals = evals or [{"step": s, "acc": 0.1 * i + shift, "think": 0.2 * i + shift} for i, s in enumerate(EVAL_STEPS)]
    job = {"method": "grpo", "seed": 0, "num_iterations": 1, "reward": "true", "guard": False, "len_pen": 0.0,
           "beta": 0.0, **(job or {})}
    return Run(name=name, history=history, evals=evals_frame(evals), summary={"job": job},
               metrics=None)


@pytest.fixture
def caught(monkeypatch):
    """The figures passed to save_figure, by file name; closed at the end."""
    figs: dict[str, plt.Figure] = {}
    for mod in (figures, methods, zero, hacking, ablations, passk, headline):
        if hasattr(mod, "save_figure"):
            # keyed by folder and name: the methods and hacking studies both write failure_mix.png
            monkeypatch.setattr(mod, "save_figure",
                                lambda fig, path: figs.__setitem__("/".join(Path(path).parts[-2:]), fig))
    yield figs
    for fig in figs.values():
        plt.close(fig)


def series(ax) -> dict[str, tuple[list, list]]:
    """{label: (x, y)} of the lines of an axes that carry a legend label, and of its error-bar series (the
    points of in-training evaluations, labelled on their container)."""
    out = {}
    for line in ax.get_lines():
        if not line.get_label().startswith("_"):
            out[line.get_label()] = (list(map(float, line.get_xdata())), list(map(float, line.get_ydata())))
    for c in ax.containers:
        if isinstance(c, ErrorbarContainer) and not c.get_label().startswith("_"):
            line = c.lines[0]
            out[c.get_label()] = (list(map(float, line.get_xdata())), list(map(float, line.get_ydata())))
    return out


def dodged(side: int) -> list[float]:
    """EVAL_STEPS of one of two evaluation-point curves of a panel: set 3% of the 10-step gap left (-1) or
    right (+1), so arms at the same value stay visible side by side."""
    return [s + side * 0.3 for s in EVAL_STEPS]


def data_y(ax) -> list[float]:
    """Every y value an axes draws: its lines, its filled bands, its error bars."""
    ys = [float(y) for line in ax.get_lines() for y in line.get_ydata() if np.isfinite(y)]
    for coll in ax.collections:
        if coll.get_label().startswith("at or below"):  # the shaded region under a guess floor is no data
            continue
        for path in coll.get_paths():
            ys += [float(y) for y in path.vertices[:, 1] if np.isfinite(y)]
    return ys


def assert_fits(ax, margin: float = 0.01) -> None:
    """The y axis contains all its data with a margin (a share of the data's span), and is not more than
    three times as tall as the data, so a difference near a ceiling stays visible."""
    ys = data_y(ax)
    lo, hi = min(ys), max(ys)
    span = max(hi - lo, 1e-9)
    y0, y1 = ax.get_ylim()
    assert y0 <= lo - margin * span and y1 >= hi - 1e-12, (ax.get_title(), (y0, y1), (lo, hi))
    assert y1 - y0 <= 3 * span + 0.05, (ax.get_title(), (y0, y1), (lo, hi))


def panels(fig) -> list:
    return [ax for ax in fig.axes if ax.axison]


def const(v: float) -> list[float]:
    return pytest.approx([v] * len(STEPS))


def test_methods_curves(caught):
    cfg = methods.Config(base="cot", runs={"sft": ["s0", "s1"], "grpo": ["g0", "g1"]})
    runs = {"s0": make_run("s0", 0.0, {"method": "sft", "seed": 0}),
            "s1": make_run("s1", 0.02, {"method": "sft", "seed": 2}),
            "g0": make_run("g0", 0.1), "g1": make_run("g1", 0.12, {"seed": 1})}
    methods.curves_figure(cfg, runs, Path("curves.png"))
    acc, reward, entropy, length = panels(caught["curves.png"])
    # mean over the two seeds of each method; under five runs no band: each run's points drawn beside the mean
    assert series(acc) == {"sft": (pytest.approx(dodged(-1)), pytest.approx([0.01, 0.11, 0.21])),
                           "grpo": (pytest.approx(dodged(1)), pytest.approx([0.11, 0.21, 0.31]))}
    assert len(acc.collections) == 0 and len([x for x in acc.get_lines() if x.get_label() == "_run"]) == 4
    assert series(reward) == {"grpo": (list(STEPS), const(0.11 + 0.11))}  # SFT draws no samples: no reward curve
    assert series(entropy) == {"sft": (list(STEPS), const(0.33 + 0.01)), "grpo": (list(STEPS), const(0.33 + 0.11))}
    assert series(length) == {"sft": (list(STEPS), const(4.4 + 0.01)), "grpo": (list(STEPS), const(4.4 + 0.11))}
    assert [ax.get_ylabel() for ax in (acc, reward, entropy, length)] == [
        "accuracy (fraction correct)", "mean reward per sample (0–1)", "entropy (nats per token)",
        "characters per response"]
    assert {ax.get_xlabel() for ax in (acc, reward, entropy, length)} == {figures.STEP}
    assert "(seeds: sft 0, 2; grpo 0, 1)" in caught["curves.png"]._suptitle.get_text().replace("\n", " ")


def test_failure_figure_stacks_the_shares(caught):
    mixes = {"before": {"correct": 0.5, "lookup": 0.25, "malformed": 0.25},
             "after": {"correct": 0.75, "lookup": 0.125, "malformed": 0.125}}
    figures.failure_figure(mixes, "Outcome types", Path("failure_mix.png"))
    (ax,) = caught["failure_mix.png"].axes
    assert len(ax.containers) == 2  # one bar series per failure type; `correct` is the rest of the bar
    by_type = {c.get_label(): c for c in ax.containers if isinstance(c, BarContainer)}
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["after", "before"]  # the first label on top
    for t, c in by_type.items():
        assert [b.get_width() for b in c] == [mixes["after"][t], mixes["before"][t]]
    assert [b.get_x() for b in by_type["malformed"]] == [0.125, 0.25]  # stacked after lookup
    assert ax.get_xlim() == pytest.approx((0, 0.5 * 1.12))  # fits the largest failure share, 0.5
    assert ax.get_xlabel() == "share of greedy responses on the edge set that fail by the answer, by failure type"


def test_failure_figure_fits_shares_near_the_ceiling(caught):
    # 99% correct: on a 0-1 axis the failure types would be invisible; the axis fits them and their CI
    mixes = {"base": {"correct": 0.99, "lookup": 0.006, "early": 0.004}}
    ci = {"base": Interval(0.99, 0.985, 0.995, 0.0025, 4)}
    figures.failure_figure(mixes, "Near the ceiling", Path("ceiling.png"), ci)
    (ax,) = caught["ceiling.png"].axes
    assert ax.get_xlim() == pytest.approx((0, 0.015 * 1.12))  # the CI's upper end of the failure share
    (bars,) = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert bars.lines[0].get_xdata()[0] == pytest.approx(0.01)


def _zero_setup():
    cfg = zero.Config(runs={"think0": "z0", "think2": "z2"})
    runs = {"z0": make_run("z0", 0.0), "z2": make_run("z2", 0.05)}
    prof = {"think0": {"before": {"think": 0.0, "acc": 0.2, "acc_think": None, "acc_direct": 0.2,
                                  "by_difficulty": {1: 0.0, 2: 0.0, 3: 0.0}},
                       "after": {"think": 0.005, "acc": 0.3, "acc_think": 0.5, "acc_direct": 0.25,
                                 "by_difficulty": {1: 0.01, 2: 0.0, 3: 0.005}}},
            "think2": {"before": {"think": 0.02, "acc": 0.4, "acc_think": 0.75, "acc_direct": 0.375,
                                  "by_difficulty": {1: 0.03, 2: 0.02, 3: 0.01}},
                       "after": {"think": 1.0, "acc": 0.8, "acc_think": 0.8, "acc_direct": None,
                                 "by_difficulty": {1: 1.0, 2: 1.0, 3: 1.0}}}}
    return cfg, runs, prof


def test_zero_training_figure(caught):
    cfg, runs, _ = _zero_setup()
    zero.training_figure(cfg, runs, Path("training.png"))
    think, acc, think_rate, reward = panels(caught["training.png"])
    assert series(think) == {"think0": (pytest.approx(dodged(-1)), pytest.approx([0.0, 0.2, 0.4])),
                             "think2": (pytest.approx(dodged(1)), pytest.approx([0.05, 0.25, 0.45]))}
    assert series(acc) == {"think0": (pytest.approx(dodged(-1)), pytest.approx([0.0, 0.1, 0.2])),
                           "think2": (pytest.approx(dodged(1)), pytest.approx([0.05, 0.15, 0.25]))}
    assert series(think_rate) == {"think0": (list(STEPS), const(0.55)), "think2": (list(STEPS), const(0.6))}
    assert series(reward) == {"think0": (list(STEPS), const(0.11)), "think2": (list(STEPS), const(0.16))}
    assert think.get_ylabel() == think_rate.get_ylabel() == "share of responses with a well-formed trace"
    assert acc.get_ylabel() == "accuracy (fraction correct)"
    assert reward.get_ylabel() == "mean reward per sample (0–1)"
    assert [ax.get_title() for ax in (think, acc, think_rate, reward)] == [
        "Think rate on the fixed thinking set (16 samples per problem)",
        "Verified accuracy on the fixed thinking set (sampled)", "Think rate of the training samples",
        "True (verified) reward of the training samples"]
    assert caught["training.png"].get_suptitle() == "\n".join(__import__("textwrap").wrap(
        f"GRPO from each mixed base: thinking and accuracy during RL ({figures.SEED_RANGE}; {figures.SMOOTH_NOTE})",
        int(caught["training.png"].get_figwidth() * 72 / (0.55 * 12))))


def errorbars(ax) -> dict[str, tuple[list, list]]:
    """{label: (x, y)} of the data lines of an axes' labelled error-bar series."""
    out = {}
    for c in ax.containers:
        if isinstance(c, ErrorbarContainer) and not c.get_label().startswith("_"):
            line = c.lines[0]
            out[c.get_label()] = (list(map(float, line.get_xdata())), list(map(float, line.get_ydata())))
    return out


def whiskers(container) -> list[tuple[float, float]]:
    """(low, high) of each vertical error bar of an ErrorbarContainer."""
    (segments,) = container.lines[2]
    return [(float(seg[0][1]), float(seg[1][1])) for seg in segments.get_segments()]


def test_zero_by_hops_figure(caught):
    cfg, _, prof = _zero_setup()
    # an arm of several seeds
    prof["think2"]["after"]["by_difficulty_ci"] = {1: (0.875, 1.0), 2: (0.75, 1.0), 3: (0.5, 1.0)}
    zero.by_hops_figure(cfg, prof, Path("by_hops.png"))
    a, b = panels(caught["by_hops.png"])
    assert errorbars(a) == {"before RL": ([1, 2, 3], [0.0, 0.0, 0.0]), "after RL": ([1, 2, 3], [0.01, 0.0, 0.005])}
    assert errorbars(b) == {"before RL": ([1, 2, 3], [0.03, 0.02, 0.01]), "after RL": ([1, 2, 3], [1.0, 1.0, 1.0])}
    # the interval over seeds is drawn where the profile has one, and only there
    after = {c.get_label(): c for c in b.containers}["after RL"]
    assert whiskers(after) == [(0.875, 1.0), (0.75, 1.0), (0.5, 1.0)]
    assert all(not c.has_yerr for c in a.containers) and not {c.get_label(): c for c in b.containers}[
        "before RL"].has_yerr
    assert (a.get_title(), b.get_title()) == ("base think0", "base think2")
    assert a.get_xlabel() == "hop count k" and a.get_ylabel() == "share of responses with a well-formed trace"
    # sibling panels of a share: one 0-1 axis (think0's rates of at most 0.01 read as near 0, not as a change)
    assert a.get_ylim() == b.get_ylim() == pytest.approx(figures.SHARE_YLIM)
    assert caught["by_hops.png"].get_suptitle() == (
        "Think rate per hop count before (the mixed base) and after GRPO (mean over seeds; error bars: "
        "95% CI over seeds where there are several)")


def test_zero_think_vs_direct_figure_interval_a_float_step_off(caught):
    cfg, _, prof = _zero_setup()
    prof["think2"]["before"] |= {"acc_think": 0.1, "acc_think_ci": (0.10000000000000002, 0.10000000000000002)}
    prof["think2"]["after"] |= {"acc_think": 0.30000000000000004, "acc_think_ci": (0.3, 0.3)}
    zero.think_vs_direct_figure(cfg, prof, Path("think_vs_direct.png"))
    (ax,) = caught["think_vs_direct.png"].axes
    bars = {c.get_label(): c for c in ax.containers if isinstance(c, BarContainer)}
    assert whiskers(bars["thinking, before (verified)"].errorbar)[1] == (0.1, 0.10000000000000002)
    assert whiskers(bars["thinking, after (verified)"].errorbar)[1] == (0.3, 0.30000000000000004)


def test_zero_think_vs_direct_figure(caught):
    cfg, _, prof = _zero_setup()
    zero.think_vs_direct_figure(cfg, prof, Path("think_vs_direct.png"))
    (ax,) = caught["think_vs_direct.png"].axes
    heights = {c.get_label(): [r.get_height() for r in c] for c in ax.containers if isinstance(c, BarContainer)}
    # None (no such responses) is drawn as an empty bar and marked n/a
    assert heights == {"thinking, before (verified)": [0, 0.75], "thinking, after (verified)": [0.5, 0.8],
                       "direct, before (answer-only)": [0.2, 0.375], "direct, after (answer-only)": [0.25, 0]}
    notes = sorted(t.get_text() for t in ax.texts)
    # n/a: think0's thinking before, think2's direct after; <1%: think0's thinking after (0.5% of responses)
    assert notes == ["<1%", "n/a", "n/a"]
    # a note sits 0.02 above its bar's whisker, not on it: think0's thinking after (0.5) with a CI up to 0.9
    prof["think0"]["after"]["acc_think_ci"] = [0.1, 0.9]
    zero.think_vs_direct_figure(cfg, prof, Path("think_vs_direct.png"))
    rare = next(t for t in caught["think_vs_direct.png"].axes[0].texts if t.get_text() == "<1%")
    assert rare.get_position()[1] == pytest.approx(0.92)
    assert ax.get_ylabel() == "accuracy (thinking: verified; direct: answer-only)"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["base think0", "base think2"]
    assert ax.get_xlabel() == "starting base" and ax.get_ylim() == pytest.approx(figures.SHARE_YLIM)
    assert ax.get_title() == ("Accuracy when thinking (verified) vs when answering directly (answer-only, hatched; "
                              "95% CI over seeds)\n(n/a: no such responses; <1%: under 1% of the responses, a "
                              "handful of answers)")
    # four bars per base, side by side around its tick, each 0.2 wide
    bars = [c for c in ax.containers if isinstance(c, BarContainer)]
    xs = {c.get_label(): [round(r.get_x() + r.get_width() / 2, 9) for r in c] for c in bars}
    assert xs == {"thinking, before (verified)": [-0.3, 0.7], "thinking, after (verified)": [-0.1, 0.9],
                  "direct, before (answer-only)": [0.1, 1.1], "direct, after (answer-only)": [0.3, 1.3]}
    assert {round(r.get_width(), 9) for c in ax.containers if isinstance(c, BarContainer) for r in c} == {0.2}


def test_hacking_reward_figure(caught):
    run = make_run("h0", 0.0, {"reward": "orm", "guard": True, "len_pen": 0.01})
    hacking.reward_figure("orm", [run], Path("reward_orm.png"))
    (ax,) = panels(caught["reward_orm.png"])
    assert series(ax) == {"proxy reward (training signal)": (list(STEPS), const(0.22)),
                          "true reward of the samples (verified)": (list(STEPS), const(0.11)),
                          "greedy accuracy on the validation set (eval, verified)":
                              (EVAL_STEPS, pytest.approx([0.0, 0.1, 0.2]))}
    assert len(ax.collections) == 0  # one seed: no band
    assert ax.get_ylabel() == "reward (batch mean, 0–1); points: accuracy"
    title = caught["reward_orm.png"]._suptitle.get_text()
    assert "Reward orm, runs h0" in title and "reward orm, guard True, len_pen 0.01" in title


def test_hacking_reward_figure_averages_an_arms_seeds(caught):
    # two seeds 0.02 apart: every curve is their mean, each run drawn thin beside it (no band under five runs)
    arm = [make_run("h0", 0.0, {"reward": "orm"}), make_run("h1", 0.02, {"reward": "orm", "seed": 1})]
    hacking.reward_figure("orm + guard", arm, Path(hacking.reward_png("orm + guard")))
    (ax,) = panels(caught["hacking/reward_orm_guard.png"])
    assert series(ax) == {"proxy reward (training signal)": (list(STEPS), const(0.23)),
                          "true reward of the samples (verified)": (list(STEPS), const(0.12)),
                          "greedy accuracy on the validation set (eval, verified)":
                              (EVAL_STEPS, pytest.approx([0.01, 0.11, 0.21]))}
    assert len(ax.collections) == 0 and len([x for x in ax.get_lines() if x.get_label() == "_run"]) == 6
    assert "runs h0, h1" in caught["hacking/reward_orm_guard.png"]._suptitle.get_text()


def test_hacking_reward_bands_stay_in_the_rewards_range(caught):
    # five seeds that split (0, 0.8, 0, 0.8, 0.4): the t-interval over them overshoots, cut to the share's range
    def bands(job: dict) -> dict[str, tuple[float, float]]:
        arm = [make_run(f"h{i}", s, {**job, "seed": i}) for i, s in enumerate((0.0, 0.8, 0.0, 0.8, 0.4))]
        hacking.reward_figure("x", arm, Path("reward_x.png"))
        (ax,) = panels(caught.pop("reward_x.png"))
        ys = [c.get_paths()[0].vertices[:, 1] for c in ax.collections]
        lines = [line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")]
        return {label: (y.min(), y.max()) for label, y in zip(lines, ys)}

    cut = bands({"reward": "orm"})
    assert all(0.0 <= lo and hi <= 1.0 for lo, hi in cut.values()) and max(hi for _, hi in cut.values()) == 1.0
    penalised = bands({"reward": "true", "len_pen": 0.05})  # a length penalty can take the proxy below 0: no cut
    assert penalised["proxy reward (training signal)"][1] > 1.0


def test_training_bands_of_the_methods_and_zero_figures_stay_in_each_records_range(caught):
    shifts = (0.0, 0.8, 0.0, 0.8, 0.4)  # five seeds that split: an interval past the records' ranges before the cut
    split = {"a": [f"a{i}" for i in range(5)]}
    runs = {f"a{i}": make_run(f"a{i}", s, {"method": "grpo", "seed": i}) for i, s in enumerate(shifts)}
    methods.curves_figure(methods.Config(base="cot", runs=split), runs, Path("curves.png"))
    zero.training_figure(zero.Config(runs=split), runs, Path("training.png"))
    _, reward, entropy, length = panels(caught["curves.png"])
    _, _, think, true = panels(caught["training.png"])
    for ax, lo, hi in ((reward, 0, 1), (entropy, 0, 6), (length, 0, 10), (think, 0, 1), (true, 0, 1)):
        (band,) = ax.collections
        y = band.get_paths()[0].vertices[:, 1]
        assert y.min() >= lo and y.max() <= hi


def test_failure_interval_is_cut_at_the_shares_range(caught):
    mixes = {"split": {"correct": 0.3, "lookup": 0.7}}
    figures.failure_figure(mixes, "Split", Path("split.png"), {"split": Interval(0.3, -0.5, 1.1, 0.3, 2)})
    (ax,) = caught["split.png"].axes
    (bars,) = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    (segment,) = bars.lines[2][0].get_segments()
    assert segment[:, 0] == pytest.approx([0.0, 1.0])  # failure share 0.7 in [1 - 1.1, 1 + 0.5], cut to [0, 1]
    assert ax.get_xlim() == pytest.approx((0, 1.0))  # a share's axis stops at 1


def test_failure_labels_clear_the_whiskers_caps(caught):
    # each row's "0.905 fail" starts past its interval's cap, drawn: at the whisker's end it ran into the cap, and
    # near the axis' right edge across the spine
    mixes = {"orm": {"correct": 0.095, "lookup": 0.905, "early": 0.0},
             "base": {"correct": 0.55, "lookup": 0.0, "early": 0.45}}
    ci = {"orm": Interval(0.095, 0.03, 0.16, 0.03, 3), "base": Interval(0.55, 0.52, 0.58, 0.01, 5)}
    figures.failure_figure(mixes, "Caps", Path("caps.png"), ci)
    fig = caught["caps.png"]
    (ax,) = fig.axes
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    texts = {round(t.xy[1]): t for t in ax.texts}
    assert sorted(t.get_text() for t in texts.values()) == ["0.450 fail", "0.905 fail"]
    for bars in (c for c in ax.containers if isinstance(c, ErrorbarContainer)):
        (row,) = {round(y) for y in bars.lines[0].get_ydata()}
        cap_end = max(cap.get_window_extent(renderer).x1 for cap in bars.lines[1])
        assert texts[row].get_window_extent(renderer).x0 > cap_end, texts[row].get_text()
    # orm's whisker ends at 0.97 of an axis to 1: its label goes past the right spine, never across it
    edge = ax.get_window_extent(renderer).x1
    assert texts[1].get_text() == "0.905 fail" and texts[1].get_window_extent(renderer).x0 > edge
    assert texts[0].get_window_extent(renderer).x1 < edge  # the base's, far from the edge, stays at its whisker
    # an axis that stops short of 1 (at 1.12 x the longest bar, 0.5) holds its longest bar's label inside it
    figures.failure_figure({"a": {"correct": 0.5, "lookup": 0.5}, "b": {"correct": 0.9, "lookup": 0.1}}, "Room",
                           Path("room.png"))
    fig = caught["room.png"]
    (ax,) = fig.axes
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    assert ax.get_xlim()[1] == pytest.approx(0.56)
    longest = next(t for t in ax.texts if t.get_text() == "0.500 fail")
    assert longest.xy[0] == 0.5 and longest.get_window_extent(renderer).x1 < ax.get_window_extent(renderer).x1


def test_headline_bars_are_cut_at_one_and_each_gain_sits_at_the_foot(caught):
    from reasonrl.studies.answers import Answer

    def cmp(a, b):
        return Comparison(a, b, b - a, b - a - 0.01, b - a + 0.01, 0.005, 4, 0.01, 0.02, 1, 100)

    per_base = [Answer("p0", "base c0", "GRPO r0", cmp(0.99, 0.98)), Answer("p1", "base c1", "GRPO r1", cmp(1.0, 0.97))]
    ivs = [(Interval(0.99, 0.985, 0.995, 0.002, 99), Interval(0.98, 0.96, 0.992, 0.01, 99)),
           (Interval(1.0, 1.0, 1.0, 0.0, 99), Interval(0.97, 0.95, 0.99, 0.01, 99))]
    # the pooled run interval over two bases reaches past 1: drawn up to 1, not beyond
    cells = {("hop", "in", "correct"): (Answer("pool", "base", "GRPO", cmp(0.995, 0.975)), per_base,
                                        Interval(0.995, 0.99, 1.0, 0.003, 1), Interval(0.975, 0.9, 1.05, 0.02, 1),
                                        ivs)}
    headline.figure(headline.Config(runs={"r0": "c0"}), "GRPO", cells, Path("before_after.png"))
    (ax,) = panels(caught["before_after.png"])
    assert ax.get_legend() is None  # one legend for the figure: a panel's own covered its points
    tops = [seg[:, 1].max() for c in ax.containers if isinstance(c, ErrorbarContainer)
            for seg in c.lines[2][0].get_segments()]
    assert max(tops) == pytest.approx(1.0)
    assert ax.get_ylim() == pytest.approx(figures.SHARE_YLIM)  # a share's 0-1 axis: -0.02 near 1 is not a collapse
    # each gain along the panel's foot (axes fraction 0), clear of every marker
    gains = {t.get_text(): t.xy[1] for t in ax.texts}
    assert gains == {"-0.010": 0, "-0.030": 0, "-0.020": 0}
    assert sorted(t.get_text() for t in caught["before_after.png"].legends[0].get_texts()) == sorted([
        "base (verified)", "GRPO (verified)", figures.VERIFIED_FLOOR])


def test_hacking_random_clip_figure(caught):
    cfg = hacking.Config(runs={"random": "r1", "random mu2": "r2"}, random_pair=["random", "random mu2"])
    runs = {"r1": make_run("r1", 0.0, {"num_iterations": 1}), "r2": make_run("r2", 0.001, {"num_iterations": 2})}
    hacking.random_clip_figure(cfg, runs, Path("random_clip.png"))
    clip, kl, acc, reward = panels(caught["random_clip.png"])
    one, two = "random (μ = 1)", "random mu2 (μ = 2)"
    assert series(clip) == {one: (list(STEPS), const(0.088)), two: (list(STEPS), const(0.089))}
    assert series(kl) == {one: (list(STEPS), const(0.099)), two: (list(STEPS), const(0.1))}
    assert series(acc) == {one: (pytest.approx(dodged(-1)), pytest.approx([0.0, 0.1, 0.2])),
                           two: (pytest.approx(dodged(1)), pytest.approx([0.001, 0.101, 0.201]))}
    assert series(reward) == {one: (list(STEPS), const(0.11)), two: (list(STEPS), const(0.111))}
    assert [ax.get_ylabel() for ax in (clip, kl)] == ["clip fraction", "KL (nats per token)"]


def test_ablations_group_figure(caught):
    group = ablations.Group(title="std_norm", runs={"on": "a_on", "off": "a_off"})
    runs = {"a_on": make_run("a_on", 0.0), "a_off": make_run("a_off", 0.2)}
    ablations.group_figure(group, runs, Path("std_norm.png"))
    acc, ent, zero_var, length = panels(caught["std_norm.png"])
    assert series(acc) == {"on": (pytest.approx(dodged(-1)), pytest.approx([0.0, 0.1, 0.2])),
                           "off": (pytest.approx(dodged(1)), pytest.approx([0.2, 0.3, 0.4]))}
    assert series(ent) == {"on": (list(STEPS), const(0.33)), "off": (list(STEPS), const(0.53))}
    assert series(zero_var) == {"on": (list(STEPS), const(0.66)), "off": (list(STEPS), const(0.86))}
    assert series(length) == {"on": (list(STEPS), const(7.7)), "off": (list(STEPS), const(7.9))}
    assert [ax.get_ylabel() for ax in (acc, ent, zero_var, length)] == [
        "accuracy (fraction correct)", "entropy (nats per token)", "zero-variance group fraction",
        "characters per wrong response"]


# pass@k from N = 4 samples per problem, by hand: 1 - C(4 - c, k) / C(4, k) for c correct
#   c = 0: 0, 0, 0;  c = 1: 1/4, 1/2, 1;  c = 2: 1/2, 5/6, 1;  c = 4: 1, 1, 1  (k = 1, 2, 4)
COUNTS = {"base": {"n12": [1, 1, 0, 0], "n8": [2, 2, 1, 1]},
          "grpo": {"n12": [2, 2, 2, 0], "n8": [4, 4, 4, 0]},
          "sft_a": {"n12": [4, 4, 0, 0], "n8": [4, 4, 4, 4]},
          "sft_b": {"n12": [0, 0, 0, 0], "n8": [2, 2, 2, 2]}}
# the mean over problems (and, for sft, over its two seeds) at k = 1, 2, 4
MEANS = {"base": {"n12": [0.125, 0.25, 0.5], "n8": [0.375, 2 / 3, 1.0]},
         "grpo": {"n12": [0.375, 0.625, 0.75], "n8": [0.75, 0.75, 0.75]},
         "sft": {"n12": [0.25, 0.25, 0.25], "n8": [0.75, 11 / 12, 1.0]}}
DIVERSITY = {"base": ((3.0, 2.5), (1.5, 1.25)), "grpo": ((1.5, 1.25), (0.5, 0.25)),
             "sft_a": ((2.0, 1.0), (1.0, 0.5)), "sft_b": ((1.0, 2.0), (0.5, 1.0))}


def _passk_data():
    ks = ["1", "2", "4"]

    def one(model):
        distinct, entropy = DIVERSITY[model]
        return {"N": 4, "model": model, "sets": {
            s: {"difficulties": [n], "problems": 4, "counts": COUNTS[model][s], "counts_answer": [4] * 4,
                "pass_at_k": {k: sum(ev.pass_at_k(4, c, int(k)) for c in COUNTS[model][s]) / 4 for k in ks},
                "random_baseline": {k: 1 - (1 - 1 / n) ** int(k) for k in ks},
                "distinct_answers": d, "entropy": e}
            for (s, n), d, e in zip((("n12", 12), ("n8", 8)), distinct, entropy)}}
    return {m: one(m) for m in COUNTS}


PASSK_CFG = dict(bases=["base"], models={k: PasskModel("hop", v) for k, v in {
                     "base": "base_cot", "grpo": "rl_grpo", "sft_a": "rl_sft_s0", "sft_b": "rl_sft_s1"}.items()},
                 arms={"base": ["base"], "grpo": ["grpo"], "sft": ["sft_a", "sft_b"]})


def test_passk_guess_dashes_one_per_task_and_named_as_drawn():
    # the tasks' guesses share a colour and a panel: hop's dotted, chain's dashed, in the order of `bases`
    two = passk.Config(bases=["base", "chain base"], models={"b": PasskModel("hop", "base_cot"),
                                                             "c": PasskModel("chain", "base_chain")},
                       arms={"base": ["b"], "chain base": ["c"]})
    assert passk.guess_dashes(two) == {"hop": ":", "chain": "--"}
    assert passk.guess_dashes(passk.Config(**PASSK_CFG)) == {"hop": ":"}
    assert [passk.GUESS_DASHES[ls] for ls in passk.guess_dashes(two).values()] == ["dotted", "dashed"]


def test_passk_curve_cis_are_the_per_problem_pass_at_k_by_hand():
    cfg, data = passk.Config(**PASSK_CFG), _passk_data()
    for s in ("n12", "n8"):
        cis = passk.curve_cis(cfg, data, s, [1, 2, 4])
        for arm, means in MEANS.items():
            assert [iv.mean for iv in cis[arm]] == pytest.approx(means[s]), (arm, s)
            assert all(iv.lo <= iv.mean + 1e-12 and iv.mean <= iv.hi + 1e-12 for iv in cis[arm])
    # every problem the same: nothing to resample but identical values, so the interval is the point
    one = passk.Config(models={"base": PasskModel("hop", "x")})
    (iv,) = passk.curve_cis(one, {"base": data["sft_b"]}, "n8", [2])["base"]
    assert (iv.lo, iv.mean, iv.hi) == pytest.approx((5 / 6, 5 / 6, 5 / 6))


def Iv(mean, lo, hi):
    return Interval(mean, lo, hi, 0.0, 4)


def test_passk_figure(caught, monkeypatch):
    cfg, data = passk.Config(**PASSK_CFG), _passk_data()
    # intervals given by hand: the figure draws exactly these (lines: the means; bands: lo..hi)
    cis = {s: {arm: [Iv(m, m - 0.05 * (i + 1), m + 0.01 * (i + 1)) for i, m in enumerate(ms[s])]
               for arm, ms in MEANS.items()} for s in ("n12", "n8")}
    # paired differences given by hand too: the bottom row draws each method's effect and its interval
    cmps = {s: {arm: [answers.Answer(f"{arm}_{s}_{k}", "base", arm,
                                    Comparison(0.5, 0.5, e, e - 0.02, e + 0.03, 0.01, 3, 0.05, 0.01, 4, 4))
                      for k, e in zip((1, 2, 4), effects)]
                for arm, effects in (("grpo", (0.11, 0.12, -0.13)), ("sft", (0.21, -0.22, 0.23)))}
            for s in ("n12", "n8")}
    # under five seeds no band: each seed's own curve, thin
    passk.passk_figure(cfg, data, ["n12", "n8"], cis, cmps, Path("passk.png"))
    a, b, da, db = panels(caught["passk.png"])
    assert not a.collections and not da.collections
    assert len([x for x in a.get_lines() if x.get_label() == "_run"]) == 4  # base 1, grpo 1, sft 2
    # a band from five seeds (here: from one, to read it): exactly the intervals given
    monkeypatch.setattr(passk, "MIN_BAND_RUNS", 1)
    passk.passk_figure(cfg, data, ["n12", "n8"], cis, cmps, Path("passk.png"))
    a, b, da, db = panels(caught["passk.png"])
    guess = "answer-only guess 1 − (1 − 1/n)^k: a reference (verifies 0)"
    assert series(a) == {"base (1 seed)": ([1, 2, 4], pytest.approx(MEANS["base"]["n12"])),
                         "grpo (1 seed)": ([1, 2, 4], pytest.approx(MEANS["grpo"]["n12"])),
                         "sft (2 seeds)": ([1, 2, 4], pytest.approx(MEANS["sft"]["n12"])),
                         figures.VERIFIED_FLOOR: ([0, 1], [0, 0]),
                         guess: ([1, 2, 4], pytest.approx([1 / 12, 1 - (11 / 12) ** 2, 1 - (11 / 12) ** 4]))}
    assert series(b)["sft (2 seeds)"] == ([1, 2, 4], pytest.approx(MEANS["sft"]["n8"]))
    # one band per arm, spanning exactly its intervals; no shaded region under the guess (a reference, not a floor)
    assert len(a.collections) == 3
    for band, arm in zip(a.collections, ("base", "grpo", "sft")):
        ys = sorted({round(float(y), 9) for y in band.get_paths()[0].vertices[:, 1]})
        want = sorted({round(v, 9) for iv in cis["n12"][arm] for v in (iv.lo, iv.hi)})
        assert ys == want, arm
    assert a.get_title() == "hop, n12: difficulty 12, 4 problems"
    assert b.get_title() == "hop, n8: difficulty 8, 4 problems"
    assert a.get_xlabel() == "k (samples per problem, log scale)"
    assert a.get_ylabel() == "verified pass@k (fraction of problems solved)"
    for ax in (a, b):  # k on a log-2 axis, ticked and labelled at the measured k only; a share's 0-1 axis
        assert ax.get_xscale() == "log" and ax.xaxis.get_transform().base == 2
        assert list(ax.get_xticks()) == [1, 2, 4]
        assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "4"]
        assert ax.get_ylim() == pytest.approx(figures.SHARE_YLIM)
    assert series(da) == {"grpo": ([1, 2, 4], pytest.approx([0.11, 0.12, -0.13])),
                          "sft": ([1, 2, 4], pytest.approx([0.21, -0.22, 0.23]))}
    assert len(da.collections) == 2  # one band per method, none for the base
    for band, effects in zip(da.collections, ((0.11, 0.12, -0.13), (0.21, -0.22, 0.23))):
        ys = sorted({round(float(y), 9) for y in band.get_paths()[0].vertices[:, 1]})
        assert ys == sorted({round(v, 9) for e in effects for v in (e - 0.02, e + 0.03)})
    zero_lines = [line for line in da.get_lines() if list(line.get_ydata()) == [0, 0]]
    assert len(zero_lines) == 1
    assert da.get_title() == "hop, n12: arm minus base (paired; CI from 1 seeds)"
    assert da.get_ylabel() == "verified pass@k minus the reference's"
    assert da.get_ylim() == db.get_ylim()  # sibling difference panels: one range
    assert da.get_xscale() == "log" and list(da.get_xticks()) == [1, 2, 4]
    assert caught["passk.png"].get_suptitle().startswith("Verified pass@k of each task's base and arms (unbiased "
                                                         "estimator from N = 4 samples per problem;")


def test_passk_figure_gives_each_task_its_rows_and_its_base(caught):
    # the same data read as two tasks: base and grpo on hop, the two sft seeds as chain's base arm
    models = {k: PasskModel("chain" if k.startswith("sft") else "hop", k) for k in COUNTS}
    cfg = passk.Config(bases=["base", "sft"], models=models,
                       arms={"base": ["base"], "grpo": ["grpo"], "sft": ["sft_a", "sft_b"]})
    data = _passk_data()
    cis = {s: passk.curve_cis(cfg, data, s, [1, 2, 4]) for s in ("n12", "n8")}
    cmps = {s: passk.comparisons(cfg, data, s, [1, 2, 4]) for s in ("n12", "n8")}
    assert list(cmps["n12"]) == ["grpo"]  # sft is chain's base: compared with nothing
    passk.passk_figure(cfg, data, ["n12", "n8"], cis, cmps, Path("passk.png"))
    axes = panels(caught["passk.png"])
    assert [ax.get_title() for ax in axes] == [
        "hop, n12: difficulty 12, 4 problems", "hop, n8: difficulty 8, 4 problems",
        "hop, n12: arm minus base (paired; CI from 5 seeds)", "hop, n8: arm minus base (paired; CI from 5 seeds)",
        "chain, n12: difficulty 12, 4 problems", "chain, n8: difficulty 8, 4 problems",
        "chain, n12: arm minus sft (paired; CI from 5 seeds)", "chain, n8: arm minus sft (paired; CI from 5 seeds)"]
    assert set(series(axes[0])) >= {"base (1 seed)", "grpo (1 seed)"} and "sft (2 seeds)" not in series(axes[0])
    assert "sft (2 seeds)" in series(axes[4]) and "grpo (1 seed)" not in series(axes[4])
    assert series(axes[6]) == {}  # chain has no arm beside its base
    assert [t.get_text() for t in caught["passk.png"].legends[0].get_texts()][:4] == [
        "base (1 seed)", "grpo (1 seed)", figures.VERIFIED_FLOOR,
        "answer-only guess 1 − (1 − 1/n)^k: a reference (verifies 0)"]


def test_passk_arm_styles_are_unique_across_tasks_and_bases_are_black():
    names = {"hop": ("base", "GRPO in", "GRPO edge", "GRPO far"), "chain": ("chain base", "chain GRPO in",
                                                                          "chain GRPO edge")}
    models = {k: PasskModel(task, k) for task, keys in names.items() for k in keys}
    cfg = passk.Config(bases=["base", "chain base"], models=models)
    colors, markers = passk.arm_colors(cfg), passk.arm_colors(cfg, part=1)
    assert colors["base"] == colors["chain base"] == "k" and markers["base"] != markers["chain base"]
    # one figure holds both tasks: no two arms share a colour (bases aside) nor a (colour, marker) pair, and each
    # keeps the style every other figure gives it
    arms = [a for a in models if "base" not in a]
    assert len({colors[a] for a in arms}) == len(arms)
    assert len({(colors[a], markers[a]) for a in models}) == len(models)
    assert all((colors[a], markers[a]) == (figures.arm_style(a)["color"], figures.arm_style(a)["marker"])
               for a in models)


def test_passk_diversity_figure_hatches_the_second_tasks_bars(caught):
    # one axis holds every task's arms and arm_colors repeats across tasks: the hatch tells them apart
    models = {k: PasskModel("chain" if k.startswith("sft") else "hop", k) for k in COUNTS}
    cfg = passk.Config(bases=["base", "sft"], models=models,
                       arms={"base": ["base"], "grpo": ["grpo"], "sft": ["sft_a", "sft_b"]})
    passk.diversity_figure(cfg, _passk_data(), ["n12", "n8"], Path("diversity.png"))
    for ax in panels(caught["diversity.png"]):
        hatch = {c.get_label(): {r.get_hatch() for r in c} for c in ax.containers if isinstance(c, BarContainer)}
        assert hatch == {"base": {""}, "grpo": {""}, "sft": {"//"}}


def test_passk_diversity_figure_seeds_of_one_value(caught, monkeypatch):
    # three seeds at 0.1 sum to a mean of 0.10000000000000002: the upper whisker must not be negative
    monkeypatch.setattr(passk, "MIN_BAND_RUNS", 3)  # whiskers, as from five seeds
    cfg = passk.Config(bases=["base"], models=PASSK_CFG["models"], arms={"base": ["base"],
                       "rl": ["grpo", "sft_a", "sft_b"]})
    data = _passk_data()
    for m in ("grpo", "sft_a", "sft_b"):
        data[m]["sets"]["n12"]["entropy"] = 0.1
    passk.diversity_figure(cfg, data, ["n12", "n8"], Path("diversity.png"))
    _, entropy = panels(caught["diversity.png"])
    rl = next(c for c in entropy.containers if isinstance(c, BarContainer) and c.get_label() == "rl")
    assert rl[0].get_height() == sum([0.1] * 3) / 3 != 0.1
    low, high = whiskers(rl.errorbar)[0]
    assert low <= rl[0].get_height() <= high and high - low < 1e-9  # no spread: a whisker of no length, not negative


def test_passk_diversity_figure(caught):
    cfg, data = passk.Config(**PASSK_CFG), _passk_data()
    passk.diversity_figure(cfg, data, ["n12", "n8"], Path("diversity.png"))
    distinct, entropy = panels(caught["diversity.png"])

    def bars(ax):
        return {c.get_label(): c for c in ax.containers if isinstance(c, BarContainer)}

    # the mean over an arm's seeds: sft (2.0 and 1.0 on n12, 1.0 and 2.0 on n8)
    assert {k: [r.get_height() for r in c] for k, c in bars(distinct).items()} == {
        "base": [3.0, 2.5], "grpo": [1.5, 1.25], "sft": [1.5, 1.5]}
    assert {k: [r.get_height() for r in c] for k, c in bars(entropy).items()} == {
        "base": [1.5, 1.25], "grpo": [0.5, 0.25], "sft": [0.75, 0.75]}
    # under five seeds no whisker (never a min-max one): each seed a dot on its bar (sft: 2.0 and 1.0 on n12)
    assert all(c.errorbar is None for c in bars(distinct).values())
    dots = sorted(tuple(map(float, x.get_ydata())) for x in distinct.get_lines() if x.get_label() == "_run")
    assert dots == [(1.0, 2.0), (2.0, 1.0)]
    # short axis labels: the long one ran into the suptitle; the titles say the rest
    assert distinct.get_ylabel() == "distinct answers per problem"
    assert entropy.get_ylabel() == "nats per response token"
    assert [t.get_text() for t in distinct.get_xticklabels()] == ["n12", "n8"]
    assert [t.get_text() for t in entropy.get_xticklabels()] == ["n12", "n8"]
    assert distinct.get_xlabel() == entropy.get_xlabel() == "test set"
    note = "\n(dots: each seed under 5; whiskers: 95% CI from 5 seeds)"
    assert distinct.get_title() == "Distinct answers per problem (mean)" + note
    assert entropy.get_title() == "Token entropy of own samples (nats, per response token)" + note
    # one legend below both panels names both references: the right panel's lines are the guess's entropy
    legend = [t.get_text() for t in caught["diversity.png"].legends[0].get_texts()]
    refs = [sum(what in t for t in legend) for what in ("its distinct answers", "answer-token entropy ln n")]
    assert refs == [1, 1]
    # beside each set's bars a uniform guess's value, dotted: its distinct answers among n letters with N = 4
    # draws, n (1 - (1 - 1/n)^4) (n12: 12 x 0.2939 = 3.527; n8: 8 x 0.4138 = 3.310), and its entropy at the answer
    # token, ln n (ln 12 = 2.485, ln 8 = 2.079); the files carry no guess_*: from the guess's pass@1, 1/n
    for ax, want in ((distinct, [12 * (1 - (11 / 12) ** 4), 8 * (1 - (7 / 8) ** 4)]),
                     (entropy, [math.log(12), math.log(8)])):
        assert [c.get_paths()[0].vertices[0, 1] for c in ax.collections] == pytest.approx(want)  # one per set
    assert distinct.collections[0].get_label() == ("uniform guess among ~12 answers (hop), its distinct answers: "
                                                   "a reference")
    assert entropy.collections[0].get_label() == ("uniform guess among ~12 answers (hop), its answer-token entropy "
                                                  "ln n: a reference")
    # three arms side by side around each set's tick, each 0.8 / 3 wide
    for ax in (distinct, entropy):
        centres = {k: [round(r.get_x() + r.get_width() / 2, 9) for r in c] for k, c in bars(ax).items()}
        w = 0.8 / 3
        assert centres == {"base": pytest.approx([-w, 1 - w]), "grpo": pytest.approx([0, 1]),
                           "sft": pytest.approx([w, 1 + w])}
        assert {round(r.get_width(), 9) for c in bars(ax).values() for r in c} == {round(w, 9)}
    assert caught["diversity.png"].get_suptitle() == "Diversity of 4 samples per problem at temperature 1"


def test_every_study_figure_fits_its_data_and_draws_each_arms_interval(caught, tmp_path, monkeypatch):
    """Every line panel of every study figure (the hand-built studies of tests/test_report.py): its y axis
    contains the data with a margin and is not three times taller than it; every arm drawn from several
    seeds or problems carries an interval artist (a band or error bars) of its own colour."""
    import test_report
    from matplotlib.collections import PolyCollection

    test_report.build_studies(tmp_path)
    checked = failures = 0
    for name, fig in caught.items():
        for ax in panels(fig):
            if ax.get_title().startswith("Outcome types"):
                # a failure-mix panel: every row, the base's included, with its interval
                rows = [t.get_text() for t in ax.get_yticklabels()]
                assert len([c for c in ax.containers if isinstance(c, ErrorbarContainer)]) == len(rows), (name, rows)
                failures += 1
            if ax.images or any(isinstance(c, BarContainer) for c in ax.containers) or not ax.get_lines():
                continue
            if figures.is_share(ax.get_ylabel()):  # a share: the 0-1 axis, its data on it
                y0, y1 = ax.get_ylim()
                assert (y0, y1) == pytest.approx(figures.SHARE_YLIM) and y0 <= min(data_y(ax)) <= max(data_y(ax)) <= y1
            else:
                assert_fits(ax)
            checked += 1  # and, either way, every arm's interval below
            bands = {tuple(np.round(c.get_facecolor()[0][:3], 3)) for c in ax.collections
                     if isinstance(c, PolyCollection) and len(c.get_facecolor())}
            bars = {tuple(np.round(matplotlib.colors.to_rgb(c.lines[0].get_color()), 3)) for c in ax.containers
                    if isinstance(c, ErrorbarContainer)}
            # an arm of fewer than five runs draws each run thin instead of a band
            runs = {tuple(np.round(matplotlib.colors.to_rgb(x.get_color()), 3)) for x in ax.get_lines()
                    if x.get_label() == "_run"}
            bands |= runs
            if not bands | bars:  # a panel of single-seed curves draws no interval at all
                continue
            for line in ax.get_lines():
                label = line.get_label()
                if (label.startswith(("_", "gold response")) or "guess" in label or "(1 seed)" in label
                        or label == figures.VERIFIED_FLOOR):  # references, not arms
                    continue
                color = tuple(np.round(matplotlib.colors.to_rgb(line.get_color()), 3))
                assert color in bands | bars, (name, label)
    assert checked >= 15 and failures >= 2


def test_a_long_figure_title_is_broken_into_lines_that_fit_the_figure(caught):
    long = ("Ablation — two updates per batch: symmetric clip vs clip-higher (eps_high 0.28) at lr 3e-6 "
            "(mean and 95% CI over seeds; per-step curves: 10-step moving average)")
    panel = figures.Panel("p", "y", [figures.smoothed("a", [pd.Series([0.1, 0.2, 0.3], index=[1, 2, 3])])])
    for title, lines in ((long, 2), ("Short", 1), ("Short\n" + long, 3), ("Short\n\nblank line kept", 3)):
        figures.panel_figure([panel, panel], title, Path("t/long.png"))
        fig = caught["t/long.png"]
        fig.canvas.draw()
        box = fig._suptitle.get_window_extent()
        assert title.splitlines()[0].startswith(fig.get_suptitle().splitlines()[0])  # a line break kept
        assert fig.get_suptitle().replace("\n", " ") == title.replace("\n", " ")
        assert len(fig.get_suptitle().splitlines()) == lines
        assert 0 <= box.x0 and box.x1 <= fig.bbox.width


def test_the_stability_map_cuts_each_interval_at_the_accuracy_range(caught):
    st = ablations.Stability("final accuracy by lr", {"GRPO": {"1e-4": ["a"]}, "RLOO": {"1e-4": ["b"]}})
    iv = lambda m, lo, hi: SimpleNamespace(mean=m, lo=lo, hi=hi)  # noqa: E731
    ablations.stability_figure(st, {("GRPO", "1e-4"): iv(0.999, 0.997, 1.001),
                                    ("RLOO", "1e-4"): iv(0.013, -0.023, 0.049)}, [], Path("ab/stability.png"),
                               "sampled")
    texts = sorted(t.get_text() for t in caught["ab/stability.png"].axes[0].texts)
    assert texts == ["0.013\n[0.000, 0.049]", "0.999\n[0.997, 1.000]"]
    colorbar = caught["ab/stability.png"].axes[1]  # the scale names the compared measure
    assert colorbar.get_ylabel() == "final verified sampled accuracy (pass@1 at T = 1)"
    assert not colorbar.get_lines() and "random guess" not in caught["ab/stability.png"].axes[0].get_title()
    # with the test set's guess floor: dotted across the colour bar where it falls on the scale, named in the title
    for guess, drawn, where in ((0.0625, [0.0625], "dotted on the colour bar"), (0.001, [], "outside the scale")):
        cells = {("GRPO", "1e-4"): iv(0.999, 0.997, 1.001), ("RLOO", "1e-4"): iv(0.013, 0, 0.05)}
        ablations.stability_figure(st, cells, [], Path("ab/stability.png"), "sampled", guess)
        fig = caught["ab/stability.png"]
        assert [line.get_ydata()[0] for line in fig.axes[1].get_lines()] == drawn
        assert fig.axes[0].get_title().endswith(f"\nrandom guess {guess:.3f}, answer only: {where}")


def test_a_per_step_curve_stops_where_its_first_seed_stopped(caught):
    # three seeds of a budgeted run end at steps 18, 19 and 20; at 19 and 20 fewer seeds would carry the mean,
    # so the mean and each run's thin line (no band under five runs) end at step 18
    seeds = [pd.Series([0.1 * k + 0.01 * i for i in range(1, last + 1)], index=range(1, last + 1))
             for k, last in enumerate((20, 18, 19))]
    figures.panel_figure([figures.Panel("p", "y", [figures.Curve("arm", seeds)]),
                          figures.Panel("q", "y", [figures.Curve("one seed", seeds[:1])])], "T", Path("stop.png"))
    ax, single = panels(caught["stop.png"])
    (line,) = [x for x in ax.get_lines() if x.get_label() == "arm"]
    assert list(line.get_xdata()) == list(range(1, 19))
    assert line.get_ydata() == pytest.approx([0.1 + 0.01 * i for i in range(1, 19)])  # the mean of 0, 0.1, 0.2 + ...
    runs = [x for x in ax.get_lines() if x.get_label() == "_run"]
    assert not ax.collections and len(runs) == 3 and max(max(x.get_xdata()) for x in runs) == 18
    (whole,) = single.get_lines()  # one seed: all its steps
    assert list(whole.get_xdata()) == list(range(1, 21))


def test_a_panel_figure_has_one_legend_under_its_panels(caught):
    curve = figures.Curve("arm", [pd.Series([0.5, 0.6], index=[1, 2])])
    figures.panel_figure([figures.Panel("p", "y", [curve])], "One", Path("one.png"), ncols=1)
    fig = caught["one.png"]
    (ax,) = fig.axes
    assert ax.get_legend() is None
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == ["arm"]
    assert legend.get_window_extent(fig.canvas.get_renderer()).y1 <= ax.get_window_extent().y0  # under the axes
    # panels of one set of arms: one legend under them (a legend inside a panel covers its data)
    figures.panel_figure([figures.Panel("p", "y", [curve]), figures.Panel("q", "y", [curve])], "Two", Path("two.png"))
    fig = caught["two.png"]
    assert len(fig.legends) == 1 and all(ax.get_legend() is None for ax in fig.axes)
    # panels of different arms: one legend too, each arm once
    other = figures.Curve("other", [pd.Series([0.5, 0.6], index=[1, 2])])
    figures.panel_figure([figures.Panel("p", "y", [curve]), figures.Panel("q", "y", [other, curve])], "Mixed",
                         Path("mixed.png"))
    fig = caught["mixed.png"]
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == ["arm", "other"]
    assert all(ax.get_legend() is None for ax in fig.axes)


# --- figures a reader can trust at a glance: ranges, guess floors, arm styles, sibling scales ---------------

HOP_EVAL = {"task": "hop", "eval": "val_edge"}
GUESS = (1 / 8 + 1 / 16) / 2  # the random guess of the hand-built set below: a ring of 8, a ring of 16


def test_the_random_guess_and_the_gold_length_come_from_the_task(tmp_path):
    import random

    from reasonrl.tasks import get_task

    # a hand-built evaluation set: a ring of 8 and a ring of 16 (a guess among n letters), one chain (a digit mod 7)
    hop, chain = get_task("hop"), get_task("chain")
    rows = [hop.sample(random.Random(0), {"n_range": [n, n], "k_min": 3, "k_max": 3}).to_dict() for n in (8, 16)]
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "hop_val_edge.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "data" / "chain_val_edge.jsonl").write_text(
        json.dumps(chain.sample(random.Random(0), chain.example_spec).to_dict()) + "\n")
    declared = ["data/hop_val_edge.jsonl", "data/chain_val_edge.jsonl"]
    assert floors.chance(HOP_EVAL, tmp_path, declared) == pytest.approx(GUESS)
    assert floors.chance({"task": "chain", "eval": "val_edge"}, tmp_path, declared) == pytest.approx(1 / 7)
    assert floors.chance({"task": "hop", "eval": "none"}, tmp_path, []) is None  # a run that never evaluates
    with pytest.raises(ConfigError, match="data/hop_val_edge.jsonl, which the study's inputs do not list"):
        floors.chance(HOP_EVAL, tmp_path, declared[1:])  # a set the stage does not depend on
    # a hop gold response at k = 5: five trace letters, the mark, the answer, the end
    assert floors.gold_length({"task": "hop", "n_range": [8, 9], "k_min": 5, "k_max": 5}) == 8.0
    assert floors.gold_length({"task": "hop"}) is None
    # the study's name for an evaluation set is the data stage's
    from reasonrl.pipeline import ROLES, data_path

    assert all(floors.eval_set(t, r) == data_path(t, r) for t in ("hop", "chain") for r in ROLES)


def test_the_guess_floor_is_named_answer_only():
    """A guessed answer comes with no verified trace: the floor names the measure it bounds."""
    fig, ax = plt.subplots()
    figures.guess_line(ax, 0.125)
    figures.guess_line(ax, 0.25, "random guess, answer only")
    assert [line.get_label() for line in ax.get_lines()] == ["random guess (0.125, answer only; verifies 0)",
                                                             "random guess, answer only"]
    plt.close(fig)


def guess_lines(ax) -> list[float]:
    return [float(line.get_ydata()[0]) for line in ax.get_lines() if line.get_label().startswith("random guess")]


def in_range(ax, lo: float, hi: float) -> None:
    """Every band and every whisker of an axes lies in the measure's range [lo, hi]."""
    for coll in ax.collections:
        if coll.get_label().startswith("at or below"):
            continue
        for path in coll.get_paths():
            y = path.vertices[:, 1]
            assert y.min() >= lo - 1e-12 and y.max() <= hi + 1e-12, (ax.get_title(), y.min(), y.max())
    for c in ax.containers:
        if isinstance(c, ErrorbarContainer) and c.has_yerr:
            for low, high in whiskers(c):
                assert lo - 1e-12 <= low and high <= hi + 1e-12, (ax.get_title(), low, high)
        elif isinstance(c, BarContainer) and c.errorbar is not None and c.errorbar.has_yerr:
            for low, high in whiskers(c.errorbar):
                assert lo - 1e-12 <= low and high <= hi + 1e-12, (ax.get_title(), low, high)


def test_a_per_step_curve_starts_at_step_one_with_a_centred_mean(caught):
    # a rise from 0 to 1 over steps 1-6: a trailing mean still reads well below 1 at step 10; a centred one, 1
    raw = pd.Series([0, 0.2, 0.4, 0.6, 0.8] + [1.0] * 15, index=range(1, 21), dtype=float)
    figures.panel_figure([figures.Panel("p", "y", [figures.smoothed("a", [raw])])], "T", Path("c.png"), ncols=1)
    (line,) = panels(caught["c.png"])[0].get_lines()
    # step 1 is its raw value, step 2 the mean of steps 1-3, step 5 of 1-9; by step 10 the window holds only 1s
    assert list(line.get_xdata())[0] == 1
    assert list(line.get_ydata()[:3]) == pytest.approx([0.0, 0.2, 0.4])
    assert line.get_ydata()[4] == pytest.approx((0 + 0.2 + 0.4 + 0.6 + 0.8 + 4) / 9)
    assert line.get_ydata()[9] == pytest.approx(1.0)
    assert figures.SMOOTHING == "centred 9-step mean"


def test_accuracy_panels_draw_the_random_guess(caught):
    runs = {"a0": make_run("a0", 0.3, HOP_EVAL), "a1": make_run("a1", 0.35, {**HOP_EVAL, "seed": 1}),
            "a2": make_run("a2", 0.35, {**HOP_EVAL, "num_iterations": 2})}
    methods.curves_figure(methods.Config(base="cot", runs={"grpo": ["a0", "a1"]}), runs, Path("curves.png"), GUESS)
    zero.training_figure(zero.Config(runs={"a": ["a0", "a1"]}), runs, Path("training.png"), GUESS)
    ablations.group_figure(ablations.Group("g", {"on": ["a0"], "off": ["a1"]}), runs, Path("g.png"), GUESS)
    cfg = hacking.Config(runs={"r": ["a0"], "s": ["a2"]}, random_pair=["r", "s"])
    hacking.random_clip_figure(cfg, runs, Path("random_clip.png"), GUESS)
    hacking.reward_figure("r", [runs["a0"], runs["a1"]], Path("reward_r.png"), guess=GUESS)
    accuracy = [ax for fig in caught.values() for ax in panels(fig) if ax.get_ylabel().startswith("accuracy")]
    assert len(accuracy) == 4
    for ax in accuracy + panels(caught["reward_r.png"]):
        assert guess_lines(ax) == [pytest.approx(GUESS)], ax.get_title()
    for name in ("curves.png", "training.png", "g.png", "random_clip.png"):  # and on no other panel
        assert all(not guess_lines(ax) for ax in panels(caught[name]) if not ax.get_ylabel().startswith("accuracy"))


def test_headline_draws_chance_as_an_answer_only_reference_on_one_share_axis(caught):
    from reasonrl.studies.answers import Answer

    cmp = Comparison(0.12, 0.15, 0.03, 0.01, 0.05, 0.01, 4, 0.01, 0.02, 1, 100)
    iv = Interval(0.13, 0.1, 0.16, 0.01, 99)
    near = Interval(0.99, 0.985, 0.995, 0.002, 99)
    cells = {("chain", "edge", "correct"): (Answer("p", "base", "GRPO", cmp), [Answer("p0", "base c0", "GRPO r0", cmp)],
                                            iv, iv, [(iv, iv)]),
             ("hop", "in", "correct"): (Answer("q", "base", "GRPO", cmp), [Answer("q0", "base c0", "GRPO r0", cmp)],
                                        near, near, [(near, near)])}
    headline.figure(headline.Config(runs={"r0": "c0"}), "GRPO", cells, Path("before_after.png"),
                    {("chain", "edge"): 1 / 7, ("hop", "in"): 0.134})
    chain, hop = panels(caught["before_after.png"])
    # one 0-1 axis on every panel: the guess is always on it, drawn as a labelled answer-only reference beside the
    # verified floor (0); hop's 0.98-1.0 is not magnified into a collapse
    assert guess_lines(chain) == [pytest.approx(1 / 7)] and guess_lines(hop) == [pytest.approx(0.134)]
    for ax in (chain, hop):
        assert ax.get_ylim() == pytest.approx(figures.SHARE_YLIM)
        assert figures.VERIFIED_FLOOR in ax.get_legend_handles_labels()[1]


def test_bands_and_whiskers_stay_in_the_measures_range(caught):
    # passk: intervals given by hand past 0 and 1
    cfg, data = passk.Config(**PASSK_CFG), _passk_data()
    cis = {s: {arm: [Iv(m, m - 0.6, m + 0.6) for m in ms[s]] for arm, ms in MEANS.items()} for s in ("n12", "n8")}
    from dataclasses import replace

    # and paired differences whose intervals are given past -1 and 1
    cmps = {s: {arm: [replace(x, cmp=replace(x.cmp, ci_lo=x.cmp.effect - 1.5, ci_hi=x.cmp.effect + 1.5)) for x in xs]
                for arm, xs in passk.comparisons(cfg, data, s, [1, 2, 4]).items()} for s in ("n12", "n8")}
    passk.passk_figure(cfg, data, ["n12", "n8"], cis, cmps, Path("passk.png"))
    curves, diffs = panels(caught["passk.png"])[:2], panels(caught["passk.png"])[2:4]
    for ax in curves:
        in_range(ax, 0.0, 1.0)
    for ax in diffs:
        assert "minus" in ax.get_title()
        in_range(ax, -1.0, 1.0)
    # zero: whiskers of an accuracy given past 0 and 1
    zcfg, _, prof = _zero_setup()
    for b in prof.values():
        for when in b.values():
            when |= {"acc_think_ci": (-0.3, 1.4), "acc_direct_ci": (-0.3, 1.4)}
    zero.think_vs_direct_figure(zcfg, prof, Path("think_vs_direct.png"))
    in_range(panels(caught["think_vs_direct.png"])[0], 0.0, 1.0)
    # hacking random clip: two seeds that split put a t-interval of KL below 0 and of the clip share past 1
    cfg = hacking.Config(runs={"r": ["r0", "r1"], "s": ["s0", "s1"]}, random_pair=["r", "s"])
    runs = {"r0": make_run("r0", 0.0), "r1": make_run("r1", 0.9, {"seed": 1}),
            "s0": make_run("s0", 0.0, {"num_iterations": 2}), "s1": make_run("s1", 0.9, {"num_iterations": 2})}
    hacking.random_clip_figure(cfg, runs, Path("random_clip.png"))
    clip, kl, acc, reward = panels(caught["random_clip.png"])
    for ax, hi in ((clip, 1.0), (kl, np.inf), (acc, 1.0), (reward, 1.0)):
        in_range(ax, 0.0, hi)


def test_hacking_reward_figures_share_one_y_range(caught, tmp_path):
    import test_report

    test_report.build_studies(tmp_path)
    rewards = {name: panels(fig)[0].get_ylim() for name, fig in caught.items() if name.startswith("hacking/reward_")}
    assert len(rewards) >= 2 and len(set(rewards.values())) == 1, rewards


def test_a_truncated_arm_is_marked_and_the_gold_length_drawn(caught):
    job = {"task": "hop", "n_range": [15, 16], "k_min": 7, "k_max": 7}
    short = make_run("d0", 0.1, {**job, "dynamic_sampling": True})
    short.history = short.history.iloc[:12]
    runs = {"g0": make_run("g0", 0.0, job), "d0": short}
    ablations.group_figure(ablations.Group("dynamic", {"off": ["g0"], "on": ["d0"]}), runs, Path("dynamic.png"))
    acc, ent, zero_var, length = panels(caught["dynamic.png"])
    for ax in (ent, zero_var, length):
        (mark,) = [line for line in ax.get_lines() if line.get_marker() == "x"]
        assert list(mark.get_xdata()) == [12] and "rollout budget" in ax.get_title()
        assert any(t.get_text() == "stops at step 12" for t in ax.texts)
    # each note inside its panel: above the mark, below it near the top (the zero-variance share sat on the spine)
    fig = caught["dynamic.png"]
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in (ent, zero_var, length):
        (note,) = [t for t in ax.texts if t.get_text() == "stops at step 12"]
        box, frame = note.get_window_extent(renderer), ax.get_window_extent(renderer)
        assert frame.y0 < box.y0 and box.y1 < frame.y1, (ax.get_title(), box, frame)
    (gold,) = [line for line in length.get_lines() if line.get_label().startswith("gold response")]
    assert list(gold.get_ydata()) == [10, 10] and "not a length bias" in length.get_title().replace("\n", " ")
