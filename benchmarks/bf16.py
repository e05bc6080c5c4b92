"""Reduced precision, measured: an RL step's largest phase in fp32 and under bfloat16 autocast, side by side.

    python benchmarks/bf16.py [--init models/base_cot.pt] [--reps 6] [--numerics native]

The training forward and backward of one RL batch (the default job, B 32 x G 8, the fast layout), in fp32
as the stages run it and under `torch.autocast("cpu", dtype=torch.bfloat16)` (matmuls in bfloat16, weights
in fp32), passes interleaved, one thread. It is 70% of a step and the phase bfloat16 helps most, so its
ratio bounds the whole step's. (The samplers keep fp32 buffers: autocast over a rollout fails.) bfloat16
kernels need the CPU's own code paths, so the default is `--numerics native`.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import statistics
import time
from pathlib import Path

import torch

from reasonrl import numerics
from reasonrl.checkpoint import load_checkpoint
from reasonrl.model import ModelConfig, TinyReasoner
from reasonrl.rl import algorithm as A
from reasonrl.rl.batch import Batch
from reasonrl.rl.job import make_job
from reasonrl.rl.layout import FAST
from reasonrl.sampling import sample_responses


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--init", default="models/base_cot.pt")
    ap.add_argument("--reps", type=int, default=6, help="timed passes per precision (after one warm-up)")
    numerics.add_argument(ap, default="native")
    args = ap.parse_args()
    took = numerics.pin(args.numerics)
    torch.set_num_threads(1)
    policy = (load_checkpoint(args.init)[0] if Path(args.init).exists()
              else TinyReasoner(ModelConfig(), generator=torch.Generator().manual_seed(0)).eval())
    job = make_job({}, {})
    probs = A.draw_problems(random.Random(0), job, job.B)
    with torch.inference_mode():
        responses = sample_responses(policy, probs, job.G, job.temperature, torch.Generator().manual_seed(0))
    batch = Batch([p for p in probs for _ in range(job.G)], [r for rs in responses for r in rs],
                    torch.zeros(job.B * job.G), torch.zeros(job.B * job.G), job.G, 0.0)
    seqs = FAST.build(batch, "cpu", job.temperature)
    precisions = {"fp32": contextlib.nullcontext, "bf16": lambda: torch.autocast("cpu", dtype=torch.bfloat16)}
    seconds = {name: [] for name in precisions}
    logps = {}
    for rep in range(args.reps + 1):
        for name, precision in precisions.items():
            policy.zero_grad(set_to_none=True)
            t0 = time.perf_counter()
            with precision():
                logp, _ = seqs.logprobs(policy)
                loss = -(logp * seqs.m).sum() / seqs.m.sum()
            loss.backward()
            if rep:  # the first pass warms the kernels up
                seconds[name].append(time.perf_counter() - t0)
            logps[name] = logp.detach().float()
    fp, bf = statistics.median(seconds["fp32"]), statistics.median(seconds["bf16"])
    drift = (logps["bf16"] - logps["fp32"]).abs().max().item()
    print(f"numerics {args.numerics} {took}; the training forward and backward of one RL batch (B {job.B} x G "
          f"{job.G}), median of {args.reps} interleaved passes, one thread")
    print(f"  fp32 {fp:.3f} s, bf16 autocast {bf:.3f} s: bf16 runs at {fp / bf:.2f}x the speed of fp32; "
          f"largest log-prob difference {drift:.4f}")


if __name__ == "__main__":
    main()
