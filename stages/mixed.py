"""Stage `mixed@<name>`: train the two-phase mixed base `mixed.<name>`; checkpoint and metrics."""

import sys

from reasonrl.config import to_dict
from reasonrl.evaluate import greedy_accuracy
from reasonrl.io import write_json
from reasonrl.model import save_checkpoint
from reasonrl.pipeline import read_problems, section, stage_setup
from reasonrl.pretrain import MixedConfig, train_mixed

name = sys.argv[1]
params, device, _ = stage_setup()
cfg = section(params, f"mixed.{name}", MixedConfig)
model, summary = train_mixed(cfg, device, desc=f"mixed@{name}")
metrics = {f"n{n}": greedy_accuracy(model, read_problems(f"data/n{n}.jsonl")) for n in (8, 12)}
metrics["train_seconds"] = summary["seconds"]
save_checkpoint(f"models/mixed_{name}.pt", model, {"kind": "mixed", "name": name, "params": to_dict(cfg),
                                                    "summary": summary})
write_json(f"reports/metrics/mixed_{name}.json", metrics)
