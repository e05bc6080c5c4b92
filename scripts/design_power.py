"""Run 2's seeds from run 1 (its pilot): variance components and power on the log error ratio, per cross-base claim.

    python scripts/design_power.py [--root .] [--params reports/run1/params.yaml] [--power-for 0.693] [--json OUT]

Run 2 tests "RL raises accuracy or pass@k" on the per-base log error ratio L(e_base) - L(e_RL) (reasonrl.estimands),
the base as the block with >= 2 RL seeds per base. Its power needs two variance components that run 1's files hold:

- **within a base** (RL seed to RL seed): the bases that run 1 trained more than one GRPO-edge run from. Hop's
  `base_cot` has six (the methods study's grpo_s0..s4, the first of them the passk study's run and read there
  only, and headline_s0; the others on the 1,000-problem edge test set);
  hop's cot_s1..s4 and chain's five bases have two each (the headline run on the 1,000 problems, the passk study's
  run on its 248). The pooled sd of a run's log error ratio around its base's mean. Two measurements on different
  problem draws (and two measures: pass@1 of 256 samples, the eval stages' share of 8) add their noise to it, and
  what it gains the between-base part loses: the plan then credits more of the spread to the seeds, which a second
  seed averages away, so it asks for fewer bases than the truth may need.
- **between bases**: the passk study's one run per base (8 hop bases, 5 chain bases, 248 problems x 256 samples):
  the variance of their values less the within-base variance (floored at 0).

Beside that plan, the **bound**: all the spread between bases (within 0), the split that makes the blocked se
largest, since more seeds per base then shrink nothing. pass@k at large k has one run per base in run 1, so its
within-base share is not measured, and only the bound is given there.

For each claim the script prints the components, the pilot's one-sided power at run 1's design (one seed per base:
its spread as the between-base sd alone), and the cheapest bases x seeds design that reaches 0.8 at the level the
claim is tested at (one-sided 0.025: the fixed sequence spends full alpha per claim) for `--power-for` on the log
scale, capped at the headroom the bases leave. `--power-for` is fixed before run 2 and does not read run 1's effect:
0.693 = log 2, RL halving the error wherever the base starts."""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from reasonrl import estimands
from reasonrl.io import read_json
from reasonrl.studies import passk_data_path
from reasonrl.studies.headline import OUT as HEADLINE
from reasonrl.studies.paths import outcomes_path

SET = "edge"


@dataclass(frozen=True)
class Components:
    """A claim's pilot variance components on the log error ratio: the sd between one base's RL seeds (`within`,
    with its degrees of freedom), the sd of the bases' values beyond it (`between`), and the pilot's values."""

    claim: str
    k: int
    within: float
    within_df: int
    between: float
    values: list[float]
    starts: list[float]
    problems: int


def pooled_within(groups: list[list[float]]) -> tuple[float, int]:
    """The pooled sd of values around their group's mean, over groups of >= 2 (sd, degrees of freedom)."""
    ss = sum(float(((np.array(g) - np.mean(g)) ** 2).sum()) for g in groups if len(g) >= 2)
    df = sum(len(g) - 1 for g in groups if len(g) >= 2)
    if df == 0:
        raise ValueError("no base has two runs: the within-base sd is not measured")
    return math.sqrt(ss / df), df


def between_sd(values: list[float], within: float) -> float:
    """The between-base sd of one-run-per-base values: their variance less the within-base variance, floored at 0."""
    return math.sqrt(max(float(np.var(values, ddof=1)) - within ** 2, 0.0))


def passk_value(root: Path, label: str, k: int) -> tuple[float, int]:
    """A passk model's pass@k on the edge set and its problem count."""
    s = read_json(root / passk_data_path(label))["sets"][SET]
    return float(s["pass_at_k"][str(k)]), int(s["problems"])


def sampled(root: Path, path: str) -> tuple[float, int]:
    """A checkpoint's verified pass@1 at T = 1 on the edge test set (its eval stage's per-problem `sampled`)."""
    df = pd.read_csv(root / path)
    df = df[df["set"] == SET]
    return float(df["sampled"].mean()), len(df)


def ler(base: tuple[float, int], run: tuple[float, int]) -> float:
    """The log error ratio of a run against its base, measured on the same problems (their count)."""
    if base[1] != run[1]:
        raise ValueError(f"base on {base[1]} problems, run on {run[1]}: measure them on the same problems")
    return float(estimands.log_error_ratio(base[0], run[0], base[1]))


def pilot_pairs(root: Path, task: str, arms: dict, k: int) -> tuple[list[float], list[float], int]:
    """The passk study's one run per base: (log error ratios, base accuracies, problems)."""
    base, rl = ("base", "GRPO edge") if task == "hop" else ("chain base", "chain GRPO edge")
    values, starts, problems = [], [], 0
    for b, r in zip(arms[base], arms[rl]):
        vb, vr = passk_value(root, b, k), passk_value(root, r, k)
        values.append(ler(vb, vr))
        starts.append(vb[0])
        problems = vb[1]
    return values, starts, problems


