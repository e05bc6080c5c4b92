"""Validation of a pipeline run in one place (`rl.job.job_for`), in process: the fast twin of the
stage-level table in test_errors.py."""

from __future__ import annotations

import pytest

from reasonrl.config import ConfigError
from reasonrl.rl.job import job_for, make_job
from reasonrl.rl.run import check_init_fits
from reasonrl.tasks.hop import make_eval_set

PARAMS = {
    "method": "rft",
    "rl": {"init": "base_cot", "method": "grpo", "steps": 7, "lr": 1.0e-4},
    "verifiers": {"orm": {}},
    "runs": {"a": {"task": "hop", "init": "base_x", "seed": 3},
             "b": {"task": "hop", "init": "base_x", "method": "sft"}},
    "runs_noeval": {"z": {"task": "hop", "init": "base_x", "eval": "think"}},
    "runs_orm": {"o": {"task": "hop", "init": "base_x", "reward": "orm"}},
    "runs_prm": {"p": {"task": "hop", "init": "base_x", "reward": "prm_full"}},
    "headline": {"h": {"task": "hop", "init": "base_x", "seed": 100}},
}


def _params(**changes) -> dict:
    p = {k: (dict(v) if isinstance(v, dict) else v) for k, v in PARAMS.items()}
    for dotted, value in changes.items():
        *path, last = dotted.split("__")
        node = p
        for part in path:
            child = dict(node[part])
            node[part] = child
            node = child
        node[last] = value
    return p


def test_a_run_is_the_defaults_overridden_and_the_headline_takes_the_top_level_method():
    job, where = job_for(_params(), "runs", "a")
    assert (job.init, job.method, job.seed, job.steps, where) == ("base_x", "grpo", 3, 7, "runs.a")
    job, where = job_for(_params(), "headline", "h")
    assert (job.method, job.eval, job.seed, where) == ("rft", "val_edge", 100, "headline.h")
    assert job_for(_params(), "runs_orm", "o")[0].verifier == "orm"
    assert job_for(_params(), "runs_noeval", "z")[0].eval == "think"  # the zero study's group: no eval@ stage
    # a study run does not read the headline's method, so `-S method=...` cannot touch it
    assert job_for(_params(method="ppo"), "runs", "a")[0].method == "grpo"


@pytest.mark.parametrize("group,name,changes,message", [
    ("runs", "b", {"rl__method": "ppo"}, r"^rl\.method: 'ppo' is not one of"),  # b overrides it; still caught
    ("headline", "h", {"method": "ppo"}, r"^method: 'ppo'"),
    ("headline", "h", {"method": "grp"}, r"^method: 'grp' .*did you mean 'grpo'"),
    ("headline", "h", {"headline__h": {"task": "hop", "init": "base_x", "method": "sft"}},
     r"^headline\.h\.method: headline runs"),
    ("headline", "h", {"method": "grpo", "headline__h": {"task": "hop", "init": "base_x", "reward": "orm"}},
     r"^headline\.h\.reward: 'orm' is not allowed in headline"),
    ("runs", "nosuch", {}, r"^runs\.nosuch: no such run \(defined runs in runs: a, b\)"),
    ("rums", "a", {}, r"^rums: not a run group \(did you mean 'runs'\?"),
    ("runs", "a", {"runs__a": {"task": "hop", "seed": 1}}, r"^runs\.a\.init: required in every run"),
    ("runs", "a", {"runs__a": {"task": "hop", "init": "base_x", "reward": "orm"}},
     r"^runs\.a\.reward: 'orm' is not allowed in runs \(move the run to runs_orm"),
    ("runs_orm", "o", {"runs_orm__o": {"task": "hop", "init": "base_x", "reward": "true"}},
     r"^runs_orm\.o\.reward: 'true' is not allowed in runs_orm \(move the run to runs or runs_noeval"),
    ("runs_noeval", "z", {"runs_noeval__z": {"task": "hop", "init": "base_x", "reward": "orm"}},
     r"^runs_noeval\.z\.reward: 'orm' is not allowed in runs_noeval \(move the run to runs_orm"),
    ("runs_prm", "p", {"verifiers": {"orm": {}}}, r"^runs_prm\.p\.reward: verifier 'prm_full' is not defined"),
    ("runs_orm", "o", {"rl__reward": "orm", "runs_orm__o": {"task": "hop", "init": "base_x"}},
     r"^runs_orm\.o\.reward: required in every run of runs_orm \(dvc\.yaml depends on models/verifier_<reward>\.pt: "
     r"write reward: orm\)"),
    ("runs", "a", {"runs__a": {"init": "base_x"}}, r"^runs\.a\.task: required in every run \(dvc\.yaml reads"),
    ("runs", "a", {"runs__a": {"task": "hops", "init": "base_x"}}, r"^runs\.a\.task: unknown task 'hops' \(did you "
                                                                    r"mean 'hop'\?"),
    ("runs", "a", {"rl__lr": -1.0}, r"^rl\.lr: must be positive"),  # named where it was set, not under the run
    ("runs", "a", {"runs__a": {"task": "hop", "init": "base_x", "lr": -1.0}}, r"^runs\.a\.lr: must be positive"),
])
def test_every_rule_of_a_run_names_its_key(group, name, changes, message):
    with pytest.raises(ConfigError, match=message):
        job_for(_params(**changes), group, name)


def test_std_norm_is_gone_advantage_says_it():
    with pytest.raises(ConfigError, match=r"run\.std_norm: unknown key"):
        make_job({}, {"std_norm": False}, "run")
    assert make_job({}, {"advantage": "dr_grpo"}).advantage == "dr_grpo"


def test_a_start_model_too_short_for_the_run_is_caught_before_training():
    job = make_job({}, {"n_range": [4, 12], "k_max": 7})  # longest: 51-character prompt + 7 + 5
    check_init_fits(job, 63, "models/base_x.pt", {}, "runs.a")
    with pytest.raises(ConfigError, match=r"^runs\.a\.init: models/base_x\.pt has max_len 62, shorter than the "
                                          r"longest prompt \+ response of this run \(63\)"):
        check_init_fits(job, 62, "models/base_x.pt", {}, "runs.a")
    # the in-training evaluation set counts too: n = 16 prompts are longer than any training prompt
    evaluated = make_job({}, {"n_range": [4, 12], "k_max": 7, "eval": "val_edge"})
    sets = {"val_edge": make_eval_set(16, 6, 2, 0)}
    with pytest.raises(ConfigError, match=r"\(78\)"):
        check_init_fits(evaluated, 70, "models/base_x.pt", sets, "rl")
