"""Run 2's gates: the preconditions of its claims, measured on validation side runs before the run.

    python scripts/gates.py shao      cot cot_s1 ... cot_s7          # greedy verified val_edge accuracy per base
    python scripts/gates.py crossing  cot cot_s1 ... --steps 10 --lr 1e-4   # an RL arm against its base, k 1 and 256
    python scripts/gates.py clip      cot --lr 1e-5 --mu 2 --steps 20 --eps-high 0.28 --seeds 0 1
    python scripts/gates.py exposure  exp_s0 exp_s1 ...                # val_far pass@1 and pass@256 per exposure base
    python scripts/gates.py room      cot --lr 3e-6 --steps 80          # Dr. GRPO: room between budget and wrong length
    python scripts/gates.py corruption chain_s0 ... --steps 80 --N 16   # chain: answer-only RL's corrupted traces

Run it in a workspace holding `models/base_<name>.pt` (`reasonrl repro base@<name>`). Each gate prints one JSON
line per unit it measures and a last line `{"gate": ..., "value": ..., "threshold": ..., "passes": ...}` with the
threshold that `params.yaml` fixes under `studies.gates` (the pre-registration). Side runs train with the rl:
defaults and the overrides printed, in memory; their seeds (9400 + i) and the problems drawn from the validation
files (`val_curve.PICK_SEED`) are used by no pipeline stage. Only validation sets are read: a gate is a knob of
the design, and the test sets report.

Why each gate (issue 70, item 4):
- `shao`: a spurious reward can only "still raise accuracy" from a base that already solves the cell greedily;
  run 1's Shao arm started from `base_cot`, greedy 0.25 on edge. Bases are admitted in seed order.
- `crossing`: Yue's crossing (RL above the base at k = 1, the base above RL at the largest k) can be read only
  on an arm below the ceiling at the largest k, on every base; run 1's GRPO edge reaches 1.000 from k = 4.
- `clip`: clip-higher can only differ from the symmetric clip where the clip binds on a stated share of tokens;
  in run 1 the two arms clipped 0.35-0.39% and 0.28-0.33% of tokens.
- `exposure`: the exposure claim reads bases with a foothold on the far cells (some pass@256, not mastery).
- `room`: Dr. GRPO's length claim needs wrong responses that could grow; in run 1 they were 7.6-9.5 characters
  against a budget of k + 5 = 12.
- `corruption`: the trace-verified reward can only keep traces sound where the answer-only reward corrupts them
  (the sampled answer right, its trace wrong); in run 1 GRPO on chain's edge left 0.085-0.613 of samples so.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # val_curve, a sibling script

from val_curve import curve, problems_of  # noqa: E402

from reasonrl import numerics  # noqa: E402
from reasonrl.checkpoint import load_checkpoint  # noqa: E402
from reasonrl.config import load_params  # noqa: E402
from reasonrl.evaluate import greedy_accuracy  # noqa: E402
from reasonrl.pipeline import read_problems  # noqa: E402
from reasonrl.rl.job import make_job  # noqa: E402
from reasonrl.rl.run import run_job  # noqa: E402
from reasonrl.studies.gatekeeping import GateSpec, foothold, gate_specs  # noqa: E402
from reasonrl.tasks import get_task  # noqa: E402

SIDE_SEED = 9400  # the side runs' RL seeds: 9400 + i, used by no pipeline stage
EDGE_PLACEMENT = {"n_range": [15, 16], "k_min": 7, "k_max": 7}  # the hop edge cell the study runs train on
CHAIN_EDGE = {"n_range": [8, 9], "k_min": 7, "k_max": 7}  # chain's edge cell (runs_noeval.chainedge_edge_*)


def emit(row: dict) -> None:
    print(json.dumps(row), flush=True)


def verdict(name: str, value: float, gates: dict[str, GateSpec]) -> dict:
    """The closing line: the value against the pre-registered threshold, or none yet."""
    spec = gates.get(name)
    if spec is None:
        return {"gate": name, "value": value, "threshold": None, "passes": None}
    return {"gate": name, "value": value, "threshold": spec.threshold, "at_least": spec.at_least,
            "passes": spec.gate(name, value).passes(value)}


def pass_at(measured: dict) -> dict[int, float]:
    """val_curve.curve's verified pass@k, keyed by the integer k."""
    return {int(k): v for k, v in measured["pass_at_k"].items()}


def base_model(name: str):
    model, _ = load_checkpoint(f"models/base_{name}.pt", "cpu")
    return model


