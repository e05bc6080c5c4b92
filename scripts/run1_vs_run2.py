"""Run 1's verdicts against run 2's, claim by claim (issue 70, item 11).

    python scripts/run1_vs_run2.py [--root .] [--out reports/run1_vs_run2.md]

Run 1's verdicts are those of its own design (raw scale, two-sided beyond the equivalence region, one Holm family:
reports/run1/claims.md), recomputed from its committed manifests (reports/run1/<study>/manifest.json) with its params
(reports/run1/params.yaml) through `reasonrl.studies.claims.judge_all`, so each is the verdict its index printed.
Run 2's are its pre-registered family's (reports/metrics/primaries.json, stage report_primaries). One line per claim
and task that either run judged: run 1's effect and verdict beside each of run 2's rows for that claim and task (a
claim may have two, as dapo_dynamic at equal updates and at equal rollouts); a pair that only one run judged says
so. The two runs' bases differ (another CPU kind, other seeds admitted) and so do their scales: the table sets the
verdicts side by side, it does not pool them.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml

from reasonrl.io import read_json, write_text
from reasonrl.studies import index
from reasonrl.studies.claims import effect_text, judge_all

STUDIES = ("headline", "methods", "passk", "zero", "hacking", "ablations")
NOT_JUDGED = "not in this run's family"


def run1_verdicts(root: Path) -> dict[tuple[str, str], dict]:
    """{(claim, task): {"effect", "verdict"}} of run 1, from its kept files."""
    params = yaml.safe_load((root / "reports/run1/params.yaml").read_text())
    cfg = index.load_config(params)
    manifests = [json.loads((root / f"reports/run1/{s}/manifest.json").read_text()) for s in STUDIES]
    judged = judge_all(cfg.claims, index.answers_by_study(manifests), cfg.equivalence)
    return {key: {"effect": effect_text(r["answer"]) if r.get("answer") and "effect" in r["answer"] else "—",
                  "verdict": r["verdict"]} for key, r in judged.items()}


def rows(run1: dict[tuple[str, str], dict], family: dict) -> list[dict]:
    """The table's rows: run 2's rows in their family order (sequence, then rest), each beside run 1's verdict on the
    same claim and task; then run 1's pairs that run 2's family holds no row of."""
    out, seen = [], set()
    for r in family["rows"]:
        key = (r["claim"], r["task"])
        seen.add(key)
        one = run1.get(key)
        out.append({"claim": r["claim"], "task": r["task"],
                    "run 1: effect, raw [95% CI]": one["effect"] if one else "—",
                    "run 1: verdict": one["verdict"] if one else NOT_JUDGED,
                    "run 2 row": f"`{r['key']}`", "run 2: estimate (one-sided bound)": index.family_estimate(r),
                    "run 2: verdict": r["verdict_text"] or r["verdict"]})
    for (claim, task), one in run1.items():
        if (claim, task) not in seen:
            out.append({"claim": claim, "task": task, "run 1: effect, raw [95% CI]": one["effect"],
                        "run 1: verdict": one["verdict"], "run 2 row": "—",
                        "run 2: estimate (one-sided bound)": "—", "run 2: verdict": NOT_JUDGED})
    return out


def page(table: list[dict]) -> str:
    intro = ("Written by `python scripts/run1_vs_run2.py`. Run 1 (the pilot, [reports/run1](run1/README.md)) "
             "judged each claim on the raw scale, two-sided beyond the equivalence region, in one Holm family; run 2 "
             "judges its pre-registered rows ([primaries.md](primaries.md)) on each row's own scale, one-sided, a "
             "fixed sequence then Holm, with gates measured before the run. The runs' bases differ (another CPU "
             "kind, other seeds admitted), so this sets their verdicts side by side; it pools nothing.")
    head = ["# Run 1 against run 2, claim by claim", "", intro, ""]
    return "\n".join(head) + index.md_rows(table) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=Path("."))
    ap.add_argument("--out", type=Path, default=Path("reports/run1_vs_run2.md"))
    a = ap.parse_args()
    table = rows(run1_verdicts(a.root), read_json(a.root / "reports/metrics/primaries.json"))
    write_text(a.root / a.out if not a.out.is_absolute() else a.out, page(table))
    print(f"{len(table)} rows -> {a.out}")


if __name__ == "__main__":
    main()
