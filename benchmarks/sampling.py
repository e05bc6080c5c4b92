"""Speed of the samplers side by side in one run, on the RL rollout shape: G samples of each of B prompts.

    python benchmarks/sampling.py [--prompts 32] [--group 8] [--repeats 3] [--init models/base_cot.pt]

B = 32 prompts with n in [4, 12] (k <= 7, as in RL), each repeated G = 8 times; max_new = largest k + 5;
temperature 1; one thread; default model size (the trained cot base when it exists, so that responses
end with `$` and early stopping can happen; else a fresh model). Prints the best-of-repeats seconds of:

  sample_reference   full recompute of the sequence for every token (the reference)
  sample             KV cache, every row prefilled separately (the plain path)
  sample_groups      one prefill per prompt, G rows decoded against it, no early stop
  sample_groups      the same, stopping once every row has written `$` (what RL and evaluation use)

and their speed ratios against the reference. The first three outputs are checked to be identical, and the
responses (cut at `$`) of the fourth, and the generator state every sampler leaves behind.
"""

import argparse
import random
import time
from pathlib import Path

import torch

from reasonrl import numerics
from reasonrl.checkpoint import load_checkpoint
from reasonrl.model import ModelConfig, TinyReasoner
from reasonrl.sampling import response_of, sample, sample_groups, sample_reference
from reasonrl.tasks.hop import make_problem


def best_time(fn, repeats: int):
    best, out = float("inf"), None
    for _ in range(repeats):
        gen = torch.Generator().manual_seed(1)
        t0 = time.perf_counter()
        out = fn(gen)
        best = min(best, time.perf_counter() - t0)
    return best, out, gen


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prompts", type=int, default=32)
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--ref-repeats", type=int, default=1, help="repeats of the (slow) reference")
    ap.add_argument("--init", default="models/base_cot.pt")
    numerics.add_argument(ap)
    args = ap.parse_args()
    numerics.pin(args.numerics)
    torch.set_num_threads(1)
    rng = random.Random(0)
    probs = []
    for _ in range(args.prompts):
        n = rng.randint(4, 12)
        probs.append(make_problem(rng, n, rng.randint(1, min(n - 1, 7))))
    prompts = [p.prompt for p in probs]
    flat = [p for p in prompts for _ in range(args.group)]
    max_new = max(p.k for p in probs) + 5
    if Path(args.init).exists():
        model, source = load_checkpoint(args.init)[0], args.init
    else:
        model = TinyReasoner(ModelConfig(), generator=torch.Generator().manual_seed(0)).eval()
        source = "an untrained model (no checkpoint found)"

    G = args.group
    runs = [
        ("sample_reference", lambda g: sample_reference(model, flat, max_new, 1.0, g), args.ref_repeats),
        ("sample (KV cache)", lambda g: sample(model, flat, max_new, 1.0, g), args.repeats),
        ("sample_groups, no early stop",
         lambda g: sample_groups(model, prompts, G, max_new, 1.0, g, stop_at_end=False), args.repeats),
        ("sample_groups (used by RL)", lambda g: sample_groups(model, prompts, G, max_new, 1.0, g), args.repeats),
    ]
    res = [(name, *best_time(fn, reps)) for name, fn, reps in runs]
    ref_out, ref_gen = res[0][2], res[0][3]
    for name, _, out, gen in res:
        assert torch.equal(gen.get_state(), ref_gen.get_state()), f"{name}: generator state differs"
        assert [response_of(o) for o in out] == [response_of(o) for o in ref_out], f"{name}: responses differ"
    assert res[1][2] == ref_out and res[2][2] == ref_out, "full continuations differ"
    steps = len(res[3][2][0])
    print(f"{args.prompts} prompts x {G} samples (n in [4, 12]), max_new {max_new}, temperature 1, 1 thread,"
          f" from {source}")
    t_ref = res[0][1]
    for name, t, _, _ in res:
        print(f"  {name:30s}{t:8.3f} s   {t_ref / t:6.1f}x")
    print(f"  early stop after {steps} of {max_new} steps; outputs identical, generator states identical")


if __name__ == "__main__":
    main()
