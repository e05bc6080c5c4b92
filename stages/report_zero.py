"""Stage `report_zero`: GRPO from each mixed base: does RL create thinking or select it?

Reads the files `reasonrl.studies.zero.inputs` lists (dvc.yaml's deps) and writes its outputs.
"""

from reasonrl.studies import zero
from reasonrl.studies.stage import run_report

run_report(zero)
