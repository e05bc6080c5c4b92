"""The library on an accelerator (`device: auto` picks CUDA where there is one): a tiny base trained,
checkpointed and loaded back, a GRPO run through `run_job` (the stages' path, memory hooks included) and a
sampled pass@k, all on the device; then the same base step on the CPU, to show both run.

    python scripts/cuda_smoke.py [--device cuda] [--task hop]

Prints one JSON line per part with its device, its seconds and its numbers; exits non-zero on any failure."""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

import torch

from reasonrl.checkpoint import save_checkpoint
from reasonrl.evaluate import pass_curve
from reasonrl.model import ModelConfig
from reasonrl.pretrain import BaseConfig, PhaseConfig, train_base
from reasonrl.rl.job import make_job
from reasonrl.rl.run import run_job
from reasonrl.tasks import get_task


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--task", default="hop")
    args = ap.parse_args()
    task = get_task(args.task)
    with tempfile.TemporaryDirectory() as tmp:
        for device in dict.fromkeys([args.device, "cpu"]):
            t0 = time.time()
            cfg = BaseConfig(task=task.name, model=ModelConfig(d_model=32, n_heads=2, n_layers=1, task=task.name,
                                                               max_len=160 if task.name == "chain" else 96),
                             train=PhaseConfig(steps=30, batch_size=16, warmup=5, n_range=(4, 6), seed=0))
            model, hist = train_base(cfg, device=device)
            path = Path(tmp) / f"base_{device}.pt"
            save_checkpoint(path, model, {"kind": "base", "name": "smoke"})
            print(json.dumps({"part": "base", "device": str(next(model.parameters()).device),
                              "final_loss": round(hist["final_loss"], 4),
                              "seconds": round(time.time() - t0, 1)}), flush=True)
            t0 = time.time()
            job = make_job({}, {"task": task.name, "steps": 3, "B": 4, "G": 4, "eval_every": 3, "n_range": [4, 6],
                                "k_max": 3})
            problems = [task.sample(random.Random(i), job.spec) for i in range(8)]
            policy, rl_hist = run_job(job, path, None, {"val_in": problems}, device=device, progress=False)
            print(json.dumps({"part": "rl", "device": str(next(policy.parameters()).device),
                              "steps": len(rl_hist["steps"]), "seconds": round(time.time() - t0, 1)}), flush=True)
            t0 = time.time()
            for part in (model, policy):  # every part ran where it was asked to, not on a silent fallback
                assert next(part.parameters()).device.type == torch.device(device).type, (part, device)
            curve, counts = pass_curve(policy, problems, 8, [1, 8], seed=1)
            print(json.dumps({"part": "sample", "device": str(next(policy.parameters()).device), "pass_at_k": curve,
                              "seconds": round(time.time() - t0, 1)}), flush=True)


if __name__ == "__main__":
    main()
