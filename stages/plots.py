"""Stage `plots`: the study plots' data for `dvc plots show` -> reports/plots/<study>.csv, one row per
(run, step), from every run's history and in-training evaluations under reports/rl/. A study's runs are
the names in its section of `studies` that have a history there (its params are `studies` only, so a
changed run reaches this stage through its outputs, not its params)."""

import csv
import time
from pathlib import Path

from reasonrl.io import read_json, write_text
from reasonrl.plotdata import STUDY_PLOTS, study_csv, study_runs
from reasonrl.runtime import stage_setup, write_timing


def read(run: str) -> tuple[list[dict], list[dict]]:
    with open(f"reports/rl/{run}.csv") as f:
        history = list(csv.DictReader(f))
    return history, read_json(f"reports/rl/{run}.json")["evals"]


t0 = time.perf_counter()
params, _, _ = stage_setup()
defined = [path.stem for path in sorted(Path("reports/rl").glob("*.csv"))]
for study, plot in STUDY_PLOTS.items():
    runs = study_runs(params, plot, defined)
    write_text(f"reports/plots/{study}.csv", study_csv(plot, runs, read))
write_timing("reports/timing/plots.json", {"seconds": round(time.perf_counter() - t0, 2)})
