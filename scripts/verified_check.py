"""Verified against answer-only pass@k, checked on a run's committed pass@k data.

    python scripts/verified_check.py [--reports reports] [--params params.yaml] [--guessing "GRPO far"] [--near 0.01]

For every `reports/passk/data/<model>.json` and set, the largest excess of verified pass@k over answer-only
pass@k over the k values. It must be 0: a sample whose trace is verified also has the right answer. Then the
guessing arm (`--guessing`, an arm of `passk.arms`: GRPO on data where its bases have no foothold). Its mean
verified and answer-only pass@1 and pass@256 on `far` are printed beside the guess floor (`random_baseline`),
and its verified pass@1 there must be at most `--near`: guessing a right letter is not a verified solution.

Exit status 1 when a check fails, 2 when data is missing or carries no answer-only column (the pilot's)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

from reasonrl.io import read_json

TOL = 1e-12  # float sums of the same counts: equal values may differ in the last bits


def excess(s: dict) -> float:
    """max over k of verified minus answer-only pass@k on one set (<= 0 when verified never exceeds)."""
    return max(s["pass_at_k"][k] - s["pass_at_k_answer"][k] for k in s["pass_at_k"])


def guessing(data: list[dict]) -> dict[str, float]:
    """The arm's means on `far`: verified and answer-only pass@1 and pass@256, and the guess floor's."""
    fars = [d["sets"]["far"] for d in data]
    columns = (("verified", "pass_at_k"), ("answer-only", "pass_at_k_answer"), ("guess", "random_baseline"))
    return {f"{name} pass@{k}": sum(s[key][k] for s in fars) / len(fars) for k in ("1", "256") for name, key in columns}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reports", type=Path, default=Path("reports"))
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--guessing", default="GRPO far", help="the arm of passk.arms trained where it has no foothold")
    ap.add_argument("--near", type=float, default=0.01, help="the most verified pass@1 on far a guessing arm may have")
    args = ap.parse_args()
    arms = yaml.safe_load(args.params.read_text())["passk"]["arms"]
    if args.guessing not in arms:
        print(f"--guessing: no arm {args.guessing!r} in passk.arms ({', '.join(arms)})", file=sys.stderr)
        return 2
    paths = sorted((args.reports / "passk" / "data").glob("*.json"))
    data = {p.stem: read_json(p) for p in paths}
    missing = [m for m in arms[args.guessing] if m not in data]
    answer_only = sorted(m for m, d in data.items() if any("pass_at_k_answer" not in s for s in d["sets"].values()))
    if not data or missing or answer_only:
        why = ("no pass@k data" if not data else f"no data for {', '.join(missing)}" if missing
               else f"answer-only data (no verified column): {', '.join(answer_only)}")
        print(f"{args.reports / 'passk' / 'data'}: {why}", file=sys.stderr)
        return 2
    worst = {(m, name): excess(s) for m, d in data.items() for name, s in d["sets"].items()}
    (top_model, top_set), top = max(worst.items(), key=lambda kv: kv[1])
    results = [(f"verified <= answer-only pass@k in all {len(worst)} (model, set) cells of {len(data)} models "
                f"(largest excess {top:+.2g}: {top_model} on {top_set})", top <= TOL)]
    g = guessing([data[m] for m in arms[args.guessing]])
    print(f"{args.guessing} on far, means over {len(arms[args.guessing])} runs: "
          + ", ".join(f"{k} {v:.4f}" for k, v in g.items()))
    results.append((f"{args.guessing}: verified pass@1 on far {g['verified pass@1']:.4f} <= {args.near} "
                    f"(answer-only {g['answer-only pass@1']:.4f}, guess {g['guess pass@1']:.4f})",
                    g["verified pass@1"] <= args.near))
    for text, ok in results:
        print(f"{'holds' if ok else 'FAILS'}  {text}")
    return 0 if all(ok for _, ok in results) else 1


if __name__ == "__main__":
    sys.exit(main())
