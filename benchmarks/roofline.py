"""Each phase of an RL step and of an evaluation against the machine's own limit, in one run, one thread.

    python benchmarks/roofline.py [--init models/base_cot.pt] [--reps 3] [--eval-problems 1000] [--passk-N 256]

For each phase: the FLOPs of its matrix products (linear layers, matmuls and both products of each
attention) by shape arithmetic, 2 M K N each, as a dispatch mode records them (checked once against
torch.utils.flop_counter.FlopCounterMode, which on this CPU build counts no attention); its measured
seconds (median of --reps); achieved GFLOP/s =
FLOPs / seconds; and its shape-matched limit: every matmul the phase ran, timed alone as torch.mm /
torch.bmm at the same shapes (what the hardware does on exactly that work with nothing around it), giving
limit GFLOP/s = FLOPs / (sum of those times). ratio = achieved / limit: 1 means the phase is as fast as its
own matmuls; far below 1 means time goes elsewhere (dispatch of many tiny ops, memory traffic, Python).

Phases (the default job: B 32 x G 8, n in [4, 16], k <= 7, from the trained cot base when it exists):
- rollout/prefill: the prompts through the model once each (`prefill`);
- rollout/decode: `sample_groups` minus its prefill (the token-by-token loop);
- train/fwd+bwd: the training forward with its graph and the backward (`shared_token_logprobs`);
- ref/forward: the reference's no-grad forward on the same batch (the KL term);
- eval/greedy: greedy decoding of --eval-problems n16 problems;
- eval/sampled: --passk-N samples for each of 8 problems (the pass@k sampler), also given as samples/s.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections import Counter
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

from reasonrl import numerics
from reasonrl.checkpoint import load_checkpoint
from reasonrl.evaluate import greedy_responses, sample_set
from reasonrl.logprobs import prefill
from reasonrl.model import ModelConfig, TinyReasoner
from reasonrl.numerics import machine
from reasonrl.rl import algorithm as A
from reasonrl.rl.batch import Batch
from reasonrl.rl.job import make_job
from reasonrl.rl.layout import FAST
from reasonrl.sampling import _prompt_batch, response_of, sample_groups
from reasonrl.tasks import get_task

aten = torch.ops.aten


class MatmulShapes(TorchDispatchMode):
    """Records the (batch, M, K, N) of every matrix product that runs inside it: linear layers, matmuls and
    the two products of each attention (scores q k^T, then weights @ v), five for its backward. Under inference
    mode the composite ops (linear, matmul, attention) arrive whole; otherwise as mm / addmm / bmm and CPU
    flash attention."""

    def __init__(self):
        super().__init__()
        self.shapes: Counter = Counter()

    def add(self, a: torch.Size, b: torch.Size, kind: str = "matmul") -> None:  # a (..., M, K) @ b (..., K, N)
        batch = torch.broadcast_shapes(a[:-2], b[:-2]).numel() if len(a) > 2 or len(b) > 2 else 1
        self.shapes[(kind, batch, a[-2], a[-1], b[-1])] += 1

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in (aten.mm.default, aten.bmm.default, aten.matmul.default) and args[0].dim() >= 2 \
                and args[1].dim() >= 2:
            self.add(args[0].shape, args[1].shape)
        elif func in (aten.addmm.default, aten.baddbmm.default):
            self.add(args[1].shape, args[2].shape)
        elif func is aten.linear.default:  # x (..., K) @ weight (N, K)^T
            x, w = args[0], args[1]
            self.add(torch.Size([x.shape[:-1].numel(), x.shape[-1]]), torch.Size([w.shape[1], w.shape[0]]))
        elif func in (aten.scaled_dot_product_attention.default,
                      aten._scaled_dot_product_flash_attention_for_cpu.default):
            self.attention(args[0], args[1], after_scores=1)
        elif func is aten._scaled_dot_product_flash_attention_for_cpu_backward.default:
            # five products, by FlopCounterMode's formula for an attention's backward (it registers none for this
            # CPU kernel): the scores recomputed, then the gradients of the weights, of v, of q and of k
            self.attention(args[1], args[2], after_scores=4)  # args: grad_out, q, k, v, ...
        return func(*args, **kwargs)

    def attention(self, q: torch.Tensor, k: torch.Tensor, after_scores: int) -> None:
        """q (B, H, T, hd), k (B, H, S, hd): the scores q k^T, then `after_scores` products of the scores' shape
        (B, H, T, S) with one of k's (weights @ v in the forward)."""
        self.add(q.shape, k.shape[:-2] + (k.shape[-1], k.shape[-2]), "attention")
        for _ in range(after_scores):
            self.add(q.shape[:-1] + (k.shape[-2],), k.shape, "attention")


def shape_flops(shapes: Counter, kinds: tuple[str, ...] = ("matmul", "attention")) -> int:
    """2 M K N per product, summed: the FLOPs of the recorded matrix products of the given kinds."""
    return sum(2 * b * m * k * n * count for (kind, b, m, k, n), count in shapes.items() if kind in kinds)