def side_run(args, init: str, overrides: dict, data: str = "data"):
    """One RL run from models/<init>.pt with the rl: defaults (read once, at the start: `args.rl`) and
    `overrides`, in memory: (policy, history)."""
    job = make_job(args.rl, {**overrides, "init": init, "eval": "none"}, "gates")
    sets = {"val_edge": read_problems(f"{data}/{job.task}_val_edge.jsonl")}
    return run_job(job, f"models/{init}.pt", None, sets, "cpu", progress=False, where="gates")


def shao(args, gates: dict) -> dict:
    """Greedy verified val_edge accuracy of each base, admitted in seed order; the value is the first admitted
    base's accuracy (0 when none is)."""
    admitted = {}
    for name in args.bases:
        model = base_model(name)
        acc = round(greedy_accuracy(model, problems_of(get_task(model.cfg.task), "val_edge", args.count))["acc"], 4)
        ok = bool(verdict("shao_base", acc, gates)["passes"])
        emit({"base": name, "greedy_val_edge": acc, "admitted": ok})
        if ok:
            admitted[name] = acc
    return {**verdict("shao_base", next(iter(admitted.values()), 0.0), gates), "admitted": list(admitted)}


def crossing(args, gates: dict) -> dict:
    """Per base: the RL arm (GRPO at the edge, --steps at --lr, one run per --seeds) and its base on val_edge, each a
    verified pass@k curve (k = 1, 2, 4, ..., N; the lines also give run 2's within-base spread). The value is the
    share of bases on which the arm's mean over seeds is above its base at k = 1 and at most
    `crossing_arm.ceiling` at k = N."""
    spec = gates.get("crossing_arm")
    ceiling = spec.ceiling if spec is not None and spec.ceiling is not None else 0.95
    good, top = 0, args.N
    for i, name in enumerate(args.bases):
        base = base_model(name)
        problems = problems_of(get_task(base.cfg.task), "val_edge", args.count)
        b = pass_at(curve(base, problems, args.N))
        emit({"base": name, "model": f"base_{name}", "set": "val_edge", "pass_at_k": b})
        ones, tops = [], []
        for seed in args.seeds:
            overrides = {"task": base.cfg.task, **EDGE_PLACEMENT, "steps": args.steps, "lr": args.lr,
                         "seed": SIDE_SEED + 10 * i + seed}
            policy, _ = side_run(args, f"base_{name}", overrides)
            r = pass_at(curve(policy, problems, args.N))
            ones.append(r[1])
            tops.append(r[top])
            emit({"base": name, "model": "rl", "arm": overrides, "set": "val_edge", "pass_at_k": r})
        ok = sum(ones) / len(ones) > b[1] and sum(tops) / len(tops) <= ceiling
        good += ok
        emit({"base": name, "above_at_1_and_below_ceiling": ok})
    return {**verdict("crossing_arm", round(good / len(args.bases), 4), gates), "bases": len(args.bases),
            "steps": args.steps, "lr": args.lr}


def clip(args, gates: dict) -> dict:
    """Mean clipped-token share of the symmetric clip (eps_high = eps_low) minus clip-higher's, over seeds and steps,
    at (--lr, --mu, --steps) from each base."""
    diffs = []
    for name in args.bases:
        task = base_model(name).cfg.task
        for seed in args.seeds:
            share = {}
            for arm, eps_high in (("symmetric", args.rl["eps_low"]), ("higher", args.eps_high)):
                overrides = {"task": task, **EDGE_PLACEMENT, "steps": args.steps,
                             "lr": args.lr, "num_iterations": args.mu, "eps_high": eps_high, "seed": SIDE_SEED + seed}
                _, hist = side_run(args, f"base_{name}", overrides)
                fracs = [rec["losses/clip_frac"] for rec in hist["steps"]]
                share[arm] = sum(fracs) / len(fracs)
            diffs.append(share["symmetric"] - share["higher"])
            emit({"base": name, "seed": SIDE_SEED + seed, "lr": args.lr, "mu": args.mu, "steps": args.steps,
                  "eps_high": args.eps_high, "clip_share": {k: round(v, 5) for k, v in share.items()},
                  "difference": round(diffs[-1], 5)})
    return verdict("clip_regime", round(sum(diffs) / len(diffs), 5), gates)


def exposure(args, gates: dict) -> dict:
    """Per exposure base, in seed order: verified val_far pass@1 and pass@N; admitted with a foothold (pass@N at
    least `exposure_foothold.top_k`, pass@1 at most `.pass1`). The value is the number admitted."""
    admitted = []
    for name in args.bases:
        model = base_model(name)
        problems = problems_of(get_task(model.cfg.task), "val_far", args.count)
        c = pass_at(curve(model, problems, args.N))
        ok = foothold(gates.get("exposure_foothold"), c[1], c[args.N])
        emit({"base": name, "far_pass_at_k": c, "admitted": ok})
        if ok:
            admitted.append(name)
    return {**verdict("exposure_foothold", len(admitted), gates), "admitted": admitted}


