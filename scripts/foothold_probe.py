"""Side run for the confirmatory design's footholds: train one cot base (as `bases.cot` / `bases.chain_s0` do:
3 layers, batch 64, lr 1e-3) with an optional share of exposure beyond its range, then measure on the
pipeline's validation sets (data/<task>_val_edge.jsonl, data/<task>_val_far.jsonl; knobs are chosen there,
never on test sets) the sampled pass@1 on val_edge and pass@1 / pass@256 on val_far at T = 1, each both
answer-only and trace-verified (the answer right and every trace step right).

    python scripts/foothold_probe.py task=chain seed=0 [steps=500] [n=4,8] [k_max=6] [max_len=160]
        [share=0.005 beyond=8,9 beyond_k=7 [beyond_kmin=7] [window=W]] [edge_count=200] [far_count=60] [edge_N=16]
        [cells=10:6,12:6 [cell_count=100]] [device=cuda]

`window`: the exposure in the first W steps only (default: every step).

`cells`: candidate edge cells (n:k) beyond the validation sets, on fresh problems (seed 9100, which no test or
validation set of the pipeline uses), sampled pass@1 with edge_N samples each.

Prints one JSON line per set; writes nothing. docs/studies.md ("Footholds") records the lines that chose
each knob."""

from __future__ import annotations

import dataclasses
import json
import random
import sys
import time

import torch
from edge_probe import exposure_of  # scripts/ is this script's own folder on sys.path

from reasonrl import numerics
from reasonrl.evaluate import pass_at_k, sample_set
from reasonrl.io import read_jsonl
from reasonrl.model import ModelConfig, TinyReasoner
from reasonrl.pretrain import Exposure, PhaseConfig, make_pairs, masked_loss, optimize
from reasonrl.tasks import get_task
from reasonrl.tasks.base import verified
from reasonrl.tokens import encode_pairs


def measure(model, problems, N: int, ks: list[int], seed: int) -> dict:
    responses = sample_set(model, problems, N, 1.0, seed)
    out = {}
    for name, ok in (("answer", lambda p, r: p.is_correct(r)), ("verified", verified)):
        counts = [sum(ok(p, r) for r in rs) for p, rs in zip(problems, responses)]
        out |= {f"{name}_pass@{k}": round(sum(pass_at_k(N, c, k) for c in counts) / len(counts), 4) for k in ks}
    return out


def main(kv: dict[str, str]) -> None:
    numerics.pin(numerics.DEFAULT)
    torch.set_num_threads(1)
    task = get_task(kv.get("task", "chain"))
    seed, steps = int(kv.get("seed", 0)), int(kv.get("steps", 500))
    lo, hi = map(int, kv.get("n", "4,8").split(","))
    k_max = int(kv["k_max"]) if "k_max" in kv else (6 if task.name == "chain" else None)
    exposure = exposure_of(kv)
    cfg = PhaseConfig(steps=steps, batch_size=64, lr=1e-3, warmup=100, weight_decay=0.01, n_range=(lo, hi),
                      k_max=k_max, exposure=exposure, seed=seed)
    max_len = int(kv.get("max_len", 160 if task.name == "chain" else 96))
    device = kv.get("device", "cpu")  # side runs only: the pipeline's own bases run where `device` says
    model = TinyReasoner(ModelConfig(n_layers=3, task=task.name, max_len=max_len),
                         generator=torch.Generator().manual_seed(seed)).to(device)
    rng = random.Random(cfg.seed)
    t0 = time.time()

    # window=W: the exposure only in the first W steps, then none (does a foothold fade by degrees?)
    window, plain = int(kv.get("window", steps)), dataclasses.replace(cfg, exposure=Exposure())

    def loss_at(step: int) -> torch.Tensor:
        c = cfg if step < window else plain
        return masked_loss(model, *encode_pairs(make_pairs(rng, c.batch_size, task, c, 1.0), device))

    optimize(model, cfg, loss_at, f"{task.name} s{seed}")
    model.eval()
    head = {"device": device, "task": task.name, "seed": seed, "steps": steps, "k_max": k_max, "share": exposure.share,
            "beyond": kv.get("beyond"), "beyond_kmin": kv.get("beyond_kmin"), "beyond_k": kv.get("beyond_k"),
            "window": window, "train_seconds": round(time.time() - t0)}
    pick = random.Random(9200)  # one rng for both sets: the val_far subsample depends on edge_count, so keep it
    # to repeat a recorded line
    for role, count, N, ks in (("val_edge", int(kv.get("edge_count", 200)), int(kv.get("edge_N", 16)), [1]),
                               ("val_far", int(kv.get("far_count", 60)), 256, [1, 256])):
        rows = read_jsonl(f"data/{task.name}_{role}.jsonl")
        problems = [task.from_dict(d) for d in pick.sample(rows, min(count, len(rows)))]
        print(json.dumps({**head, "set": role, "problems": len(problems), "N": N,
                          **measure(model, problems, N, ks, seed + 17)}), flush=True)
    for cell in filter(None, kv.get("cells", "").split(",")):
        n, k = map(int, cell.split(":"))
        problems = task.eval_set({"n": n, "k": k}, int(kv.get("cell_count", 100)), 9100, frozenset())
        print(json.dumps({**head, "set": f"n{n}k{k}", "problems": len(problems), "N": int(kv.get("edge_N", 16)),
                          **measure(model, problems, int(kv.get("edge_N", 16)), [1], seed + 17)}), flush=True)


if __name__ == "__main__":
    main(dict(a.split("=", 1) for a in sys.argv[1:]))
