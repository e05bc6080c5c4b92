"""Stage `report_hacking`: proxy vs true reward per run, failure mix, fooled examples, random reward at mu = 1 vs 2.

Reads the files `reasonrl.studies.hacking.inputs` lists (dvc.yaml's deps) and writes its outputs.
"""

from reasonrl.studies import hacking
from reasonrl.studies.stage import run_report

run_report(hacking)
