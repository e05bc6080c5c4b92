"""Stage `report_headline`: the headline run from each base seed against its own base, pooled and per base.

Reads the files `reasonrl.studies.headline.inputs` lists (dvc.yaml's deps) and writes its outputs.
"""

from reasonrl.studies import headline
from reasonrl.studies.stage import run_report

run_report(headline)
