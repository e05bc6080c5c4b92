"""Side runs for choosing the starting base: train one cot base with the given recipe and print its
greedy accuracy (and sampled pass@1 at temperature 1 on n12, n16) every `every` steps on fresh problems
(n = 8, 12, 16 with k in 3..6, and n = 16 with k = 7; 300/300/300/75 problems drawn from rng keys
"val-<n>-<ks>", not from the test sets' keys).

    python scripts/base_curve.py NAME seed=0 steps=3000 every=250 L=2 lr=1e-3 bs=64 n=4,8

One thread (the `threads` param's default). Writes nothing; the rows it prints are the measurement.
"""

import random
import sys
import time

import torch

from reasonrl import numerics
from reasonrl.evaluate import greedy_accuracy, pass_curve
from reasonrl.model import ModelConfig, TinyReasoner
from reasonrl.pretrain import PhaseConfig, make_pairs, masked_loss, optimize
from reasonrl.tasks import get_task
from reasonrl.tasks.hop import make_problem
from reasonrl.tokens import encode_pairs


def val_set(n: int, ks: list[int], count: int = 75):
    rng = random.Random(f"val-{n}-{ks}")
    return [make_problem(rng, n, k) for k in ks for _ in range(count)]


def main(name: str, kv: dict[str, str]) -> None:
    numerics.pin(numerics.DEFAULT)
    torch.set_num_threads(1)
    lo, hi = map(int, kv.get("n", "4,8").split(","))
    steps, seed, every = int(kv.get("steps", 3000)), int(kv.get("seed", 0)), int(kv.get("every", 250))
    cfg = PhaseConfig(steps=steps, batch_size=int(kv.get("bs", 64)), lr=float(kv.get("lr", 1e-3)),
                      warmup=int(kv.get("warmup", 100)), weight_decay=float(kv.get("wd", 0.01)),
                      n_range=(lo, hi), seed=seed)
    sets = {"n8": val_set(8, [3, 4, 5, 6]), "n12": val_set(12, [3, 4, 5, 6]), "n16": val_set(16, [3, 4, 5, 6]),
            "n16k7": val_set(16, [7])}
    model = TinyReasoner(ModelConfig(n_layers=int(kv.get("L", 2))), generator=torch.Generator().manual_seed(seed))
    rng = random.Random(cfg.seed)
    t0 = time.time()

    def report(step: int, loss: float) -> None:
        model.eval()
        row = {"step": step, "loss": round(loss, 5), "seconds": round(time.time() - t0)}
        row |= {k: round(greedy_accuracy(model, v)["acc"], 3) for k, v in sets.items()}
        # sampled accuracy at temperature 1 (pass@1 over 8 samples), what RL's sharpening can raise
        row |= {f"T1_{k}": round(pass_curve(model, sets[k], 8, [1])[0]["1"], 3) for k in ("n12", "n16")}
        print(name, row, flush=True)
        model.train()

    last = {}

    def loss_at(step: int) -> torch.Tensor:
        if step and step % every == 0:  # the weights after `step` updates; greedy decoding draws nothing
            report(step, last["loss"])
        loss = masked_loss(model, *encode_pairs(make_pairs(rng, cfg.batch_size, get_task("hop"), cfg, 1.0)))
        last["loss"] = loss.item()
        return loss

    optimize(model, cfg, loss_at, name)  # the training loop of every base (reasonrl.pretrain)
    if steps % every == 0:
        report(steps, last["loss"])

if __name__ == "__main__":
    main(sys.argv[1], dict(a.split("=", 1) for a in sys.argv[2:]))