def replicate_groups(root: Path, params: dict, task: str, arms: dict) -> list[list[float]]:
    """Per base, the log error ratios at pass@1 of every GRPO-edge run run 1 trained from it."""
    groups: dict[str, list[float]] = {}
    models = params["passk"]["models"]
    rl = "GRPO edge" if task == "hop" else "chain GRPO edge"
    base_arm = "base" if task == "hop" else "chain base"
    for b, r in zip(arms[base_arm], arms[rl]):  # the passk study's run, on its 248 problems
        groups.setdefault(models[b]["model"], []).append(ler(passk_value(root, b, 1), passk_value(root, r, 1)))
    for name, job in params["headline"].items():  # the headline runs, on the eval stages' 1,000 problems
        if job["task"] == task:
            base = sampled(root, outcomes_path(job["init"], task=task))
            groups.setdefault(job["init"], []).append(ler(base, sampled(root, outcomes_path(f"rl_{name}", HEADLINE))))
    if task == "hop":  # the methods study's GRPO seeds from base_cot, on the 1,000 problems, but the passk run
        base = sampled(root, outcomes_path("base_cot", task=task))
        measured = {models[r]["model"] for r in arms[rl]}
        for name in sorted(params["runs"]):
            if (name.startswith("grpo_s") and params["runs"][name]["init"] == "base_cot"
                    and f"rl_{name}" not in measured):
                groups["base_cot"].append(ler(base, sampled(root, outcomes_path(f"rl_{name}", task=task))))
    return list(groups.values())


def components(root: Path, params: dict, task: str, claim: str, k: int) -> Components:
    arms = params["passk"]["arms"]
    values, starts, problems = pilot_pairs(root, task, arms, k)
    if k == 1:
        within, df = pooled_within(replicate_groups(root, params, task, arms))
        between = between_sd(values, within)
    else:  # one run per base at large k: the split is not measured; the bound's (all between) stands in
        within, df, between = 0.0, 0, float(np.std(values, ddof=1))
    return Components(claim, k, within, df, between, values, starts, problems)


def design(c: Components, power_for: float, direction: int) -> dict:
    """Run 1's power (one run per base, its own bases) and run 2's cheapest design at 0.8 for `power_for`."""
    room = estimands.headroom(c.starts, direction=direction, problems=c.problems)
    spread = float(np.std(c.values, ddof=1))
    pilot = estimands.claim_power(spread / math.sqrt(len(c.values)), len(c.values) - 1, power_for, headroom=room)
    plan = estimands.seeds_for_power(c.between, c.within, power_for, headroom=room)
    bound = estimands.seeds_for_power(spread, 0.0, power_for, headroom=room)  # all the spread between bases
    return {"claim": c.claim, "k": c.k, "bases_run1": len(c.values), "mean_run1": float(np.mean(c.values)),
            "within_sd": c.within, "within_df": c.within_df, "between_sd": c.between, "headroom": room,
            "power_for": min(power_for, room), "power_run1_design": pilot,
            "plan": asdict(plan) if plan else None, "bound": asdict(bound) if bound else None}


CLAIMS = (("yue_pass1", "hop", 1, 1), ("yue_pass1", "chain", 1, 1), ("zhang_edge", "hop", 256, 1),
          ("zhang_edge", "chain", 256, 1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=".", help="the repository whose reports/ hold the pilot's files")
    ap.add_argument("--params", default="reports/run1/params.yaml", help="run 1's params (its arms and runs)")
    ap.add_argument("--power-for", type=float, default=math.log(2))
    ap.add_argument("--json", default=None, help="write the rows here as JSON too")
    a = ap.parse_args()
    import yaml

    params = yaml.safe_load(Path(a.params).read_text())
    root = Path(a.root)
    rows = [design(components(root, params, task, claim, k), a.power_for, d) | {"task": task}
            for claim, task, k, d in CLAIMS]
    print("| claim | task | k | run 1 mean (bases) | within sd (df) | between sd | power for (headroom) | "
          "power at run 1's design | run 2: bases x seeds (power) | bound: all between bases |")
    print("|---|---|---|---|---|---|---|---|---|---|")

    def plan_text(p: dict | None) -> str:
        return f"{p['bases']} x {p['seeds']} ({p['power']:.2f})" if p else "none within 200 bases"

    for r in rows:
        measured = r["within_df"] > 0
        within = f"{r['within_sd']:.3f} ({r['within_df']})" if measured else "not measured"
        print(f"| {r['claim']} | {r['task']} | {r['k']} | {r['mean_run1']:+.3f} ({r['bases_run1']}) | {within} | "
              f"{r['between_sd']:.3f} | {r['power_for']:.3f} ({r['headroom']:.2f}) | {r['power_run1_design']:.2f} | "
              f"{plan_text(r['plan']) if measured else '—'} | {plan_text(r['bound'])} |")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