def room(args, gates: dict) -> dict:
    """Dr. GRPO's length claim: characters between the length budget (k_max + 5) and the mean wrong response, over
    the steps of a side run in the Dr. GRPO arm's regime (--lr, --steps), and the share of wrong responses."""
    rooms = []
    for name in args.bases:
        task = base_model(name).cfg.task
        for seed in args.seeds:
            overrides = {"task": task, **EDGE_PLACEMENT, "steps": args.steps, "lr": args.lr,
                         "advantage": "dr_grpo", "loss_agg": "dr_grpo", "seed": SIDE_SEED + seed}
            _, hist = side_run(args, f"base_{name}", overrides)
            steps = [rec for rec in hist["steps"] if rec["reward/true"] < 1]  # a step with no wrong response has none
            wrong = [rec["rollout/length_wrong"] for rec in steps]
            budget = EDGE_PLACEMENT["k_max"] + 5
            rooms.append(budget - sum(wrong) / len(wrong) if wrong else 0.0)
            share = 1 - sum(rec["reward/true"] for rec in hist["steps"]) / len(hist["steps"])
            emit({"base": name, "seed": SIDE_SEED + seed, "lr": args.lr, "steps": args.steps, "budget": budget,
                  "mean_wrong_length": round(budget - rooms[-1], 3), "wrong_share": round(share, 4),
                  "room": round(rooms[-1], 3)})
    return verdict("drgrpo_room", round(sum(rooms) / len(rooms), 3), gates)


def corrupted(measured: dict) -> float:
    """The share of samples whose answer is right and whose trace is not: answer-only minus verified pass@1."""
    return round(one(measured, "pass_at_k_answer") - one(measured, "pass_at_k"), 4)


def one(measured: dict, key: str) -> float:
    """pass@1 of val_curve.curve's `key` curve (its k are strings or integers)."""
    return {int(k): v for k, v in measured[key].items()}[1]


def corruption(args, gates: dict) -> dict:
    """Per chain base: the corrupted share on val_edge (`corrupted`) of the base, of GRPO at chain's edge with the
    answer-only reward (`true`) and with the trace-verified reward (`verified`), one side run each per --seeds at
    (--steps, --lr). The value is the mean over bases and seeds of the answer-only arm's share minus its base's."""
    rises = []
    for i, name in enumerate(args.bases):
        base = base_model(name)
        problems = problems_of(get_task(base.cfg.task), "val_edge", args.count)
        b = curve(base, problems, args.N)
        emit({"base": name, "model": f"base_{name}", "set": "val_edge", "pass_at_1": one(b, "pass_at_k"),
              "pass_at_1_answer": one(b, "pass_at_k_answer"), "corrupted": corrupted(b)})
        for seed in args.seeds:
            shares = {}
            for reward in ("true", "verified"):
                overrides = {"task": base.cfg.task, **CHAIN_EDGE, "steps": args.steps, "lr": args.lr,
                             "reward": reward, "seed": SIDE_SEED + 10 * i + seed}
                policy, _ = side_run(args, f"base_{name}", overrides)
                r = curve(policy, problems, args.N)
                shares[reward] = corrupted(r)
                emit({"base": name, "model": "rl", "arm": overrides, "set": "val_edge",
                      "pass_at_1": one(r, "pass_at_k"), "pass_at_1_answer": one(r, "pass_at_k_answer"),
                      "corrupted": shares[reward]})
            rises.append(shares["true"] - corrupted(b))
    return verdict("chain_corruption", round(sum(rises) / len(rises), 4), gates)


GATES = {"shao": shao, "crossing": crossing, "clip": clip, "exposure": exposure, "room": room,
         "corruption": corruption}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("gate", choices=sorted(GATES))
    p.add_argument("bases", nargs="+", help="base names: models/base_<name>.pt")
    p.add_argument("--count", type=int, default=200, help="validation problems drawn")
    p.add_argument("--N", type=int, default=256, help="samples per problem for pass@k")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--mu", type=int, default=2)
    p.add_argument("--eps-high", type=float, default=0.28)
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    p.add_argument("--params", default="params.yaml")
    args = p.parse_args(argv)
    numerics.pin(numerics.DEFAULT)
    torch.set_num_threads(1)
    params = load_params(args.params)
    args.rl = params["rl"]
    emit(GATES[args.gate](args, gate_specs(params)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
