"""Stage `report_primaries`: run 2's pre-registered rows (params studies.primaries) judged as one family, written to
reports/primaries.md and reports/metrics/primaries.json.

Reads the files `reasonrl.studies.primaries.inputs` lists (dvc.yaml's deps: the passk data and the answer folders of
the single-base claims' studies), and those `reasonrl.studies.gate_readings.inputs` lists for the gates it reads
again on the run's outputs, and writes its outputs.
"""

import sys
from pathlib import Path

from reasonrl.config import load_params
from reasonrl.errors import install_excepthook
from reasonrl.studies import gate_readings, primaries
from reasonrl.studies.gatekeeping import gate_specs
from reasonrl.studies.stage import load_config

install_excepthook()
params = load_params("params.yaml")
cfg = load_config(primaries, params)
in_run = gate_readings.in_run(cfg.rows, gate_specs(params), params, Path("."))  # the gates read again in the run
primaries.report(cfg, params, Path("."), in_run)
print(f"primaries: {len(primaries.outputs(cfg))} outputs written", file=sys.stderr)
