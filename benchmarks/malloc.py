"""The RL step on each allocator, side by side: CPU seconds per step and the peak resident set.

    python benchmarks/malloc.py [--steps 60] [--rounds 2]

Each contender is a fresh process running `--steps` steps of `rl_step` on peer_trl's job (B = 32 x G = 8,
untrained model, lr 1e-3, one thread) with the heap trimmed after each step, as the stages run `train_rl`:
- glibc: the C library's malloc and the memory policy's trims (rl.memory), what a plain `dvc repro` runs;
- glibc, no trims (labelled): the computation alone, with a resident set that grows over the run;
- tcmalloc: preloaded, as `reasonrl repro` runs its stages (reasonrl.runner.malloc); the policy then trims nothing.
The contenders alternate for `--rounds` rounds; CPU s/step is the mean over the steps after the first three.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

from reasonrl import numerics
from reasonrl.runner import malloc

# name -> (the allocator it runs on, whether the memory policy trims)
CONTENDERS = {"glibc": ("system", True), "glibc, no trims (labelled)": ("system", False),
              "tcmalloc": ("tcmalloc", True)}


def child(steps: int, trim: bool, setting: str) -> None:
    """One contender's run in this process; prints {cpu, peak_mb, malloc} as JSON."""
    import torch
    from peer_trl import peer_context  # this folder is first on the import path

    from reasonrl.rl.algorithm import rl_step

    numerics.pin(setting)
    torch.set_num_threads(1)
    ctx, opt = peer_context(steps, trim)
    cpu = []
    for step in range(steps):
        c0 = time.process_time()
        rl_step(ctx, opt, step)
        ctx.hooks.between_phases()  # as train_rl, after each step
        cpu.append(time.process_time() - c0)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1000
    print(json.dumps({"cpu": cpu, "peak_mb": peak, "malloc": malloc.active()}))


def contender(name: str, steps: int, setting: str) -> dict:
    allocator, trim = CONTENDERS[name]
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", malloc.SWITCH)}
    env = malloc.environ(env) if allocator == "tcmalloc" else env | {malloc.SWITCH: "system"}
    argv = [sys.executable, __file__, "--child", str(steps), "--numerics", setting, *([] if trim else ["--no-trim"])]
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=60, help="steps per run (default: %(default)s)")
    ap.add_argument("--rounds", type=int, default=2, help="runs per contender, alternating (default: %(default)s)")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--no-trim", action="store_true", help=argparse.SUPPRESS)
    numerics.add_argument(ap)
    args = ap.parse_args()
    if args.child is not None:
        return child(args.child, not args.no_trim, args.numerics)
    if args.steps <= 3:
        ap.error("--steps must be more than 3: the mean is over the steps after the first three")
    if malloc.library() is None:
        sys.exit("tcmalloc is not installed (Debian, Ubuntu: apt install libtcmalloc-minimal4)")
    runs: dict[str, list[dict]] = {name: [] for name in CONTENDERS}
    for _ in range(args.rounds):
        for name in CONTENDERS:
            runs[name].append(contender(name, args.steps, args.numerics))
    print(f"RL step (peer_trl's job), {args.steps} steps per run, {args.rounds} runs each, alternating; "
          f"numerics {args.numerics}")
    print(f"  machine: {numerics.machine()}")
    base = None
    for name, got in runs.items():
        assert all(r["malloc"] == CONTENDERS[name][0] for r in got), got
        cpu = [sum(r["cpu"][3:]) / len(r["cpu"][3:]) for r in got]
        base = base or sum(cpu) / len(cpu)
        peaks = ", ".join(f"{r['peak_mb']:.0f}" for r in got)
        print(f"  {name:28s} CPU s/step {', '.join(f'{c:.3f}' for c in cpu):18s} peak {peaks} MB   "
              f"{base / (sum(cpu) / len(cpu)):.2f}x the glibc step")


if __name__ == "__main__":
    main()
