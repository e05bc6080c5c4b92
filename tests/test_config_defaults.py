"""params.yaml is the one source of every default (issue #16 item 1).

The config dataclasses keep defaults (tests and notebooks build small configs from a few keys), so
each default must equal the value params.yaml gives it; a default that drifts from params.yaml fails
here, naming the field. Every field also carries a one-line comment where it is defined.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path

import pytest
import yaml

from reasonrl.config import from_dict
from reasonrl.evaluate import EvalConfig
from reasonrl.model import ModelConfig
from reasonrl.pipeline import EvalSetConfig
from reasonrl.pretrain import BaseConfig, Exposure, PhaseConfig
from reasonrl.rl.job import Job, choices
from reasonrl.verifiers import VerifierConfig

PARAMS = yaml.safe_load((Path(__file__).resolve().parents[1] / "params.yaml").read_text())

# dataclass -> the params.yaml section whose values are its defaults
SOURCES = [
    (Job, "rl"),
    (ModelConfig, "bases.cot.model"),
    (PhaseConfig, "bases.cot.train"),
    (BaseConfig, "bases.cot"),
    (VerifierConfig, "verifiers.orm"),
    (EvalConfig, "eval"),
    (EvalSetConfig, "data.hop.in"),
    (Exposure, "bases.cot.train.exposure"),
]
# a base must say whether it starts fresh (a model shape) or continues a checkpoint (init): no bare default
DEFAULT_ARGS = {BaseConfig: {"model": ModelConfig()}}
# fields params.yaml does not set, or sets differently per entry, with the reason
NOT_IN_PARAMS = {
    (ModelConfig, "vocab_size"): "fixed by the task's alphabet",
    (ModelConfig, "task"): "set from the base's `task:` beside the model",
    (BaseConfig, "init"): "only a continued phase (mixed.phase2.*) names the checkpoint it continues",
    (BaseConfig, "model"): "a fresh base names its shape; a continued phase takes its checkpoint's (default: none)",
}


def _section(dotted: str) -> dict:
    node = PARAMS
    for part in dotted.split("."):
        node = node[part]
    return node


@pytest.mark.parametrize("cls,path", SOURCES, ids=[c.__name__ for c, _ in SOURCES])
def test_every_dataclass_default_equals_params_yaml(cls, path):
    section = _section(path)
    from_params, default = from_dict(cls, section, path), cls(**DEFAULT_ARGS.get(cls, {}))
    for f in dataclasses.fields(cls):
        if (cls, f.name) in NOT_IN_PARAMS:
            continue
        assert f.name in section, f"{path}.{f.name} is missing from params.yaml"
        assert getattr(default, f.name) == getattr(from_params, f.name), (
            f"{cls.__name__}.{f.name} defaults to {getattr(default, f.name)!r}, params.yaml {path}.{f.name} "
            f"says {getattr(from_params, f.name)!r}")


@pytest.mark.parametrize("cls", [c for c, _ in SOURCES], ids=lambda c: c.__name__)
def test_every_config_field_has_a_comment(cls):
    source = inspect.getsource(cls)
    for f in dataclasses.fields(cls):
        line = re.search(rf"^\s+{f.name}: .*$", source, re.M)
        assert line and "#" in line.group(0), f"{cls.__name__}.{f.name} has no comment where it is defined"


def test_job_choices_are_the_registries_themselves():
    from reasonrl.rl.variants import ADVANTAGES, KL_ESTIMATORS, LOSS_AGG, METHODS, REWARDS

    c = choices()
    assert c["method"] is METHODS and c["reward"] is REWARDS and c["advantage"] is ADVANTAGES
    assert c["loss_agg"] is LOSS_AGG and c["kl_estimator"] is KL_ESTIMATORS
    # no repeated list of variant names: the job module names none of them as a type
    assert "Literal[" not in inspect.getsource(inspect.getmodule(Job))


def test_a_new_registry_entry_is_a_valid_choice(monkeypatch):
    from reasonrl.config import ConfigError
    from reasonrl.rl.variants import ADVANTAGES

    with pytest.raises(ConfigError, match="run.advantage: 'half'"):
        from_dict(Job, {"advantage": "half"}, "run")
    monkeypatch.setitem(ADVANTAGES, "half", lambda r: (r - r.mean(dim=1, keepdim=True)) / 2)
    assert from_dict(Job, {"advantage": "half"}, "run").advantage == "half"
