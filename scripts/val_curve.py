"""Side run for the next confirmatory design: the verified pass@k curve of trained models on a validation set.

    python scripts/val_curve.py ROLE COUNT N MODEL [MODEL ...]
    python scripts/val_curve.py val_edge 200 256 base_chain_s0 base_chain_s1
    python scripts/val_curve.py n9k8 100 256 base_chain_s0      # a candidate cell beyond the sets

MODEL names models/<MODEL>.pt (run it in a workspace that has them, for instance the confirmatory run's); its
task is the checkpoint's. COUNT problems are drawn from data/<task>_<ROLE>.jsonl by a fixed rng (seed 9300), N
samples each at T = 1. A ROLE of the form nNkK is a candidate cell beyond the sets instead: COUNT fresh
problems of n N, k K (seed 9100, as in scripts/foothold_probe.py). One JSON line per model: verified and
answer-only pass@k for k = 1, 2, 4, ..., N, and the share of problems the model leaves unsolved in all of its N
verified samples.

Why: a claim read at pass@k needs the arm it compares against below the ceiling at that k, and the
new-solutions measure (`passk.new_solutions`) needs problems the base leaves unsolved in N samples. 1 - pass@k
is the expected share of problems with no verified sample among k, so the curve says which k and N leave room,
chosen on validation sets only. Writes nothing."""

from __future__ import annotations

import json
import random
import re
import sys
import time

import torch

from reasonrl import numerics
from reasonrl.checkpoint import load_checkpoint
from reasonrl.evaluate import answer_only, pass_curve_of, sample_set
from reasonrl.io import read_jsonl
from reasonrl.tasks import get_task

PICK_SEED = 9300  # the problems drawn from the validation file; no other side run uses it
CELL_SEED = 9100  # a candidate cell's fresh problems (the side runs' seed: no pipeline set uses it)


def powers_of_two(N: int) -> list[int]:
    """[1, 2, 4, ..., N], N itself last when it is not a power of two."""
    ks = [1 << i for i in range(N.bit_length()) if 1 << i <= N]
    return ks if ks[-1] == N else ks + [N]


def curve(model, problems: list, N: int, seed: int = 17) -> dict:
    """Verified and answer-only pass@k at k = 1, 2, 4, ..., N, and the share unsolved in all N verified samples."""
    responses = sample_set(model, problems, N, 1.0, seed)
    ks = powers_of_two(N)
    verified, counts = pass_curve_of(problems, responses, ks)
    answer, _ = pass_curve_of(problems, responses, ks, judge=answer_only)
    return {"pass_at_k": {k: round(v, 4) for k, v in verified.items()},
            "pass_at_k_answer": {k: round(v, 4) for k, v in answer.items()},
            "unsolved_share": round(sum(c == 0 for c in counts) / len(counts), 4)}


def problems_of(task, role: str, count: int) -> list:
    """COUNT problems of the validation role (data/<task>_<role>.jsonl), or of the fresh cell "nNkK"."""
    if cell := re.fullmatch(r"n(\d+)k(\d+)", role):
        return task.eval_set({"n": int(cell[1]), "k": int(cell[2])}, count, CELL_SEED, frozenset())
    rows = read_jsonl(f"data/{task.name}_{role}.jsonl")
    return [task.from_dict(d) for d in random.Random(PICK_SEED).sample(rows, min(count, len(rows)))]


def main(role: str, count: int, N: int, names: list[str]) -> None:
    numerics.pin(numerics.DEFAULT)
    torch.set_num_threads(1)
    for name in names:
        model, _ = load_checkpoint(f"models/{name}.pt", "cpu")
        task = get_task(model.cfg.task)
        problems = problems_of(task, role, count)
        t0 = time.perf_counter()
        out = curve(model, problems, N)
        print(json.dumps({"model": name, "task": task.name, "set": role, "problems": len(problems), "N": N, **out,
                          "seconds": round(time.perf_counter() - t0)}), flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:])
