"""Stage `report_primaries`: run 2's pre-registered rows (params studies.primaries) judged as one family, written to
reports/primaries.md and reports/metrics/primaries.json.

Reads the files `reasonrl.studies.primaries.inputs` lists (dvc.yaml's deps: the passk data and the answer folders of
the single-base claims' studies) and writes its outputs.
"""

import sys
from pathlib import Path

from reasonrl.config import load_params
from reasonrl.errors import install_excepthook
from reasonrl.studies import primaries
from reasonrl.studies.stage import load_config

install_excepthook()
params = load_params("params.yaml")
cfg = load_config(primaries, params)
primaries.report(cfg, params, Path("."))
print(f"primaries: {len(primaries.outputs(cfg))} outputs written", file=sys.stderr)
