"""The figure rules (docs/studies.md, "Figure rules"), checked on the figures the committed data draws: each
study's report is run on its committed inputs (linked into a scratch folder) with `save_figure` caught, and the
returned axes are read, not the pixels.

- a share (accuracy, pass@k, a rate, a fraction) is drawn on an axis inside [0, 1] (SHARE_SLACK for a marker
  at a bound);
- sibling panels (one figure's panels of one measure, and the hacking study's reward figures) share one y range;
- an arm keeps one style (colour, marker, line style) in every figure, and no two arms share one;
- the bars of one panel differ in (colour, hatch), its reference lines in (colour, dashes): what tells them apart
  in the legend.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402
from matplotlib.container import BarContainer, ErrorbarContainer  # noqa: E402

from reasonrl.config import load_params  # noqa: E402
from reasonrl.studies import ablations, figures, hacking, headline, methods, passk, zero  # noqa: E402
from reasonrl.studies.stage import load_config  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# the params the committed reports were built with (run 2's, landed with its dvc.lock; run 1's are kept in
# reports/run1/params.yaml for its own reports)
REPORTS_PARAMS = "params.yaml"
STUDIES = {"headline_hop": headline, "headline_chain": headline, "methods": methods, "passk": passk, "zero": zero,
           "hacking": hacking, "ablations": ablations}
SHARE_SLACK = 0.03  # a share's axis may reach this far past 0 and 1, so that a marker at a bound is drawn whole
SHARE_WORDS = ("accuracy", "pass@", "share", "fraction", "rate", "(0–1)")
# legend entries that are references, not arms: a guess, a floor, a gold length, an interval's key
REFERENCES = ("random guess", "guess", "floor", "gold", "95% ci", "interval", "uniform", "reference", "ceiling")


def link_inputs(module, cfg, root: Path) -> None:
    """The study's inputs, linked file by file under root (the report writes its outputs there, not here)."""
    for path in module.inputs(cfg):
        src = ROOT / path
        files = [p for p in src.rglob("*") if p.is_file()] if src.is_dir() else [src]
        for f in files:
            dst = root / f.relative_to(ROOT)
            dst.parent.mkdir(parents=True, exist_ok=True)
            if not dst.exists():
                dst.symlink_to(f)


@pytest.fixture(scope="module")
def drawn(tmp_path_factory) -> dict[str, plt.Figure]:
    """Every study figure, by "<study>/<file>", as its report draws it from the committed inputs."""
    root = tmp_path_factory.mktemp("run1")
    params = load_params(ROOT / REPORTS_PARAMS)
    figs: dict[str, plt.Figure] = {}
    mp = pytest.MonkeyPatch()
    for mod in (figures, *STUDIES.values()):
        if hasattr(mod, "save_figure"):
            mp.setattr(mod, "save_figure", lambda fig, path: figs.__setitem__("/".join(Path(path).parts[-2:]), fig))
    try:
        for name, module in STUDIES.items():
            cfg = load_config(module, params)
            if module is headline:  # its task is the stage's argument: report_headline_<task>
                cfg = replace(cfg, task=name.removeprefix("headline_"))
            link_inputs(module, cfg, root)
            module.report(cfg, root)
    finally:
        mp.undo()
    yield figs
    for fig in figs.values():
        plt.close(fig)


def panels(fig) -> list:
    return [ax for ax in fig.axes if ax.axison]


def name_of(fig_name: str, ax) -> str:
    return f"{fig_name} [{ax.get_title().splitlines()[0] if ax.get_title() else ax.get_ylabel()}]"


def is_share(ax) -> bool:
    label = ax.get_ylabel().lower()
    return any(w in label for w in SHARE_WORDS) and "minus" not in label and "−" not in label and "gain" not in label


def test_share_axes_lie_inside_0_1(drawn):
    outside = [f"{name_of(n, ax)}: y {tuple(round(v, 3) for v in ax.get_ylim())}"
               for n, fig in drawn.items() for ax in panels(fig)
               if is_share(ax) and not (-SHARE_SLACK <= ax.get_ylim()[0] and ax.get_ylim()[1] <= 1 + SHARE_SLACK)]
    assert not outside, "share axes outside [0, 1]:\n" + "\n".join(outside)


def test_sibling_panels_share_one_y_range(drawn):
    """One figure's panels of one measure (one y label) share their y range; so do the hacking reward figures."""
    split = []
    for n, fig in drawn.items():
        by_label: dict[str, list] = {}
        for ax in panels(fig):
            if ax.get_ylabel():
                by_label.setdefault(ax.get_ylabel(), []).append(ax)
        for label, axes in by_label.items():
            ranges = {tuple(round(v, 4) for v in ax.get_ylim()) for ax in axes}
            if len(ranges) > 1:
                split.append(f"{n} '{label}': " + "; ".join(
                    f"{name_of(n, ax)} y {tuple(round(v, 3) for v in ax.get_ylim())}" for ax in axes))
    rewards = {n: panels(fig)[0].get_ylim() for n, fig in drawn.items() if n.startswith("hacking/reward_")}
    if len({tuple(round(v, 4) for v in r) for r in rewards.values()}) > 1:
        split.append(f"hacking/reward_*: {sorted(set(rewards.values()))}")
    assert not split, "sibling panels with their own y range:\n" + "\n".join(split)


