"""Side run for cheaper bases (issue 73's second lever for the first command): hop bases of the committed recipe
(params.yaml `bases.cot_s2`, its seed replaced) trained with fewer optimizer steps, each measured as run 2
admitted its bases: verified pass@1 at T = 1 on 200 problems of data/hop_val_edge.jsonl (`val_curve.problems_of`,
its PICK_SEED), N samples per problem.

    python scripts/cheap_bases.py --steps 500 --seeds 0 1 2 3 [--N 64] [--section bases.cot_s2]

Why: a cheaper base changes every base's bytes, so it may replace today's only where the edge band admits the
same seeds and each seed's val_edge pass@1 stays within ±0.05 of the 1,000-step base's (docs/studies.md, "The hop
bases on this kind"); otherwise run 1 and run 2 no longer pilot the next run. The warmup and the cosine's floor
are the recipe's: the schedule is stretched over the shorter run, not cut. One thread, `numerics: avx2`, on the
CPU; one JSON line per seed. Writes nothing."""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bands and val_curve, sibling scripts
from bands import EDGE_EACH as BAND  # noqa: E402  (run 2's admission band on val_edge pass@1)
from val_curve import curve, problems_of  # noqa: E402

from reasonrl import numerics  # noqa: E402
from reasonrl.config import load_params  # noqa: E402
from reasonrl.pipeline import section  # noqa: E402
from reasonrl.pretrain import BaseConfig, train_base  # noqa: E402
from reasonrl.tasks import get_task  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, required=True, help="optimizer steps of each base (the recipe's: 1000)")
    ap.add_argument("--seeds", type=int, nargs="+", required=True)
    ap.add_argument("--N", type=int, default=64, help="samples per problem (pass@1 is their mean)")
    ap.add_argument("--count", type=int, default=200, help="val_edge problems")
    ap.add_argument("--section", default="bases.cot_s2", help="the params section whose recipe is trained")
    args = ap.parse_args(argv)
    if args.steps <= 0:
        ap.error("--steps must be positive")
    numerics.pin(numerics.DEFAULT)
    torch.set_num_threads(1)
    recipe = section(load_params("params.yaml"), args.section, BaseConfig)
    problems = problems_of(get_task(recipe.task), "val_edge", args.count)
    for seed in args.seeds:
        cfg = replace(recipe, train=replace(recipe.train, steps=args.steps, seed=seed))
        t0 = time.perf_counter()
        model, summary = train_base(cfg, None, "cpu", desc=f"seed {seed}")
        trained = time.perf_counter() - t0
        pass1 = curve(model, problems, args.N)["pass_at_k"]["1"]
        steps = summary["loss_curve"][-1][0] + 1  # the curve's last point is the last step trained
        print(json.dumps({"seed": seed, "steps": steps, "final_loss": summary["final_loss"],
                          "train_seconds": round(trained, 1), "val_edge_pass1": pass1, "N": args.N,
                          "problems": len(problems), "band": "in" if BAND[0] <= pass1 <= BAND[1] else "out"}),
              flush=True)


if __name__ == "__main__":
    main()
