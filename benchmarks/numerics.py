"""What pinning the numerics costs: a base stage's training, an eval stage's work and RL steps, each run
under `native` and under a pinned setting side by side (two processes at once, one thread each).

    python benchmarks/numerics.py [--settings avx2 compatible] [--base-steps 1000] [--rl-steps 4] [--json F]

Workloads, as the stages do them, from params.yaml:
- base: train_base on bases.cot (--base-steps optimizer steps); its weights are saved for the eval;
- eval: set_report on data/hop_edge.jsonl with the `eval` section, from the base the same setting trained;
- rl:   rl_step on the `rl` defaults (B 32 x G 8), from that base, --rl-steps steps.
Each pair (native, setting) runs at the same time, so the machine's load falls on both alike; the ratio
is setting seconds / native seconds of the same pair. The md5 of each result shows which settings
compute the same bytes on this machine.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from reasonrl import numerics

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = ("base", "eval", "rl")


def child(workload: str, setting: str, steps: int, base_path: str) -> dict:
    """Run one workload in this fresh process under `setting`: seconds, CPU seconds, md5 of its result."""
    took = numerics.pin(setting)
    import torch

    from reasonrl.checkpoint import load_checkpoint, save_checkpoint
    from reasonrl.config import load_params
    from reasonrl.evaluate import EvalConfig, set_report
    from reasonrl.pipeline import read_problems, section
    from reasonrl.pretrain import BaseConfig, train_base

    torch.set_num_threads(1)
    params = load_params(ROOT / "params.yaml")
    t0, c0 = time.perf_counter(), time.process_time()
    if workload == "base":
        params["bases"]["cot"]["train"]["steps"] = steps
        model, _ = train_base(section(params, "bases.cot", BaseConfig), None, torch.device("cpu"), desc=setting)
        save_checkpoint(base_path, model, {"kind": "base"})
        digest = hashlib.md5(Path(base_path).read_bytes()).hexdigest()
    elif workload == "eval":
        model = load_checkpoint(base_path)[0]
        problems = read_problems(ROOT / "data/hop_edge.jsonl")
        summary, _ = set_report(model, problems, "edge", section(params, "eval", EvalConfig))
        digest = hashlib.md5(json.dumps(summary, sort_keys=True).encode()).hexdigest()
    else:
        from reasonrl.rl.algorithm import rl_step
        from reasonrl.rl.context import Context
        from reasonrl.rl.job import make_job
        from reasonrl.rl.memory import memory_hooks

        policy = load_checkpoint(base_path)[0]
        job = make_job(params["rl"], {"steps": steps})
        ctx = Context(job=job, policy=policy, ref=load_checkpoint(base_path)[0].requires_grad_(False),
                      verifier=None, rng=random.Random(0), sample_gen=torch.Generator().manual_seed(0),
                      reward_gen=torch.Generator().manual_seed(1), hooks=memory_hooks(job, verifier=False))
        opt = torch.optim.AdamW(policy.parameters(), lr=job.lr, weight_decay=0.0)
        for step in range(steps):
            rl_step(ctx, opt, step)
        digest = hashlib.md5(b"".join(p.detach().numpy().tobytes() for p in policy.parameters())).hexdigest()
    return {"workload": workload, "setting": setting, "seconds": round(time.perf_counter() - t0, 2),
            "cpu_seconds": round(time.process_time() - c0, 2), "md5": digest, "took": took}


def pair(workload: str, settings: tuple[str, str], args, bases: dict[str, str]) -> list[dict]:
    """Run the workload under both settings at once; their results in the order of `settings`."""
    env = {k: v for k, v in os.environ.items() if k not in numerics.VARIABLES}
    procs = [subprocess.Popen([sys.executable, __file__, "--child", workload, "--numerics", s,
                               "--steps", str(args.base_steps if workload == "base" else args.rl_steps),
                               "--base-path", bases[s]], env=env, stdout=subprocess.PIPE, text=True)
             for s in settings]
    outs = [p.communicate()[0] for p in procs]
    if any(p.returncode for p in procs):
        raise SystemExit(f"a {workload} child failed")
    return [json.loads(o.strip().splitlines()[-1]) for o in outs]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--settings", nargs="+", default=["avx2", "compatible"], choices=list(numerics.SETTINGS))
    ap.add_argument("--base-steps", type=int, default=1000, help="base training steps (bases.cot has 1000)")
    ap.add_argument("--rl-steps", type=int, default=4, help="RL steps")
    ap.add_argument("--json", help="also write the rows to this file")
    ap.add_argument("--child", choices=WORKLOADS, help=argparse.SUPPRESS)
    ap.add_argument("--numerics", help=argparse.SUPPRESS)
    ap.add_argument("--steps", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--base-path", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.numerics, args.steps, args.base_path)))
        return
    print(f"machine  {numerics.machine()}", flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for setting in args.settings:
            bases = {s: f"{tmp}/base_{s}.pt" for s in ("native", setting)}
            for workload in WORKLOADS:
                native, pinned = pair(workload, ("native", setting), args, bases)
                ratio = pinned["seconds"] / native["seconds"]
                rows += [native, {**pinned, "ratio_to_native": round(ratio, 3)}]
                print(f"{workload:5s} native {native['seconds']:8.2f} s  {setting:10s} {pinned['seconds']:8.2f} s  "
                      f"ratio {ratio:.3f}  same bytes: {native['md5'] == pinned['md5']}  "
                      f"({setting}: {pinned['took']})", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
