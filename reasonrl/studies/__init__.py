"""The studies: each answers one research question from the outputs of its RL runs.

One module per study (`methods`, `passk`, `zero`, `hacking`, `ablations`) plus `index`, all built on
`common`. A study module has the same shape everywhere:

- `SECTION` and `Config`: its params section and the dataclass it loads into;
- `inputs(cfg)` / `outputs(cfg)`: the files it reads and writes, relative to the repository root (the
  report stage's deps and outs in dvc.yaml list the same files; tests/test_report.py checks that);
- `report(cfg, root)`: read the inputs, write figures, a markdown table, the study's metrics and a
  manifest (figures with captions, tables, runs) that the index is built from.

`passk_eval` is the sampling measurement behind the passk study (stage passk@<model>).
"""

from dataclasses import dataclass

PASSK_DATA = "reports/passk/data"  # stage passk@<label> writes <label>.json here; report_passk reads the folder


def passk_data_path(label: str) -> str:
    return f"{PASSK_DATA}/{label}.json"


@dataclass
class PasskModel:
    """One entry of passk.models: a checkpoint and its task (stage passk@ reads data/<task>_<set>.jsonl)."""

    task: str  # key of reasonrl/tasks; checked against the checkpoint's own task
    model: str  # checkpoint models/<model>.pt
