"""Stage `rl@<run>` (and rl_orm@, rl_prm@, rl_headline): train one RL run from params.

    python stages/rl.py <group> <name>     # group: runs, runs_orm, runs_prm, or headline

A run is the `rl:` defaults overridden by runs.<group>.<name>; the headline run is the defaults with
the top-level `method`. Every run entry names its `init` so that dvc.yaml can depend on it.
"""

import sys

from reasonrl.pipeline import read_problems, stage_setup
from reasonrl.rl.job import job_for
from reasonrl.rl.run import run_job, write_outputs

params, device, _ = stage_setup()
group, name = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else None)
job, where = job_for(params, group, name)
name = name or "headline"
sets = {"n12": read_problems("data/n12.jsonl"), "think": read_problems("data/think.jsonl")}
verifier = f"models/verifier_{job.verifier}.pt" if job.verifier else None
policy, hist = run_job(job, f"models/{job.init}.pt", verifier, sets, device, where=where)
write_outputs(policy, job, hist, f"models/rl_{name}.pt", f"reports/rl/{name}.csv", f"reports/rl/{name}.json")
