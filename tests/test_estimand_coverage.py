"""The coverage of reasonrl.estimands' intervals on simulated run-2 designs with three levels (bases, RL seeds,
problems; reasonrl.coverage.ThreeLevel): the truth by quadrature, a quick run of the simulation, and the committed
output of `python scripts/interval_coverage.py --estimands --datasets 4000 --out docs/coverage/estimands.json`
held to its bounds and rerun in part."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from reasonrl import estimands as E
from reasonrl.coverage import ThreeLevel, estimand_coverage

ROOT = Path(__file__).resolve().parents[1]

COVERAGE = ROOT / "docs" / "coverage" / "estimands.json"


def test_simulated_truth_by_quadrature():
    d = ThreeLevel(start=0.0, base_sd=1e-6, seed_sd=1e-6, interaction_sd=0.0, effect=0.0, difficulty_sd=1e-6)
    assert d.error(0.0) == pytest.approx(0.5) and d.truth(E.RAW) == pytest.approx(0.0, abs=1e-9)
    # a base at logit 0 and RL at logit 1, no spread: raw gain sigmoid(1) - 0.5 = 0.231059
    d = ThreeLevel(start=0.0, base_sd=1e-6, seed_sd=1e-6, interaction_sd=0.0, effect=1.0, difficulty_sd=1e-6)
    assert d.truth(E.RAW) == pytest.approx(0.231059, abs=1e-5)
    e_rl = 1 - 1 / (1 + math.exp(-1))
    assert d.truth(E.LOG_ERROR_RATIO) == pytest.approx(math.log((124 + 0.5) / (248 * e_rl + 0.5)), abs=1e-5)
    # with spread (RL's shift varying over problems, sd 1.5): Monte Carlo over abilities, seeds and problems agrees
    # within 0.003 (its own sd about 0.0006); without the interaction the truth would be 0.02 larger
    d = ThreeLevel(start=1.0, effect=2.0, interaction_sd=1.5)
    rng = np.random.default_rng(0)
    a, u = rng.normal(1.0, 1.0, 400_000), rng.normal(0, 0.5, 400_000)
    z_b, z_r = rng.normal(0, 1.5, 400_000), rng.normal(0, 1.5, 400_000) + rng.normal(0, 1.5, 400_000)
    gain_mc = np.mean(1 / (1 + np.exp(a + z_b))) - np.mean(1 / (1 + np.exp(a + 2.0 + u + z_r)))  # e_base - e_RL
    assert d.truth(E.RAW) == pytest.approx(gain_mc, abs=0.003)
    assert ThreeLevel(start=1.0, effect=2.0, interaction_sd=0.0).truth(E.RAW) > d.truth(E.RAW) + 0.01


def test_three_level_coverage_small():
    # a quick run of the simulation itself (200 datasets of a cross-base design of 5 bases, mid start)
    r = estimand_coverage(ThreeLevel(units=5, start=0.0), 200, seed=0)
    assert set(r) == set(E.SCALES)
    for row in r.values():
        assert 0.9 <= row["coverage"] <= 1.0 and row["miss_low"] + row["miss_high"] + row["coverage"] == 1.0


def test_committed_coverage_holds_its_bounds():
    # scripts/interval_coverage.py --estimands --datasets 4000 --out docs/coverage/estimands.json
    data = json.loads(COVERAGE.read_text())
    rows = data["rows"]
    assert "--estimands" in data["command"] and all(r["datasets"] >= 4000 for r in rows)
    # the levels of issue 70: cross-base and single-base, 3 to 10 units, bases near 0, mid and near 1, both scales
    assert {(r["design"]["single"], r["design"]["units"], r["start_label"], r["scale"]) for r in rows} == {
        (s, u, label, scale) for s in (False, True) for u in (3, 5, 10) for label in ("near 0", "mid", "near 1")
        for scale in E.SCALES}
    assert all(r["design"]["problems"] == 248 and r["design"]["seeds"] >= 2 for r in rows)
    log = [r for r in rows if r["scale"] == E.LOG_ERROR_RATIO]
    for r in log:
        where = f"{r['design']} {r['scale']}"
        assert 0.93 <= r["coverage"] <= 0.995, where
        # the tail a claim that RL raises accuracy tests: the lower bound above the truth, nominal 2.5%
        assert r["miss_low"] <= 0.035, where
        # the other tail (a claim that RL lowers it, or "contradicted"): within 3.5% for cross-base designs whose
        # bases do not start near 0; up to 6% elsewhere, where the per-unit values are right-skewed (near 0 the log
        # error ratio is the raw gain, and a seed's accuracy there is lognormal-like): docs/studies.md says so
        near_0_or_single = r["start_label"] == "near 0" or r["design"]["single"]
        assert r["miss_high"] <= (0.06 if near_0_or_single else 0.035), where
        # without the problem term (per-unit summaries) some design misses more than 5% in a tail
    assert max(max(r["nopt_miss_low"], r["nopt_miss_high"]) for r in log) > 0.05
    # the raw gain, printed beside: skewed near 1 (the bases' errors), its interval is a description, not a test
    for r in rows:
        assert r["coverage"] >= 0.90 and max(r["miss_low"], r["miss_high"]) <= 0.09, r
        if r["design"]["effect"] == 0:  # the exact sign test at 2.5%, where nothing changes: within its level
            assert max(r["sign_up"], r["sign_down"]) <= 0.035, r


def test_committed_coverage_is_this_code():
    # the committed row of the smallest design reruns to the same shares (same seed, same datasets)
    data = json.loads(COVERAGE.read_text())
    row = next(r for r in data["rows"] if r["design"]["units"] == 3 and not r["design"]["single"])
    d = ThreeLevel(**row["design"])
    rerun = estimand_coverage(d, row["datasets"], seed=row["seed"])[row["scale"]]
    assert {k: rerun[k] for k in ("coverage", "miss_low", "miss_high")} == pytest.approx(
        {k: row[k] for k in ("coverage", "miss_low", "miss_high")}, abs=1e-12)
