"""Chunk sizes of the evaluation decoders, side by side in one run: seconds and peak memory.

    python benchmarks/eval_chunks.py [--init models/base_cot.pt] [--n 16] [--per-k 250]

On an evaluation-sized set (ring size n, k = 3..6, per-k problems each: 1,000 by default, like n16 and
val_n16), for each chunk size:

  greedy      evaluate.greedy_responses (prompts per chunk), best of two after a warm-up
  sample N=8  evaluate.sampling's sample_responses as sample_set calls it (rows per chunk), N = 8 and 32

Each chunk size runs in a fresh child process, so its peak RSS (ru_maxrss) is its own. Greedy responses
are checked to be the same at every chunk size; sampled ones differ by design (the generator's stream is
consumed chunk by chunk), so only their time is compared. One thread.
"""

import argparse
import multiprocessing as mp
import resource
import time
from pathlib import Path

import torch

from reasonrl import numerics

GREEDY_CHUNKS = (1024, 256, 128, 64)
SAMPLE_CHUNKS = (2048, 1024, 512, 256)


def _child(init: str, n: int, per_k: int, kind: str, chunk: int, N: int, out) -> None:
    torch.set_num_threads(1)
    from reasonrl.checkpoint import load_checkpoint
    from reasonrl.evaluate import greedy_responses
    from reasonrl.model import ModelConfig, TinyReasoner
    from reasonrl.sampling import sample_responses
    from reasonrl.tasks.hop import make_eval_set

    model = (load_checkpoint(init, "cpu")[0] if Path(init).exists()
             else TinyReasoner(ModelConfig(), generator=torch.Generator().manual_seed(0)).eval())
    problems = [p for k in range(3, 7) for p in make_eval_set(n, k, per_k, seed=21)]
    if kind == "greedy":
        greedy_responses(model, problems[:64], chunk=chunk)  # warm-up
        best, resp = float("inf"), None
        for _ in range(2):
            t0 = time.perf_counter()
            resp = greedy_responses(model, problems, chunk=chunk)
            best = min(best, time.perf_counter() - t0)
    else:
        t0 = time.perf_counter()
        resp = sample_responses(model, problems, N, 1.0, torch.Generator().manual_seed(7), chunk=chunk)
        best = time.perf_counter() - t0
    out.put((best, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024, resp if kind == "greedy" else None))


def measure(init: str, n: int, per_k: int, kind: str, chunk: int, N: int = 0):
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(init, n, per_k, kind, chunk, N, q))
    p.start()
    result = q.get()
    p.join()
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--init", default="models/base_cot.pt")
    ap.add_argument("--n", type=int, default=16)
    ap.add_argument("--per-k", type=int, default=250)
    numerics.add_argument(ap)
    a = ap.parse_args()
    numerics.pin(a.numerics)
    print(f"model {a.init if Path(a.init).exists() else '(fresh)'}, n = {a.n}, {4 * a.per_k} problems, one thread")
    first = None
    for chunk in GREEDY_CHUNKS:
        t, rss, resp = measure(a.init, a.n, a.per_k, "greedy", chunk)
        first = resp if first is None else first
        print(f"greedy     chunk {chunk:5d} prompts: {t:6.2f} s  peak RSS {rss:5d} MB  same responses: {resp == first}")
    for N in (8, 32):
        for chunk in SAMPLE_CHUNKS:
            t, rss, _ = measure(a.init, a.n, a.per_k, "sample", chunk, N)
            print(f"sample N={N:2d} chunk {chunk:5d} rows:    {t:6.2f} s  peak RSS {rss:5d} MB")


if __name__ == "__main__":
    main()