def arm_entries(fig) -> list[tuple[str, tuple]]:
    """(label, (colour, marker, line style)) of every legend entry of a figure that is an arm (not a reference)."""
    out = []
    for ax in fig.axes:
        handles, labels = ax.get_legend_handles_labels()
        if ax.get_legend() is None and not fig.legends:
            continue
        for h, label in zip(handles, labels):
            if any(r in label.lower() for r in REFERENCES):
                continue
            line = h.lines[0] if isinstance(h, ErrorbarContainer) else h
            if not hasattr(line, "get_marker"):
                continue  # a bar or a band: the failure types, not arms
            ls = line.get_linestyle() if line.get_linestyle() not in ("None", "none", " ", "") else "none"
            out.append((label, (to_hex(line.get_color()), str(line.get_marker()), str(ls))))
    return out


def arm_key(label: str) -> str:
    """The arm a legend label names, as `figures.arm_key` reads it (kept here so that the test runs on code older than
    it): lower case, without a bracketed note ("GRPO edge (8 seeds)" is the arm "grpo edge")."""
    return " ".join(label.split(" (")[0].lower().split())


def test_an_arm_keeps_one_style_and_no_two_arms_share_one(drawn):
    """Each arm (`arm_key`) has one colour, one marker and
    one line style in every figure (points of in-training evaluations, unjoined, draw no line: any line style), and
    no two arms share a (colour, marker)."""
    styles: dict[str, dict[tuple, list[str]]] = {}
    for n, fig in drawn.items():
        for label, style in arm_entries(fig):
            styles.setdefault(arm_key(label), {}).setdefault(style, []).append(n)
    problems = []
    for arm, s in styles.items():
        looks = {st[:2] for st in s}
        lines = {st[2] for st in s if st[2] != "none"}
        if len(looks) > 1 or len(lines) > 1:
            problems.append(f"arm '{arm}' drawn in {len(s)} styles: "
                            + "; ".join(f"{st} in {sorted(set(f))}" for st, f in s.items()))
    owners: dict[tuple, set[str]] = {}
    for arm, s in styles.items():
        for st in s:
            owners.setdefault(st[:2], set()).add(arm)
    problems += [f"(colour, marker) {st} shared by arms {sorted(arms)}" for st, arms in owners.items() if len(arms) > 1]
    assert not problems, f"{len(problems)} style problems:\n" + "\n".join(problems)


def test_the_references_of_one_panel_differ_in_style(drawn):
    """Reference lines (a guess, a floor) that one panel draws under different labels differ in colour or dashes."""
    from matplotlib.collections import LineCollection

    def look(artist) -> tuple:
        if isinstance(artist, LineCollection):
            return to_hex(artist.get_color()[0]), str(artist.get_linestyle()[0])
        return to_hex(artist.get_color()), str(artist.get_linestyle())

    problems = []
    for n, fig in drawn.items():
        for ax in fig.axes:
            owners: dict[tuple, set[str]] = {}
            for artist in (*ax.get_lines(), *(c for c in ax.collections if isinstance(c, LineCollection))):
                label = artist.get_label() or ""
                if not label.startswith("_") and any(r in label.lower() for r in REFERENCES):
                    owners.setdefault(look(artist), set()).add(label)
            problems += [f"{name_of(n, ax)}: {sorted(labels)} all in {st}" for st, labels in owners.items()
                         if len(labels) > 1]
    assert not problems, f"{len(problems)} panels with look-alike references:\n" + "\n".join(problems)


def test_the_bars_of_one_panel_differ_in_colour_or_hatch(drawn):
    """A bar has no marker or line style: the series whose bars one panel draws (arms, or a stack's parts) never
    share a (colour, hatch), so that the legend tells each one apart."""
    problems = []
    for n, fig in drawn.items():
        for ax in fig.axes:
            owners: dict[tuple, set[str]] = {}
            for c in ax.containers:
                label = c.get_label() or ""
                if isinstance(c, BarContainer) and c.patches and not label.startswith("_"):
                    look = (to_hex(c.patches[0].get_facecolor()), c.patches[0].get_hatch() or "")
                    owners.setdefault(look, set()).add(arm_key(label))
            problems += [f"{name_of(n, ax)}: {sorted(arms)} all in {look}" for look, arms in owners.items()
                         if len(arms) > 1]
    assert not problems, f"{len(problems)} panels with look-alike bars:\n" + "\n".join(problems)


def test_a_hollow_marker_rings_the_filled_one_it_can_cover(drawn):
    """An unjoined hollow marker (answer-only beside verified) is drawn larger than, and above, the filled markers
    of its colour in its panel: where the two values agree it circles the dot instead of hiding under it."""
    problems = []
    for n, fig in drawn.items():
        for ax in panels(fig):
            lines = [ln for ln in ax.get_lines() if ln.get_marker() not in ("None", "none", "", " ", None)]
            filled: dict[str, list] = {}
            for ln in lines:
                if str(ln.get_markerfacecolor()).lower() != "none":
                    filled.setdefault(to_hex(ln.get_color()), []).append(ln)
            for ln in lines:
                if str(ln.get_markerfacecolor()).lower() != "none" or ln.get_linestyle() not in ("None", "none"):
                    continue
                under = filled.get(to_hex(ln.get_color()), [])
                if any(ln.get_markersize() <= f.get_markersize() or ln.get_zorder() < f.get_zorder() for f in under):
                    problems.append(f"{name_of(n, ax)}: '{ln.get_label()}' (size {ln.get_markersize()}, z "
                                    f"{ln.get_zorder()}) no larger than, or below, a filled marker of its colour")
    assert not problems, f"{len(problems)} hollow markers that a filled one can cover:\n" + "\n".join(problems)
