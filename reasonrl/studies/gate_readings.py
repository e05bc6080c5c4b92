"""Run 2's gates read again on the run's own outputs (issue 70, item 4).

A gate is fixed and measured on validation side runs before the run (`scripts/gates.py`, params `studies.gates`).
Where the run's outputs hold the same quantity, it is read again there: a gate that passed before the run and
fails in it keeps its row in the family at p = 1 (`gatekeeping.judge`), so a mechanism that vanished on the test
sets cannot be credited. Each reader is one small function of the row that names the gate, the gate's spec and the
run's files; a gate with no reader (or a row it took out before the run) has no reading in the run.

- `shao_base`: the greedy verified accuracy on the test `edge` set of the base the row names (`Row.base`), from
  the base stage's metrics (`reports/metrics/base_<base>.json`), where the side runs read val_edge.
- `exposure_foothold`: how many of the row's bases (its passk `base` arm) have a foothold on the row's set:
  verified pass@1 at most `pass1` and pass@k (the row's k) at least `top_k`, from their passk counts.
- `chain_corruption`: per base, the corrupted share at pass@1 on the row's set (the answer right and the trace
  wrong: answer-only minus verified counts, over N) of the answer-only arm (the row's `base` arm, an RL arm) minus
  that of the base checkpoint its run started from; the mean over bases. The base checkpoint is read from the passk
  model of its first draw (the base arm's, which samples every set).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from ..io import read_json
from ..metrics import pass_at_k
from . import passk, passk_data_path
from .gatekeeping import GateSpec, foothold
from .primaries import Row, started_from

Reader = Callable[[Row, GateSpec, Mapping, Path], float]


def base_metrics_path(base: str) -> str:
    return f"reports/metrics/base_{base}.json"


def _data(root: Path, model: str) -> dict:
    return read_json(root / passk_data_path(model))


def _pass_at(data: dict, set_name: str, k: int) -> float:
    counts = data["sets"][set_name]["counts"]
    return float(np.mean([pass_at_k(data["N"], c, k) for c in counts]))


def _corrupted(data: dict, set_name: str) -> float:
    s = data["sets"][set_name]
    return float(np.mean(np.subtract(s["counts_answer"], s["counts"]))) / data["N"]


def shao_base(row: Row, spec: GateSpec, params: Mapping, root: Path) -> float:
    return float(read_json(root / base_metrics_path(row.base))["edge"]["acc"])


def exposure_foothold(row: Row, spec: GateSpec, params: Mapping, root: Path) -> float:
    cfg = passk.load_config(params)
    held = 0
    for model in cfg.arms[row.base]:
        data = _data(root, model)
        held += foothold(spec, _pass_at(data, row.set, 1), _pass_at(data, row.set, row.k))
    return float(held)


def chain_corruption(row: Row, spec: GateSpec, params: Mapping, root: Path) -> float:
    cfg = passk.load_config(params)
    sampled = {spec_.model: m for m, spec_ in cfg.models.items() if spec_.draw == 1}  # the curves' draw: every set
    rises = []
    for model in cfg.arms[row.base]:
        start = sampled[started_from(params, cfg.models[model].model)]
        rises.append(_corrupted(_data(root, model), row.set) - _corrupted(_data(root, start), row.set))
    return float(np.mean(rises))


READERS: dict[str, Reader] = {"shao_base": shao_base, "exposure_foothold": exposure_foothold,
                              "chain_corruption": chain_corruption}


def in_run(rows: Mapping[str, Row], specs: Mapping[str, GateSpec], params: Mapping, root: Path) -> dict[str, float]:
    """{gate: its reading in the run} for every gate with a reader that a row names and that passed before the run
    (a gate that failed before took its row out: nothing of it is read). Unrounded: the judgement compares these
    with their thresholds; the page and the metrics round them."""
    out: dict[str, float] = {}
    for row in rows.values():
        for name in row.gates:
            spec = specs[name]
            if name in READERS and name not in out and not spec.gate(name).failed_before:
                out[name] = READERS[name](row, spec, params, root)
    return out


def inputs(rows: Mapping[str, Row], specs: Mapping[str, GateSpec]) -> list[str]:
    """The files the readings read beyond the passk data: the base metrics of the rows whose gate is shao_base."""
    return sorted({base_metrics_path(r.base) for r in rows.values() for name in r.gates
                   if name == "shao_base" and not specs[name].gate(name).failed_before})
