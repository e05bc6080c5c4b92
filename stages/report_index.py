"""Stage `report_index`: reports/index.md, every figure with one sentence and its key number, links to the tables.

Reads the files `reasonrl.studies.index.inputs` lists (dvc.yaml's deps) and writes its outputs.
"""

from reasonrl.studies import index
from reasonrl.studies.stage import run_report

run_report(index)
