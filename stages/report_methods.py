"""Stage `report_methods`: SFT vs RFT vs GRPO over seeds: curves, final accuracy, failure mix.

Reads the files `reasonrl.studies.methods.inputs` lists (dvc.yaml's deps) and writes its outputs.
"""

from reasonrl.studies import methods
from reasonrl.studies.stage import run_report

run_report(methods)
