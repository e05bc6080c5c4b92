"""Stage `verifier@<name>`: train the learned verifier `verifiers.<name>` on samples of its base."""


from reasonrl.checkpoint import load_checkpoint
from reasonrl.config import to_dict
from reasonrl.io import write_json
from reasonrl.pipeline import section
from reasonrl.runtime import stage_args, stage_setup, write_timing
from reasonrl.verifiers import VerifierConfig, save_verifier, train_verifier

params, device, _ = stage_setup()
(name,) = stage_args("<name>")
cfg = section(params, f"verifiers.{name}", VerifierConfig)
base, _ = load_checkpoint(f"models/base_{cfg.init}.pt", device)
verifier, summary = train_verifier(cfg, base, device, desc=f"verifier@{name}", where=f"verifiers.{name}")
timing = summary.pop("timing")  # reports/timing only: the checkpoint is the same bytes on a rerun
save_verifier(f"models/verifier_{name}.pt", verifier, {"kind": cfg.kind, "name": name, "params": to_dict(cfg),
                                                         "summary": summary})
metrics = {"kind": cfg.kind, "init": cfg.init, **summary["heldout"], "probes": summary["probes"],
           "data": summary["data"], "final_loss": summary["final_loss"]}
write_json(f"reports/metrics/verifier_{name}.json", metrics)
write_timing(f"reports/timing/verifier_{name}.json", timing)
