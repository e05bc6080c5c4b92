"""Stage `plots`: the study plots' data for `dvc plots show` -> reports/plots/<study>.csv, one row per
(run, step), from each run's history and in-training evaluations under reports/rl/<task>/. A study's runs are
the names in its section of `studies` that are RL runs of params (its params are `studies` only, so a
changed run reaches this stage through its outputs, not its params; dvc.yaml lists the task folders they
sit in)."""

import csv
import time

from reasonrl.io import read_json, write_text
from reasonrl.plotdata import STUDY_PLOTS, study_csv, study_runs
from reasonrl.runtime import stage_setup, write_timing
from reasonrl.studies.paths import STUDY_RUN_GROUPS, checkpoint_tasks, history_path, summary_path


def read(run: str) -> tuple[list[dict], list[dict]]:
    task = tasks[f"rl_{run}"]
    with open(history_path(run, task=task)) as f:
        history = list(csv.DictReader(f))
    return history, read_json(summary_path(run, task=task))["evals"]


t0 = time.perf_counter()
params, _, _ = stage_setup()
tasks = checkpoint_tasks(params)
defined = [run for group in STUDY_RUN_GROUPS for run in params.get(group) or {}]
for study, plot in STUDY_PLOTS.items():
    runs = study_runs(params, plot, defined)
    write_text(f"reports/plots/{study}.csv", study_csv(plot, runs, read))
write_timing("reports/timing/plots.json", {"seconds": round(time.perf_counter() - t0, 2)})
