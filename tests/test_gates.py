"""Run 2's gates as pre-registered in params (studies.gates) and scripts/gates.py's verdict line."""

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest

from reasonrl.config import ConfigError, load_params
from reasonrl.studies.gatekeeping import GateSpec, gate_specs

ROOT = Path(__file__).resolve().parents[1]


def gates_script():
    spec = importlib.util.spec_from_file_location("gates_script", ROOT / "scripts" / "gates.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(ROOT / "scripts"))
    spec.loader.exec_module(module)
    return module


def test_committed_gates_load():
    specs = gate_specs(load_params(ROOT / "params.yaml"))
    assert {"shao_base", "crossing_arm", "clip_regime", "exposure_foothold", "drgrpo_room"} <= set(specs)
    assert specs["shao_base"].threshold == 0.5 and specs["crossing_arm"].ceiling == 0.95


@pytest.mark.parametrize("spec, key", [({"threshold": 1, "what": "x", "ceil": 0.9}, "studies.gates.g.ceil"),
                                       ({"threshold": 1, "what": "x", "top_k": 1.5}, "top_k"),
                                       ({"threshold": 1, "what": " "}, "what")])
def test_bad_gate_names_its_key(spec, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        gate_specs({"studies": {"gates": {"g": spec}}})


def test_gate_reads_measured_value_and_direction():
    above = GateSpec(threshold=0.5, what="acc", measured=0.62)
    assert not above.gate("shao_base").failed_before
    below = GateSpec(threshold=0.5, what="acc", measured=0.25)
    assert below.gate("shao_base").failed_before
    assert below.gate("shao_base").text(0.25) == "shao_base measured 0.25, needs ≥ 0.5"
    at_most = GateSpec(threshold=0.1, what="share", at_least=False, measured=0.2)
    assert at_most.gate("g").failed_before
    with pytest.raises(ConfigError, match="not measured"):
        GateSpec(threshold=0.5, what="acc").gate("shao_base")


def test_script_verdict_line():
    g = gates_script()
    specs = {"shao_base": GateSpec(threshold=0.5, what="acc")}
    assert g.verdict("shao_base", 0.62, specs) == {"gate": "shao_base", "value": 0.62, "threshold": 0.5,
                                                   "at_least": True, "passes": True}
    assert g.verdict("shao_base", 0.49, specs)["passes"] is False
    assert g.verdict("other", 3, specs) == {"gate": "other", "value": 3, "threshold": None, "passes": None}


def test_corrupted_share_is_answer_minus_verified_pass1():
    g = gates_script()
    # val_curve.curve's shape after JSON (string k) and in memory (integer k): 0.71 answer-right, 0.52 verified
    assert g.corrupted({"pass_at_k": {"1": 0.52, "2": 0.7}, "pass_at_k_answer": {"1": 0.71, "2": 0.8}}) == 0.19
    assert g.corrupted({"pass_at_k": {1: 0.3}, "pass_at_k_answer": {1: 0.3}}) == 0.0
    assert g.CHAIN_EDGE == {"n_range": [8, 9], "k_min": 7, "k_max": 7}  # runs_noeval.chainedge_edge_*'s cell


def validation_power():
    spec = importlib.util.spec_from_file_location("validation_power", ROOT / "scripts" / "validation_power.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_sign_test_counts_and_power():
    v = validation_power()
    assert (v.needed(5), v.needed(6), v.needed(8), v.needed(9), v.needed(10)) == (None, 6, 8, 8, 9)
    assert v.at_least([0.9, 0.8], 2) == pytest.approx(0.72)
    assert v.at_least([0.9, 0.8], 1) == pytest.approx(0.98)
    assert v.at_least([0.9, 0.8, 0.5], 2) == pytest.approx(0.9 * 0.8 + 0.1 * 0.8 * 0.5 + 0.9 * 0.2 * 0.5)


def test_validation_split_by_hand(tmp_path):
    v = validation_power()
    lines = [{"base": "a", "model": "base_a", "pass_at_k": {"1": 0.5}},
             {"base": "a", "model": "rl", "arm": {"seed": 1}, "pass_at_k": {"1": 0.75}},
             {"base": "a", "model": "rl", "arm": {"seed": 2}, "pass_at_k": {"1": 0.875}},
             {"base": "a", "model": "rl", "arm": {"seed": 2}, "pass_at_k": {"1": 0.875}},  # a rerun: counted once
             {"base": "b", "model": "base_b", "pass_at_k": {"1": 0.75}},
             {"base": "b", "model": "rl", "arm": {"seed": 1}, "pass_at_k": {"1": 0.875}},
             {"base": "b", "model": "rl", "arm": {"seed": 2}, "pass_at_k": {"1": 0.9375}},
             {"base": "b", "above_at_1_and_below_ceiling": True},
             {"base": "c", "model": "base_c", "pass_at_k": {"1": 0.95}},  # above the band: not a base of the run
             {"base": "c", "model": "rl", "arm": {"seed": 1}, "pass_at_k": {"1": 0.99}}]
    path = tmp_path / "lines.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    data = v.read_lines([str(path)], (0.05, 0.9))
    assert sorted(data) == ["a", "b"] and len(data["a"]["rl"]) == 2
    # with P = 3 validation problems e = (3 (1 - p) + 0.5) / 4: a 0.5 -> 0.5; 0.75 -> 0.3125; 0.875 -> 0.21875;
    # b 0.75 -> 0.3125; 0.875 -> 0.21875; 0.9375 -> 0.171875
    a = [math.log(0.5 / 0.3125), math.log(0.5 / 0.21875)]
    b = [math.log(0.3125 / 0.21875), math.log(0.3125 / 0.171875)]
    r = v.row(data, 1, bases=8, seeds=2, problems=248, power_for=math.log(2), P=3)
    within = math.sqrt(((a[0] - a[1]) ** 2 + (b[0] - b[1]) ** 2) / 2 / 2)
    assert r["within_sd"] == pytest.approx(within) and r["within_df"] == 2
    means = [sum(a) / 2, sum(b) / 2]
    between = math.sqrt(max((means[0] - means[1]) ** 2 / 2 - within ** 2 / 2, 0))
    assert r["between_sd"] == pytest.approx(between) and r["positive"] == 2 and r["mean"] == pytest.approx(
        sum(means) / 2)
    assert r["sign"]["needed"] is None  # two bases cannot reach 0.025 one-sided
