"""Run 2's sequence powered from validation side runs: the blocked t on the log error ratio and the exact sign test.

    python scripts/validation_power.py docs/runlogs/gates_run2/grpo_edge_*.jsonl [--k 1 256] [--seeds 2]
        [--bases 8] [--problems 248] [--power-for 0.693] [--band 0.05 0.9]

Reads the lines `scripts/gates.py crossing` prints (a base's verified pass@k curve on val_edge, then each RL seed's
on the same problems), keeps the bases the edge band admits (`--band`: pass@1 in it) and takes, per k, the log
error ratio of every (base, seed) pair on the validation problems (`estimands.log_error_ratio`, counted on them).
From those it splits the spread: `within` (a base's RL seeds,
pooled) and `between` (the bases' means, less within / seeds), and powers run 2's two tests of a direction, each
one-sided at 0.025 (a claim's level in the fixed sequence), for `--power-for` on the log scale (log 2: RL halves the
error; fixed without reading run 1's or these runs' effect):

- **the blocked t** (`estimands.seeds_for_power` at `--bases` x `--seeds`): its noise is the spread of the bases'
  values, so where RL sits at the ceiling (pass@256) it is the spread of where the bases start;
- **the exact sign test across bases** (the claim of direction: RL raises every base's pass@k). Under the
  alternative that RL at least halves each base's error, a base's value is below 0 only through its own noise:
  its RL seeds' spread (within / seeds) and the test set's draw of the two errors, each a binomial share of
  unsolved problems at `--problems` (delta method: var log e = (1 - e) / (P e); e the base's validation error, at
  least half a problem, and RL's e / 2**(power_for / log 2), the error the alternative leaves; the RL term is not
  divided by the seeds, which share the problems, nor paired with the base's, which would shrink it: a lower
  bound). Its power is the chance that at least the count `scipy.stats.binomtest` needs at 0.025 of the bases
  come out positive, each with its own probability (exact over the ways up to that many miss).

Prints one row per k; `--json OUT` writes them."""

from __future__ import annotations

import argparse
import itertools
import json
import math
from pathlib import Path

import numpy as np
from scipy import stats

from reasonrl import estimands


def read_lines(paths: list[str], band: tuple[float, float] = (0.0, 1.0)) -> dict[str, dict]:
    """{base: {"base": curve, "rl": [curves]}} from gates.py crossing's lines, for the bases whose pass@1 lies in
    `band` (the edge band admits run 2's bases); a seed's line met twice (a rerun) counts once."""
    by_base: dict[str, dict] = {}
    for path in paths:
        for line in Path(path).read_text().splitlines():
            row = json.loads(line)
            if "pass_at_k" not in row:
                continue
            entry = by_base.setdefault(row["base"], {"base": None, "rl": [], "seeds": set()})
            if row["model"] != "rl":
                entry["base"] = row["pass_at_k"]
            elif row["arm"]["seed"] not in entry["seeds"]:
                entry["seeds"].add(row["arm"]["seed"])
                entry["rl"].append(row["pass_at_k"])
    return {b: {"base": e["base"], "rl": e["rl"]} for b, e in by_base.items()
            if e["base"] is not None and e["rl"] and band[0] <= e["base"]["1"] <= band[1]}


def needed(bases: int, tail: float = estimands.TAIL) -> int | None:
    """The fewest positive bases of `bases` the exact one-sided sign test needs at `tail` (None: no count does)."""
    for count in range(bases + 1):
        if stats.binomtest(count, bases, 0.5, alternative="greater").pvalue <= tail:
            return count
    return None


def at_least(probs: list[float], count: int) -> float:
    """The chance that at least `count` of independent events with these probabilities happen."""
    total = 0.0
    for misses in range(len(probs) - count + 1):
        for missed in itertools.combinations(range(len(probs)), misses):
            total += math.prod((1 - p) if i in missed else p for i, p in enumerate(probs))
    return total


def sign_power(base_errors: list[float], within: float, seeds: int, problems: int, power_for: float) -> dict:
    """The sign test's power over these bases when RL lowers each one's log error by `power_for`."""
    probs = []
    for e in base_errors:
        e = max(e, 0.5 / problems)
        e_rl = e * math.exp(-power_for)
        sd = math.sqrt(within ** 2 / seeds + (1 - e) / (problems * e) + (1 - e_rl) / (problems * e_rl))
        probs.append(float(stats.norm.cdf(power_for / sd)))
    count = needed(len(probs))
    return {"needed": count, "of": len(probs), "power": at_least(probs, count) if count is not None else 0.0,
            "lowest_p_positive": min(probs)}


def row(data: dict[str, dict], k: int, bases: int, seeds: int, problems: int, power_for: float, P: int) -> dict:
    key = str(k)
    groups, base_errors = [], []
    for entry in data.values():
        pb = entry["base"][key]
        groups.append([float(estimands.log_error_ratio(pb, r[key], P)) for r in entry["rl"]])
        base_errors.append(1 - pb)
    within_ss = sum(float(((np.array(g) - np.mean(g)) ** 2).sum()) for g in groups)
    within_df = sum(len(g) - 1 for g in groups)
    within = math.sqrt(within_ss / within_df) if within_df else 0.0
    means = [float(np.mean(g)) for g in groups]
    per_base = min(len(g) for g in groups)
    between = math.sqrt(max(float(np.var(means, ddof=1)) - within ** 2 / per_base, 0.0))
    plan = estimands.blocked_se(between, within, bases, seeds)
    room = estimands.headroom([1 - e for e in base_errors], problems=problems)
    t_power = estimands.claim_power(plan, bases - 1, power_for, headroom=room)
    return {"k": k, "bases_measured": len(groups), "seeds_measured": per_base, "mean": float(np.mean(means)),
            "positive": sum(m > 0 for m in means), "within_sd": within, "within_df": within_df,
            "between_sd": between, "headroom": room, "design": f"{bases} x {seeds}", "t_power": t_power,
            "sign": sign_power(base_errors, within, seeds, problems, power_for),
            "base_pass": [round(1 - e, 4) for e in base_errors]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--k", type=int, nargs="+", default=[1, 256])
    ap.add_argument("--bases", type=int, default=8)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--problems", type=int, default=248, help="run 2's test problems per set (passk.problems)")
    ap.add_argument("--validation-problems", type=int, default=200, help="the side runs' problems (gates.py --count)")
    ap.add_argument("--power-for", type=float, default=math.log(2))
    ap.add_argument("--band", type=float, nargs=2, default=[0.05, 0.9], help="bases admitted: pass@1 in it")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    data = read_lines(a.files, tuple(a.band))
    rows = [row(data, k, a.bases, a.seeds, a.problems, a.power_for, a.validation_problems) for k in a.k]
    print("| k | bases (seeds) measured | mean | positive | within sd (df) | between sd | t power at design | "
          "sign test: needs | sign power | lowest P(base positive) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        s = r["sign"]
        print(f"| {r['k']} | {r['bases_measured']} ({r['seeds_measured']}) | {r['mean']:+.3f} | {r['positive']} | "
              f"{r['within_sd']:.3f} ({r['within_df']}) | {r['between_sd']:.3f} | {r['design']}: {r['t_power']:.2f} | "
              f"{s['needed']} of {s['of']} | {s['power']:.3f} | {s['lowest_p_positive']:.3f} |")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
