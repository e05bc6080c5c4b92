"""The plain and the fast RL step side by side on the same job, in one run, one thread.

    python benchmarks/rl_step.py [--steps 4] [--ref-steps 1] [--init models/base_cot.pt]

Default job (B = 32 prompts, G = 8 samples each, n in [4, 16], k <= 7: the `rl:` defaults). Two contexts start
from the same weights and seeds: `plain` (every sequence computed in full: `sample`, `token_logprobs`) and `fast`
(prefix-shared rollouts and training, `shared_prefix=True`, the default of `train_rl`). Their steps are
interleaved so that the machine's load falls on both alike; both draw the same responses (checked).
On the first --ref-steps steps the same prompts are also sampled with `sample_reference` (full recompute
per token). Peak memory is the peak RSS of a fresh child process running --rss-steps steps of one path.
Times are wall-clock; the CPU seconds of the whole step (this process runs one thread) are shown too, as
they are less disturbed by other work on a shared machine.

By default the heap is never trimmed, in either path: the steps measure computation only, as every earlier
run of this script did. The stages run `train_rl` under the memory policy (rl/memory.py), whose hooks give
freed heap pages back (`malloc_trim`) inside each step and after it, which bounds a stage's peak RSS at the
price of faulting those pages in again; --trim runs both paths that way (the hooks inside rl_step, and one
after each step, inside the timed step). The script runs on the
allocator `reasonrl repro` gives its stages (reasonrl.runner.malloc: tcmalloc where installed, under which the
policy trims nothing on this job; REASONRL_MALLOC=system for glibc's malloc).

Uses the trained cot base when it exists (realistic response lengths), else a fresh model.
"""

import argparse
import copy
import json
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

from reasonrl.runner import malloc

malloc.restart()  # before torch loads

import torch  # noqa: E402

from reasonrl import numerics  # noqa: E402
from reasonrl.checkpoint import load_checkpoint  # noqa: E402
from reasonrl.model import ModelConfig, TinyReasoner  # noqa: E402
from reasonrl.rl import algorithm as A  # noqa: E402
from reasonrl.rl.context import Context, Hooks  # noqa: E402
from reasonrl.rl.job import make_job  # noqa: E402
from reasonrl.rl.memory import memory_hooks  # noqa: E402
from reasonrl.sampling import response_of, sample_reference  # noqa: E402

PATHS = ("plain", "fast")


def load_policy(init: str):
    if Path(init).exists():
        return load_checkpoint(init)[0], init
    model = TinyReasoner(ModelConfig(), generator=torch.Generator().manual_seed(0)).eval()
    return model, "an untrained model (no checkpoint found)"


def make_context(policy, shared: bool, steps: int, trim: bool = False) -> tuple[Context, torch.optim.Optimizer]:
    job = make_job({}, {"steps": steps})
    policy = copy.deepcopy(policy)
    ctx = Context(job=job, policy=policy, ref=copy.deepcopy(policy).requires_grad_(False), verifier=None,
                  rng=random.Random(0), sample_gen=torch.Generator().manual_seed(0),
                  reward_gen=torch.Generator().manual_seed(1), shared_prefix=shared,
                  hooks=memory_hooks(job, False) if trim else Hooks())
    return ctx, torch.optim.AdamW(policy.parameters(), lr=job.lr, weight_decay=0.0)


def timed_collect(times: list[float], cpu: list[float]):
    """rl_step's collect for grpo, timed (wall and CPU seconds): rollout = sampling + rewards."""
    inner = A.COLLECT["policy"]

    def collect(ctx):
        t0, c0 = time.perf_counter(), time.process_time()
        batch = inner(ctx)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        return batch

    return collect


def reference_rollout(ctx: Context) -> tuple[float, float, list[str]]:
    """Wall and CPU seconds of sample_reference on exactly the prompts and generator state of ctx's next step."""
    job = ctx.job
    probs = A.draw_problems(_copy_rng(ctx.rng), job, job.B)
    gen = torch.Generator().set_state(ctx.sample_gen.get_state())
    flat = [p.prompt for p in probs for _ in range(job.G)]
    t0, c0 = time.perf_counter(), time.process_time()
    outs = sample_reference(ctx.policy, flat, max(p.k for p in probs) + 5, job.temperature, gen)
    return time.perf_counter() - t0, time.process_time() - c0, [response_of(o) for o in outs]


def _copy_rng(rng: random.Random) -> random.Random:
    r = random.Random()
    r.setstate(rng.getstate())
    return r


def rss_child(path: str, init: str, steps: int, trim: bool) -> None:
    """Run `steps` steps of one path in this (fresh) process and print its peak RSS in MB as JSON."""
    torch.set_num_threads(1)
    policy, _ = load_policy(init)
    ctx, opt = make_context(policy, path == "fast", steps, trim)
    for step in range(steps):
        A.rl_step(ctx, opt, step)
        ctx.hooks.between_phases()
    print(json.dumps({"path": path, "peak_rss_mb": peak_rss_self_mb()}))


