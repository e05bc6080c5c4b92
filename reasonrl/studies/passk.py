"""Study `passk`: does RL widen or narrow pass@k? The base against each method's run, pass@k for k = 1…N
on several ring sizes beside the random-guess baseline, with distinct answers and sample entropy, and
where each method's curve crosses the base's."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from ..config import check, from_dict
from ..io import read_json, write_json
from .common import (
    Manifest,
    legend_below,
    manifest_path,
    md_table,
    palette,
    save_figure,
    study_metrics_path,
    write_markdown,
)

SECTION = "passk"
OUT = "reports/passk"
TIE = 1e-9  # differences of pass@k below this count as equal (no side of the base)


@dataclass
class Config:
    """The part of the `passk:` section the report reads (stage params passk.base, passk.models)."""

    base: str = "base"
    models: dict[str, str] = field(default_factory=dict)  # label -> checkpoint; only the labels are used

    def __post_init__(self):
        check(self.base in self.models, "base", f"{self.base!r} is not one of the models {list(self.models)}")


def load_config(params: dict) -> Config:
    section = params.get(SECTION) or {}
    return from_dict(Config, {k: section[k] for k in ("base", "models") if k in section}, SECTION)


def data_path(label: str) -> str:
    return f"reports/metrics/passk_{label}.json"


def inputs(cfg: Config) -> list[str]:
    return [data_path(label) for label in cfg.models]


def outputs(cfg: Config) -> list[str]:
    return [f"{OUT}/passk.png", f"{OUT}/diversity.png", f"{OUT}/table.md", manifest_path("passk"),
            study_metrics_path("passk")]


# ----------------------------------------------------------------------------- where curves cross

def crossings(ks: list[int], base: list[float], other: list[float]) -> list[tuple[int, int, str]]:
    """Each sign change of other − base: (last k on the old side, first k on the new side, "above → below"
    or "below → above"); points within TIE of the base are skipped."""
    side = [(k, 1 if o - b > TIE else -1) for k, b, o in zip(ks, base, other) if abs(o - b) > TIE]
    name = {1: "above", -1: "below"}
    return [(k0, k1, f"{name[s0]} → {name[s1]}") for (k0, s0), (k1, s1) in zip(side, side[1:]) if s0 != s1]


def describe_crossing(ks: list[int], base: list[float], other: list[float]) -> str:
    found = crossings(ks, base, other)
    if found:
        return "; ".join(f"crosses {d} between k = {k0} and k = {k1}" for k0, k1, d in found)
    diffs = [o - b for b, o in zip(base, other)]
    if all(abs(d) <= TIE for d in diffs):
        return "equal to the base at every k"
    return f"{'above' if max(diffs) > TIE else 'below'} the base at every k (no crossing)"


def first_crossing(ks: list[int], base: list[float], other: list[float]) -> int | None:
    found = crossings(ks, base, other)
    return found[0][1] if found else None


# ----------------------------------------------------------------------------- report

def curve(data: dict, set_name: str, key: str = "pass_at_k") -> tuple[list[int], list[float]]:
    d = data["sets"][set_name][key]
    return [int(k) for k in d], list(d.values())


def passk_figure(cfg: Config, data: dict[str, dict], sets: list[str], path: Path) -> None:
    colors = palette(cfg.models)
    fig, axes = plt.subplots(1, len(sets), figsize=(5.2 * len(sets), 4.4), squeeze=False)
    for ax, s in zip(axes[0], sets):
        for label in cfg.models:
            ks, ys = curve(data[label], s)
            style = {"color": "k", "lw": 2.2} if label == cfg.base else {"color": colors[label]}
            ax.plot(ks, ys, marker="o", ms=3, label=label, **style)
        ks, ys = curve(data[cfg.base], s, "random_baseline")
        ax.plot(ks, ys, color="gray", ls="--", label="random guess 1 − (1 − 1/n)^k")
        info = data[cfg.base]["sets"][s]
        ax.set_xscale("log", base=2)
        ax.set_xticks(ks, [str(k) for k in ks], minor=False)
        ax.minorticks_off()
        ax.set(title=f"{s}: ring size {', '.join(map(str, info['ring_sizes']))}, {info['problems']} problems",
               xlabel="k (samples per problem, log scale)", ylabel="pass@k (fraction of problems solved)",
               ylim=(0, 1.02))
        ax.grid(alpha=0.3)
    N = data[cfg.base]["N"]
    fig.suptitle(f"pass@k of the base and each method's run (unbiased estimator from N = {N} samples per problem)")
    legend_below(fig, axes[0][0])
    save_figure(fig, path)


def diversity_figure(cfg: Config, data: dict[str, dict], sets: list[str], path: Path) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    width = 0.8 / len(cfg.models)
    colors = palette(cfg.models) | {cfg.base: "k"}
    for ax, key, ylabel in ((axes[0], "distinct_answers", "distinct answers per problem (mean)"),
                            (axes[1], "entropy", "token entropy of own samples (nats)")):
        for i, label in enumerate(cfg.models):
            xs = [j + (i - (len(cfg.models) - 1) / 2) * width for j in range(len(sets))]
            ax.bar(xs, [data[label]["sets"][s][key] for s in sets], width, color=colors[label], label=label)
        ax.set_xticks(range(len(sets)), sets)
        ax.set(xlabel="test set", ylabel=ylabel, title=ylabel[0].upper() + ylabel[1:])
        ax.grid(alpha=0.3, axis="y")
    fig.suptitle(f"Diversity of {data[cfg.base]['N']} samples per problem at temperature 1")
    legend_below(fig, axes[0])
    save_figure(fig, path)


def table_rows(cfg: Config, data: dict[str, dict], sets: list[str]) -> list[dict]:
    rows = []
    for s in sets:
        ks, base = curve(data[cfg.base], s)
        for label in cfg.models:
            _, ys = curve(data[label], s)
            rows.append({"set": s, "model": label, "pass@1": ys[0], f"pass@{ks[-1]}": ys[-1],
                         "distinct answers": data[label]["sets"][s]["distinct_answers"],
                         "entropy (nats)": data[label]["sets"][s]["entropy"],
                         "curve vs base": "—" if label == cfg.base else describe_crossing(ks, base, ys)})
    return rows


def study_metrics(cfg: Config, data: dict[str, dict], sets: list[str]) -> dict:
    out = {}
    for label in cfg.models:
        out[label] = {}
        for s in sets:
            ks, ys = curve(data[label], s)
            _, base = curve(data[cfg.base], s)
            d = data[label]["sets"][s]
            out[label][s] = {"pass_at_1": ys[0], "pass_at_max": ys[-1], "k_max": ks[-1],
                             "distinct_answers": d["distinct_answers"], "entropy": d["entropy"]}
            if label != cfg.base:
                out[label][s]["first_crossing_k"] = first_crossing(ks, base, ys)
    return out


def report(cfg: Config, root: Path) -> None:
    data = {label: read_json(root / data_path(label)) for label in cfg.models}
    sets = list(data[cfg.base]["sets"])
    out = root / OUT
    passk_figure(cfg, data, sets, out / "passk.png")
    diversity_figure(cfg, data, sets, out / "diversity.png")
    rows = table_rows(cfg, data, sets)
    write_markdown(out / "table.md", "Study: pass@k of the base and of each method", answer(cfg, rows, sets), [
        md_table(pd.DataFrame(rows), "pass@k, diversity, and where each method's curve crosses the base's",
                 f"N = {data[cfg.base]['N']} samples per problem at temperature 1; pass@k is the unbiased estimator "
                 "averaged over problems. 'between k = a and k = b': the last k on the old side of the base's "
                 "curve and the first on the new side.")])
    write_json(root / study_metrics_path("passk"), study_metrics(cfg, data, sets))
    manifest(cfg, data, rows, sets).write(root)


def headline_set(sets: list[str]) -> str:
    return "n12" if "n12" in sets else sets[0]


def answer(cfg: Config, rows: list[dict], sets: list[str]) -> str:
    s = headline_set(sets)
    parts = [f"{r['model']} {r['curve vs base']}" for r in rows if r["set"] == s and r["model"] != cfg.base]
    return f"On {s}: " + "; ".join(parts) + "."


def manifest(cfg: Config, data: dict, rows: list[dict], sets: list[str]) -> Manifest:
    s = headline_set(sets)
    kmax = [k for k in rows[0] if k.startswith("pass@")][-1]  # the largest k's column
    at = ", ".join(f"{r['model']} {r['pass@1']:.2f} / {r[kmax]:.2f}" for r in rows if r["set"] == s)
    ent = ", ".join(f"{r['model']} {r['distinct answers']:.2f} / {r['entropy (nats)']:.2f}" for r in rows
                    if r["set"] == s)
    return Manifest(
        "passk", "pass@k: does RL widen or narrow what the model can solve?",
        "Does RL raise pass@1 at the cost of pass@k for large k, i.e. does the method's curve cross the base's?",
        answer(cfg, rows, sets), [f"{label}: models/{data[label]['model']}.pt" for label in cfg.models],
        [("passk/passk.png", f"pass@k against k (log scale) on {', '.join(sets)} beside the random-guess baseline; "
          f"pass@1 / {kmax} on {s}: {at}."),
         ("passk/diversity.png", f"Mean distinct answers per problem and token entropy of the samples; on {s} "
          f"(distinct / entropy): {ent}.")],
        ["passk/table.md"])
