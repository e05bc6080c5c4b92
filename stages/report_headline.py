"""Stage `report_headline_<task>`: one task's headline runs, each from its own base seed, against that base, pooled
and per base.

    python stages/report_headline.py <task>

Reads the files `reasonrl.studies.headline.inputs` lists (dvc.yaml's deps) and writes reports/headline_<task>/.
"""

import sys

from reasonrl.studies import headline
from reasonrl.studies.stage import run_report

run_report(headline, task=sys.argv[1] if len(sys.argv) == 2 else None)
