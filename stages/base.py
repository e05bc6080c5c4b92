"""Stages `base@<name>`, `mixed_p1@<name>`, `mixed@<name>`: train one base phase from params section
<section> (fresh weights, or continuing models/<init>.pt) -> models/<stem>.pt and its greedy accuracy on
its task's `in` and `edge` sets.

    python stages/base.py <section> <stem>      # e.g. bases.cot base_cot, mixed.phase2.think2 mixed_think2
"""


from reasonrl.checkpoint import load_checkpoint, save_checkpoint
from reasonrl.config import to_dict
from reasonrl.evaluate import greedy_accuracy
from reasonrl.io import write_json
from reasonrl.pipeline import data_path, read_problems, section
from reasonrl.pretrain import BaseConfig, train_base
from reasonrl.runtime import stage_args, stage_setup, write_timing

params, device, _ = stage_setup()
where, stem = stage_args("<section> <stem>")
cfg = section(params, where, BaseConfig)
init = load_checkpoint(f"models/{cfg.init}.pt", device)[0] if cfg.init else None
model, summary = train_base(cfg, init, device, desc=stem, where=where)
timing = summary.pop("timing")  # reports/timing only: the checkpoint is the same bytes on a rerun
save_checkpoint(f"models/{stem}.pt", model, {"kind": "base", "name": stem, "params": to_dict(cfg),
                                              "summary": summary})
metrics = {role: greedy_accuracy(model, read_problems(data_path(cfg.task, role))) for role in ("in", "edge")}
write_json(f"reports/metrics/{stem}.json", {**metrics, "final_loss": summary["final_loss"]})
timing["steps_per_second"] = round(cfg.train.steps / timing["seconds"], 2)
write_timing(f"reports/timing/{stem}.json", timing)
