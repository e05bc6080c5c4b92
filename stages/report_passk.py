"""Stage `report_passk`: pass@k of the base and each method's run on several ring sizes, diversity, crossings.

Reads the files `reasonrl.studies.passk.inputs` lists (dvc.yaml's deps) and writes its outputs.
"""

from reasonrl.studies import passk
from reasonrl.studies.stage import run_report

run_report(passk)
