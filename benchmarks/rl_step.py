"""Seconds per RL step at the default job size (B = 32, G = 8, n in [4, 12]), one thread.

    python benchmarks/rl_step.py [--steps 5] [--init models/base_cot_L2.pt]

Uses the trained cot_L2 base when it exists (realistic response lengths), else a fresh model.
Prints the mean seconds of rollout (sampling + rewards) and of the whole step.
"""

import argparse
import copy
import random
import time
from pathlib import Path

import torch

from reasonrl.model import ModelConfig, TinyReasoner, load_checkpoint
from reasonrl.rl import make_job
from reasonrl.rl.train import METHODS, Context, rl_step


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--init", default="models/base_cot_L2.pt")
    args = ap.parse_args()
    torch.set_num_threads(1)
    if Path(args.init).exists():
        policy, _ = load_checkpoint(args.init)
        source = args.init
    else:
        policy = TinyReasoner(ModelConfig(), generator=torch.Generator().manual_seed(0)).eval()
        source = "an untrained model (no checkpoint found)"
    job = make_job({}, {"steps": args.steps})
    ctx = Context(job=job, policy=policy, ref=copy.deepcopy(policy), verifier=None, rng=random.Random(0),
                  sample_gen=torch.Generator().manual_seed(0), reward_gen=torch.Generator().manual_seed(1))
    opt = torch.optim.AdamW(policy.parameters(), lr=job.lr, weight_decay=0.0)
    rollout, whole = [], []
    for step in range(args.steps):
        t0 = time.perf_counter()
        METHODS["grpo"].collect(ctx)
        rollout.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        rl_step(ctx, opt, step)
        whole.append(time.perf_counter() - t0)
    print(f"GRPO step, B = {job.B}, G = {job.G}, n in {list(job.n_range)}, 1 thread, from {source}")
    print(f"  rollout (sampling + rewards)  {sum(rollout) / len(rollout):.3f} s")
    print(f"  whole RL step                 {sum(whole) / len(whole):.3f} s   (mean of {args.steps})")


if __name__ == "__main__":
    main()
