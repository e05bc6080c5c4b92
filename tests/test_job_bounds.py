"""Every bound of the RL job's validation, on both sides (the survivors of the first mutation run).

Each invalid value must fail before any work, with the exact message that names the key; each value on
the valid side of the same bound must be accepted.
"""

from __future__ import annotations

import pytest

from reasonrl.config import ConfigError
from reasonrl.rl.job import make_job

VALID = [
    {"n_range": [2, 2], "k_max": 1}, {"n_range": [16, 16], "k_max": 9}, {"n_range": [4, 5], "k_max": 4},
    {"G": 2, "B": 1}, {"method": "sft", "G": 1}, {"steps": 1}, {"lr": 1e-12}, {"num_iterations": 1},
    {"eps_low": 0.0}, {"eps_low": 0.999}, {"eps_high": 0.0}, {"beta": 0.0}, {"len_pen": 0.0}, {"overlong": 0},
    {"temperature": 1e-6}, {"eval_every": 1}, {"max_resample": 0},
]

INVALID = [
    ({"n_range": [1, 4], "k_max": 2}, "n_range: need 2 <= lo <= hi <= 16, got [1, 4]"),
    ({"n_range": [2, 17]}, "n_range: need 2 <= lo <= hi <= 16, got [2, 17]"),
    ({"n_range": [5, 4], "k_max": 2}, "n_range: need 2 <= lo <= hi <= 16, got [5, 4]"),
    ({"k_max": 0}, "k_max: must be in [1, 9] (the most the largest size 16 allows), got 0"),
    ({"n_range": [4, 5], "k_max": 5}, "k_max: must be in [1, 4] (the most the largest size 5 allows), got 5"),
    ({"n_range": [4, 16], "k_max": 10}, "k_max: must be in [1, 9] (the most the largest size 16 allows), got 10"),
    ({"B": 0}, "B: must be at least 1, got 0"),
    ({"method": "sft", "G": 0}, "G: must be at least 1, got 0"),
    ({"G": 1}, "G: must be at least 2 for group advantages, got 1"),
    ({"steps": 0}, "steps: must be at least 1, got 0"),
    ({"lr": 0.0}, "lr: must be positive, got 0.0"),
    ({"num_iterations": 0}, "num_iterations: must be at least 1, got 0"),
    ({"eps_low": 1.0}, "eps_low: must be in [0, 1), got 1.0"),
    ({"eps_low": -0.1}, "eps_low: must be in [0, 1), got -0.1"),
    ({"eps_high": -0.1}, "eps_high: must be >= 0, got -0.1"),
    ({"beta": -0.5}, "beta: must be >= 0, got -0.5"),
    ({"len_pen": -0.5}, "len_pen: must be >= 0, got -0.5"),
    ({"overlong": -1}, "overlong: must be >= 0, got -1"),
    ({"temperature": 0.0}, "temperature: must be positive for sampling, got 0.0"),
    ({"eval_every": 0}, "eval_every: must be at least 1, got 0"),
    ({"max_resample": -1}, "max_resample: must be >= 0, got -1"),
    ({"method": "sft", "reward": "random"}, "reward: sft trains on correct/gold answers and uses the true reward only"),
]


@pytest.mark.parametrize("overrides", VALID)
def test_values_on_the_valid_side_are_accepted(overrides):
    job = make_job({}, overrides)
    for k, v in overrides.items():
        assert getattr(job, k) == (tuple(v) if isinstance(v, list) else v)


@pytest.mark.parametrize("overrides,message", INVALID)
def test_values_past_each_bound_are_rejected_naming_the_key(overrides, message):
    with pytest.raises(ConfigError) as err:
        make_job({}, overrides)
    assert str(err.value) == f"run.{message}"


def test_where_prefixes_the_message():
    with pytest.raises(ConfigError, match=r"^runs\.x\.steps: must be at least 1"):
        make_job({}, {"steps": 0}, "runs.x")
    assert make_job({"steps": 7}, None).steps == 7 and make_job(None, {"steps": 8}).steps == 8
