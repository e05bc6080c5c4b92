"""Stage `rl@<run>` (and rl_orm@, rl_prm@, rl_headline@): train one RL run from params.

    python stages/rl.py <group> <name>     # group: runs, runs_noeval, runs_orm, runs_prm, or headline

A run is the `rl:` defaults overridden by <group>.<name>; a headline run also takes the top-level
`method`. Every entry names its `init` so that dvc.yaml can depend on it. Study runs write under
reports/rl/<task>/ (a study report reads the folders of its runs' tasks), headline runs under
reports/headline/rl/, so a changed `method` reaches no study.
"""

from reasonrl.pipeline import data_path, read_problems
from reasonrl.rl.job import GREEDY_EVALS, job_for
from reasonrl.rl.run import run_job, timing, write_outputs
from reasonrl.runtime import stage_args, stage_setup, write_timing

OUT = {"headline": "reports/headline/rl"}  # every other group: reports/rl/<task>

params, device, _ = stage_setup()
group, name = stage_args("<group> <name>")
job, where = job_for(params, group, name)  # every check of a run, before any work
sets = {role: read_problems(data_path(job.task, role)) for role in (*GREEDY_EVALS, "think")}
verifier = f"models/verifier_{job.verifier}.pt" if job.verifier else None
policy, hist = run_job(job, f"models/{job.init}.pt", verifier, sets, device, where=where)
out = OUT.get(group, f"reports/rl/{job.task}")
write_outputs(policy, job, hist, f"models/rl_{name}.pt", f"{out}/{name}.csv", f"{out}/{name}.json")
write_timing(f"reports/timing/rl_{name}.json", timing(hist))
