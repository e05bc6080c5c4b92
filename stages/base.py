"""Stage `base@<name>`: train the standard base `bases.<name>`; checkpoint and metrics."""

import sys

from reasonrl.config import to_dict
from reasonrl.evaluate import greedy_accuracy
from reasonrl.io import write_json
from reasonrl.model import save_checkpoint
from reasonrl.pipeline import read_problems, section, stage_setup
from reasonrl.pretrain import BaseConfig, train_base

name = sys.argv[1]
params, device, _ = stage_setup()
cfg = section(params, f"bases.{name}", BaseConfig)
model, summary = train_base(cfg, device, desc=f"base@{name}")
metrics = {f"n{n}": greedy_accuracy(model, read_problems(f"data/n{n}.jsonl")) for n in (8, 12)}
metrics["train_seconds"] = summary["seconds"]
metrics["final_loss"] = summary["final_loss"]
save_checkpoint(f"models/base_{name}.pt", model, {"kind": "base", "name": name, "params": to_dict(cfg),
                                                   "summary": summary})
write_json(f"reports/metrics/base_{name}.json", metrics)
