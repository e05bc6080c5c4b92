"""Side run for the edge-of-competence design: train one cot base of a task on a size range (as
`bases.cot` does: 3 layers, 1,000 steps, batch 64, lr 1e-3, every k in 1..n-1 unless k_max), then measure
sampled pass@1 and pass@32 at T = 1 on validation cells (n, k) beyond it, and pass@256 on the far cells.

    python scripts/edge_probe.py seed=0 n=4,8 edge=12:3-6,14:3-6 far=16:7,16:9 [steps=1000] [count=100]
        [task=hop] [k_max=K] [max_len=96] [share=0.01 beyond=9,16 beyond_k=7 [beyond_kmin=7]]

Cells are fresh problems (seed 9100, which no test or validation set of the pipeline uses). Prints one
JSON line per cell; writes nothing. The design of the edge study is chosen from these lines
(docs/studies.md, "Edge of competence: the side runs").
"""

import json
import random
import sys
import time

import torch

from reasonrl import numerics
from reasonrl.evaluate import pass_curve
from reasonrl.model import ModelConfig, TinyReasoner
from reasonrl.pretrain import Exposure, PhaseConfig, make_pairs, masked_loss, optimize
from reasonrl.tasks import cell, get_task
from reasonrl.tokens import encode_pairs


def cells(text: str) -> list[tuple[int, int]]:
    """"12:3-6,16:9" -> [(12, 3), (12, 4), (12, 5), (12, 6), (16, 9)]."""
    out = []
    for part in text.split(","):
        n, ks = part.split(":")
        lo, _, hi = ks.partition("-")
        out += [(int(n), k) for k in range(int(lo), int(hi or lo) + 1)]
    return out


def exposure_of(kv: dict[str, str]) -> Exposure:
    """The exposure of `share=.. beyond=lo,hi beyond_k=K beyond_kmin=K` (no share: none); foothold_probe.py too."""
    return Exposure(share=float(kv.get("share", 0)),
                    n_range=tuple(map(int, kv["beyond"].split(","))) if "beyond" in kv else None,
                    k_min=int(kv.get("beyond_kmin", 1)), k_max=int(kv["beyond_k"]) if "beyond_k" in kv else None)


def main(kv: dict[str, str]) -> None:
    numerics.pin(numerics.DEFAULT)
    torch.set_num_threads(1)
    seed, steps, count = int(kv.get("seed", 0)), int(kv.get("steps", 1000)), int(kv.get("count", 100))
    lo, hi = map(int, kv.get("n", "4,8").split(","))
    task = get_task(kv.get("task", "hop"))
    k_max = int(kv["k_max"]) if "k_max" in kv else None
    exposure = exposure_of(kv)
    cfg = PhaseConfig(steps=steps, batch_size=64, lr=1e-3, warmup=100, weight_decay=0.01, n_range=(lo, hi),
                      k_max=k_max, exposure=exposure, seed=seed)
    model = TinyReasoner(ModelConfig(n_layers=3, task=task.name, max_len=int(kv.get("max_len", 96))),
                         generator=torch.Generator().manual_seed(seed))
    rng = random.Random(cfg.seed)
    t0 = time.time()
    last = {}

    def loss_at(step: int) -> torch.Tensor:
        loss = masked_loss(model, *encode_pairs(make_pairs(rng, cfg.batch_size, task, cfg, 1.0)))
        last["loss"] = loss.item()
        return loss

    optimize(model, cfg, loss_at, f"n{lo}-{hi} s{seed}")
    model.eval()
    design = f"n={lo},{hi}" + (f" k<={k_max}" if k_max else "") + (
        f" +{exposure.share} of {kv['beyond']}" if exposure.share else "")
    base = {"task": task.name, "design": design, "seed": seed, "steps": steps, "loss": round(last["loss"], 5),
            "train_seconds": round(time.time() - t0)}
    for role, spec, N, ks in (("edge", kv.get("edge", "12:3-6"), 32, [1, 32]),
                              ("far", kv.get("far", "16:9"), 256, [1, 32, 256])):
        for n, k in cells(spec):
            # a seed of its own per cell (eval_set keys its rng with n, k and seed)
            probs = task.eval_set(cell(task, n, k), count if role == "edge" else count // 2, seed=9100)
            curve, _ = pass_curve(model, probs, N, ks, temperature=1.0, seed=seed + 17)
            print(json.dumps({**base, "role": role, "n": n, "k": k, "problems": len(probs),
                              **{f"pass@{j}": round(v, 4) for j, v in curve.items()}}), flush=True)


if __name__ == "__main__":
    main(dict(a.split("=", 1) for a in sys.argv[1:]))
