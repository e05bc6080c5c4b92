"""Stage `report_exact`: the exact toy's figures, tables and manifest from reports/exact/results.json.

Reads the files `reasonrl.studies.exact_report.inputs` lists (dvc.yaml's deps) and writes its outputs.
"""

from reasonrl.studies import exact_report
from reasonrl.studies.stage import run_report

run_report(exact_report)
