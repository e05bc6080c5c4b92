"""Side run for choosing a pass@k set: sample 32 responses per problem at temperature 1 from each model and
print its pass@k for k = 1, 2, 4, ..., 32 on a validation-seeded set (seed 41, the `data.validation`
seed of the validation roles; every problem of every hop test set in params.yaml `data.hop` is skipped).

    python scripts/passk_sets.py N K1,K2,... COUNT MODEL [MODEL ...]
    python scripts/passk_sets.py 16 9 500 base_cot rl_grpo_s0 rl_rft_s0

COUNT problems per hop count; MODEL names models/<MODEL>.pt. One thread. Writes nothing; the rows it
prints are the measurement.
"""

import sys
import time

import torch
import yaml

from reasonrl import numerics
from reasonrl.checkpoint import load_checkpoint
from reasonrl.evaluate import EvalConfig, sampling_report
from reasonrl.pipeline import EvalSetConfig, build_data_sets, build_eval_set, data_config

VALIDATION_SEED = 41


def main(n: int, ks: list[int], count: int, models: list[str]) -> None:
    numerics.pin(numerics.DEFAULT)
    torch.set_num_threads(1)
    sets = data_config(yaml.safe_load(open("params.yaml")), "hop")
    tests = build_data_sets("hop", {r: c for r, c in sets.items() if not r.startswith("val_")})
    tested = frozenset(p.key for problems in tests.values() for p in problems)
    problems = build_eval_set("hop", EvalSetConfig(ns=[n], ks=ks, count=count, seed=VALIDATION_SEED), tested)
    cfg = EvalConfig(passk_N=32, passk_ks=[1, 2, 4, 8, 16, 32], temperature=1.0, seed=7, entropy_samples=1)
    for name in models:
        model, _ = load_checkpoint(f"models/{name}.pt", "cpu")
        t0 = time.perf_counter()
        rep = sampling_report(model, problems, cfg)
        curve = " ".join(f"{rep['pass_at_k'][str(k)]:.3f}" for k in cfg.passk_ks)
        print(f"n={n} ks={ks} {len(problems)} problems  {name:<12} pass@1..32: {curve}  "
              f"({time.perf_counter() - t0:.1f} s)", flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    main(int(sys.argv[1]), [int(k) for k in sys.argv[2].split(",")], int(sys.argv[3]), sys.argv[4:])
