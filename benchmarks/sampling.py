"""Speed of the KV-cache sampler against the full-recompute reference, side by side in one run.

    python benchmarks/sampling.py [--prompts 256] [--new 12] [--repeats 3]

256 prompts of ring size n = 12, 12 new tokens each, one thread, default model size. Prints the
best-of-repeats seconds of each sampler and their ratio; both outputs are checked to be identical.
"""

import argparse
import random
import time

import torch

from reasonrl.model import ModelConfig, TinyReasoner
from reasonrl.sampling import sample, sample_reference
from reasonrl.task import make_problem


def best_time(fn, repeats: int) -> tuple[float, list[str]]:
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prompts", type=int, default=256)
    ap.add_argument("--new", type=int, default=12)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(1)
    rng = random.Random(0)
    prompts = [make_problem(rng, 12, rng.randint(3, 6)).prompt for _ in range(args.prompts)]
    model = TinyReasoner(ModelConfig(), generator=torch.Generator().manual_seed(0)).eval()

    def run(fn):
        return lambda: fn(model, prompts, args.new, 1.0, torch.Generator().manual_seed(1))

    t_ref, out_ref = best_time(run(sample_reference), args.repeats)
    t_kv, out_kv = best_time(run(sample), args.repeats)
    assert out_ref == out_kv, "KV-cache sampler output differs from the reference"
    print(f"{args.prompts} prompts (n = 12), {args.new} new tokens, 1 thread, best of {args.repeats}")
    print(f"  sample_reference  {t_ref:8.3f} s")
    print(f"  sample (KV cache) {t_kv:8.3f} s")
    print(f"  speed ratio       {t_ref / t_kv:8.1f}x   (outputs identical)")


if __name__ == "__main__":
    main()
