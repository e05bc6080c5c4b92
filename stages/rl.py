"""Stage `rl@<run>` (and rl_orm@, rl_prm@, rl_headline): train one RL run from params.

    python stages/rl.py <group> <name>     # group: runs, runs_orm, runs_prm, or headline

A run is the `rl:` defaults overridden by runs.<group>.<name>; the headline run is the defaults with
the top-level `method`. Every run entry names its `init` so that dvc.yaml can depend on it.
"""

import sys

from reasonrl.config import ConfigError
from reasonrl.pipeline import read_problems, stage_setup
from reasonrl.rl.job import make_job
from reasonrl.rl.run import run_job, write_outputs

GROUP_REWARDS = {"runs": ("true", "random"), "runs_orm": ("orm",), "runs_prm": ("prm_full",), "headline": ("true",)}

group, name = sys.argv[1], sys.argv[2]
params, device = stage_setup()
if group == "headline":
    overrides, where = {"method": params["method"], "eval": "n12"}, "rl"
else:
    overrides, where = params[group][name], f"{group}.{name}"
    if "init" not in overrides:
        raise ConfigError(f"{where}.init: required in every run (dvc.yaml depends on models/<init>.pt)")
job = make_job(params["rl"], overrides, where, verifiers=list(params.get("verifiers") or {}))
if job.reward not in GROUP_REWARDS[group]:
    raise ConfigError(f"{where}.reward: {job.reward!r} is not allowed in {group} (allowed: {GROUP_REWARDS[group]});"
                      " a verifier reward belongs in the group whose stage depends on that verifier")
sets = {"n12": read_problems("data/n12.jsonl"), "think": read_problems("data/think.jsonl")}
verifier = f"models/verifier_{job.verifier}.pt" if job.verifier else None
policy, hist = run_job(job, f"models/{job.init}.pt", verifier, sets, device)
write_outputs(policy, job, hist, f"models/rl_{name}.pt", f"reports/rl/{name}.csv", f"reports/rl/{name}.json")