def mm_seconds(shapes: Counter, reps: int) -> float:
    """Seconds torch.mm / torch.bmm take on exactly these shapes and counts, each timed alone (median)."""
    total = 0.0
    for (_, b, m, k, n), count in shapes.items():
        x, y = (torch.randn(m, k), torch.randn(k, n)) if b == 1 else (torch.randn(b, m, k), torch.randn(b, k, n))
        op = torch.mm if b == 1 else torch.bmm
        inner = max(1, int(2e6 // max(1, b * m * k * n)))  # enough calls to time a tiny product
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            for _ in range(inner):
                op(x, y)
            times.append((time.perf_counter() - t0) / inner)
        total += statistics.median(times) * count
    return total


def measure(fn, reps: int) -> tuple[float, int, Counter, int]:
    """(median seconds, FLOPs by shape arithmetic, the products' shapes, FlopCounterMode's count) of fn()."""
    with FlopCounterMode(display=False) as counter, MatmulShapes() as seen:
        fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), shape_flops(seen.shapes), seen.shapes, counter.get_total_flops()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--init", default="models/base_cot.pt")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--eval-problems", type=int, default=1000)
    ap.add_argument("--passk-N", type=int, default=256)
    numerics.add_argument(ap)
    args = ap.parse_args()
    numerics.pin(args.numerics)
    torch.set_num_threads(1)
    if Path(args.init).exists():
        policy, what = load_checkpoint(args.init)[0], args.init
    else:
        policy, what = TinyReasoner(ModelConfig(), generator=torch.Generator().manual_seed(0)).eval(), "untrained"
    ref = load_checkpoint(args.init)[0] if Path(args.init).exists() else policy
    job = make_job({}, {})
    rng, gen = random.Random(0), torch.Generator().manual_seed(0)
    probs = A.draw_problems(rng, job, job.B)
    prompts, budget = [p.prompt for p in probs], max(p.budget for p in probs)
    X, lens = _prompt_batch(policy, prompts, budget)

    def rollout():
        with torch.inference_mode():
            return sample_groups(policy, prompts, job.G, budget, job.temperature, gen)

    def prompts_once():
        with torch.inference_mode():
            return prefill(policy, X[:, : X.shape[1] - budget], lens)

    responses = rollout()
    batch = Batch([p for p in probs for _ in range(job.G)], [response_of(r) for r in responses],
                    torch.zeros(len(responses)), torch.zeros(len(responses)), job.G, 0.0)
    seqs = FAST.build(batch, "cpu", job.temperature)

    def train():
        policy.zero_grad(set_to_none=True)
        logp, _ = seqs.logprobs(policy)
        (-(logp * seqs.m).sum()).backward()

    def reference():
        with torch.no_grad():
            return seqs.logprobs(ref)

    task = get_task("hop")
    evals = [p for k in (3, 4, 5, 6) for p in task.eval_set({"n": 16, "k": k}, args.eval_problems // 4, seed=5)]
    few = evals[:8]
    phases = {"rollout/prefill": prompts_once, "rollout/all": rollout, "train/fwd+bwd": train,
              "ref/forward": reference, "eval/greedy": lambda: greedy_responses(policy, evals),
              "eval/sampled": lambda: sample_set(policy, few, args.passk_N, seed=1)}
    print(f"machine  {machine()}; numerics {args.numerics}; model {what}; one thread", flush=True)
    rows = {}
    for name, fn in phases.items():
        seconds, flops, shapes, counted = measure(fn, args.reps)
        rows[name] = (seconds, flops, shapes)
        if name == "train/fwd+bwd":  # the two counts against each other, once (the counter skips attention here)
            print(f"  check on {name}: FlopCounterMode {counted:,} FLOPs; shape arithmetic {flops:,}, of which "
                  f"{shape_flops(shapes, ('matmul',)):,} outside attention", flush=True)
    s_all, f_all, sh_all = rows.pop("rollout/all")
    s_pre, f_pre, sh_pre = rows["rollout/prefill"]
    rows = {"rollout/prefill": rows.pop("rollout/prefill"),
            "rollout/decode": (s_all - s_pre, f_all - f_pre, sh_all - sh_pre), **rows}
    print(f"\n{'phase':16s} {'GFLOP':>8s} {'seconds':>8s} {'GFLOP/s':>8s} {'limit':>8s} {'ratio':>6s}")
    for name, (seconds, flops, shapes) in rows.items():
        limit_s = mm_seconds(shapes, args.reps)
        achieved, limit = flops / seconds / 1e9, flops / limit_s / 1e9 if limit_s else float("nan")
        print(f"{name:16s} {flops / 1e9:8.3f} {seconds:8.3f} {achieved:8.2f} {limit:8.2f} {achieved / limit:6.2f}")
    s_eval = rows["eval/sampled"][0]
    print(f"\neval/sampled: {len(few) * args.passk_N / s_eval:,.0f} samples/s at N = {args.passk_N}; "
          f"the rollout: {job.B * job.G / s_all:,.0f} samples/s")


if __name__ == "__main__":
    main()
