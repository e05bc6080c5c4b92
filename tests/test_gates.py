"""Run 2's gates as pre-registered in params (studies.gates) and scripts/gates.py's verdict line."""

import importlib.util
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
