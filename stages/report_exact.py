"""Stage `report_exact`: the exact toy's figures, tables and manifest from reports/exact/results.json.

Reads the files `reasonrl.studies.exact.inputs` lists (dvc.yaml's deps) and writes its outputs.
"""

from reasonrl.studies import exact
from reasonrl.studies.common import run_report

run_report(exact)
