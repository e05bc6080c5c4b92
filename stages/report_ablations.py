"""Stage `report_ablations`: GRPO knobs one at a time: accuracy, entropy, zero-variance fraction, wrong-answer length.

Reads the files `reasonrl.studies.ablations.inputs` lists (dvc.yaml's deps) and writes its outputs.
"""

from reasonrl.studies import ablations
from reasonrl.studies.stage import run_report

run_report(ablations)
