"""Stage `rl@<run>` (and rl_orm@, rl_prm@, rl_headline@): train one RL run from params.

    python stages/rl.py <group> <name>     # group: runs, runs_orm, runs_prm, or headline

A run is the `rl:` defaults overridden by <group>.<name>; a headline run also takes the top-level
`method`. Every entry names its `init` so that dvc.yaml can depend on it. Study runs write under
reports/rl/ (the study reports read that folder), headline runs under reports/headline/rl/, so a
changed `method` reaches no study.
"""

import sys

from reasonrl.config import ConfigError
from reasonrl.io import write_json
from reasonrl.pipeline import read_problems, stage_setup
from reasonrl.rl.job import Job, make_job
from reasonrl.rl.run import run_job, write_outputs

GROUP_REWARDS = {"runs": ("true", "random"), "runs_orm": ("orm",), "runs_prm": ("prm_full",), "headline": ("true",)}
OUT = {"headline": "reports/headline/rl"}  # every other group: reports/rl


def job_of(params: dict, group: str, name: str) -> Job:
    """The job of run <group>.<name>, validated; tests/test_deps.py resolves every stage through it."""
    where = f"{group}.{name}"
    if group not in GROUP_REWARDS or name not in (params.get(group) or {}):
        raise ConfigError(f"{where}: no such run; defined in {group}: {sorted(params.get(group) or {})}")
    overrides = dict(params[group][name])
    if "init" not in overrides:
        raise ConfigError(f"{where}.init: required in every run (dvc.yaml depends on models/<init>.pt)")
    if group == "headline":
        overrides = {"method": params["method"], "eval": "n12", **overrides}
    job = make_job(params["rl"], overrides, where, verifiers=list(params.get("verifiers") or {}))
    if job.reward not in GROUP_REWARDS[group]:
        raise ConfigError(f"{where}.reward: {job.reward!r} is not allowed in {group} (allowed: "
                          f"{GROUP_REWARDS[group]}); a verifier reward belongs in the group whose stage depends "
                          "on that verifier")
    return job


if __name__ == "__main__":
    group, name = sys.argv[1], sys.argv[2]
    params, device = stage_setup()
    job = job_of(params, group, name)
    sets = {"n12": read_problems("data/n12.jsonl"), "think": read_problems("data/think.jsonl")}
    verifier = f"models/verifier_{job.verifier}.pt" if job.verifier else None
    policy, hist = run_job(job, f"models/{job.init}.pt", verifier, sets, device)
    out = OUT.get(group, "reports/rl")
    write_outputs(policy, job, hist, f"models/rl_{name}.pt", f"{out}/{name}.csv", f"{out}/{name}.json")
    write_json(f"reports/timing/rl_{name}.json", {"seconds": round(hist["seconds"], 2),
                                                  "steps_per_second": round(job.steps / hist["seconds"], 3)})