def peak_rss_self_mb() -> float:
    """This process's peak RSS. VmHWM belongs to the process image, so unlike ru_maxrss it does not carry
    the parent's high-water mark over fork and exec."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KB (may include the parent's)


def peak_rss(path: str, init: str, steps: int, trim: bool) -> float:
    out = subprocess.run([sys.executable, __file__, "--rss-child", path, "--init", init, "--rss-steps", str(steps),
                          "--numerics", numerics.current(), *(["--trim"] if trim else [])],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])["peak_rss_mb"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=4, help="RL steps per path (interleaved)")
    ap.add_argument("--ref-steps", type=int, default=1, help="steps whose prompts are also run by sample_reference")
    ap.add_argument("--rss-steps", type=int, default=3, help="steps run by each peak-memory child")
    ap.add_argument("--init", default="models/base_cot.pt")
    ap.add_argument("--trim", action="store_true", help="give freed heap pages back as train_rl does (see above)")
    ap.add_argument("--json", help="also write the numbers to this file")
    ap.add_argument("--rss-child", choices=PATHS, help=argparse.SUPPRESS)
    numerics.add_argument(ap)
    args = ap.parse_args()
    numerics.pin(args.numerics)
    if args.rss_child:
        return rss_child(args.rss_child, args.init, args.rss_steps, args.trim)
    torch.set_num_threads(1)
    policy, source = load_policy(args.init)
    ctxs = {p: make_context(policy, p == "fast", args.steps, args.trim) for p in PATHS}
    roll = {p: [] for p in PATHS}
    roll_cpu = {p: [] for p in PATHS}
    whole = {p: [] for p in PATHS}
    cpu = {p: [] for p in PATHS}  # CPU seconds of this (one-thread) process: less sensitive to other load
    ref_times, ref_cpu, fast_roll_at_ref, fast_cpu_at_ref = [], [], [], []
    saved = A.COLLECT["policy"]
    try:
        for step in range(args.steps):
            if step < args.ref_steps:
                t_ref, c_ref, ref_resps = reference_rollout(ctxs["fast"][0])
            batches = {}
            for p in PATHS:
                ctx, opt = ctxs[p]
                A.COLLECT["policy"] = timed_collect(roll[p], roll_cpu[p])
                t0, c0 = time.perf_counter(), time.process_time()
                _, batches[p] = A.rl_step(ctx, opt, step)
                ctx.hooks.between_phases()
                whole[p].append(time.perf_counter() - t0)
                cpu[p].append(time.process_time() - c0)
            A.COLLECT["policy"] = saved
            assert batches["plain"].responses == batches["fast"].responses, f"step {step}: responses differ"
            if step < args.ref_steps:
                assert ref_resps == batches["fast"].responses, "sample_reference drew different responses"
                ref_times.append(t_ref)
                ref_cpu.append(c_ref)
                fast_roll_at_ref.append(roll["fast"][-1])
                fast_cpu_at_ref.append(roll_cpu["fast"][-1])
    finally:
        A.COLLECT["policy"] = saved
    rss = {p: peak_rss(p, args.init, args.rss_steps, args.trim) for p in PATHS}

    def mean(x):
        return sum(x) / len(x)

    res = {p: {"rollout_s": mean(roll[p]), "rollout_cpu_s": mean(roll_cpu[p]), "whole_s": mean(whole[p]),
               "whole_cpu_s": mean(cpu[p])} for p in PATHS}
    for p in PATHS:
        res[p]["training_s"] = res[p]["whole_s"] - res[p]["rollout_s"]
        res[p]["peak_rss_mb"] = rss[p]
    ref_ratio = mean(ref_times) / mean(fast_roll_at_ref) if ref_times else float("nan")
    ref_ratio_cpu = mean(ref_cpu) / mean(fast_cpu_at_ref) if ref_times else float("nan")
    res["reference_rollout_s"] = mean(ref_times) if ref_times else None
    res["reference_rollout_cpu_s"] = mean(ref_cpu) if ref_times else None
    res["ratio_rollout_vs_reference"] = ref_ratio
    res["ratio_rollout_vs_reference_cpu"] = ref_ratio_cpu
    res["heap_trimmed"] = args.trim
    res["ratio_whole_step"] = res["plain"]["whole_s"] / res["fast"]["whole_s"]
    res["ratio_whole_step_cpu"] = res["plain"]["whole_cpu_s"] / res["fast"]["whole_cpu_s"]

    job = ctxs["fast"][0].job
    heap = "trimmed as in train_rl" if args.trim else "never trimmed"
    print(f"GRPO step, B = {job.B}, G = {job.G}, n in {list(job.n_range)}, 1 thread, from {source};"
          f" mean of {args.steps} interleaved steps per path; heap {heap}; malloc {malloc.active()}")
    print(f"  {'':32s}{'plain':>10s}{'fast':>10s}{'ratio':>9s}")
    for key, label in (("rollout_s", "rollout (sampling + rewards), s"), ("rollout_cpu_s", "rollout, CPU s"),
                       ("training_s", "training, s"),
                       ("whole_s", "whole RL step, s"), ("whole_cpu_s", "whole RL step, CPU s"),
                       ("peak_rss_mb", f"peak RSS ({args.rss_steps} steps), MB")):
        a, b = res["plain"][key], res["fast"][key]
        print(f"  {label:32s}{a:10.3f}{b:10.3f}{a / b:8.2f}x")
    if ref_times:
        print(f"  sample_reference on the same prompts: {mean(ref_times):.3f} s ({mean(ref_cpu):.3f} CPU s) per"
              f" rollout (mean of {len(ref_times)}); the fast rollout is {ref_ratio:.1f}x faster"
              f" ({ref_ratio_cpu:.1f}x in CPU time) (target >= 10x)")
    print(f"  whole RL step: fast is {res['ratio_whole_step']:.2f}x faster than plain"
          f" ({res['plain']['whole_cpu_s'] / res['fast']['whole_cpu_s']:.2f}x in CPU time) (target >= 6x);"
          f" responses identical in every step")
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2) + "\n")


if __name__ == "__main__":
    main()
