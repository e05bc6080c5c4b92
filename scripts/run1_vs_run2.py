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
from reasonrl.studies.claims import effect_text, judge_all, measure_of

STUDIES = ("headline", "methods", "passk", "zero", "hacking", "ablations")
NOT_JUDGED = "not in this run's family"
EXPLORATORY = "exploratory in run 1 (not its primary)"


def effect_of(answer: dict | None) -> str:
    return effect_text(answer) if answer and "effect" in answer else "—"


def run1_verdicts(root: Path) -> tuple[dict[tuple[str, str], dict], dict[str, dict]]:
    """({(claim, task): {"pair", "measure", "effect", "verdict"}} of run 1, {answer pair: its answer}), from its kept
    files."""
    params = yaml.safe_load((root / "reports/run1/params.yaml").read_text())
    cfg = index.load_config(params)
    manifests = [json.loads((root / f"reports/run1/{s}/manifest.json").read_text()) for s in STUDIES]
    by_study = index.answers_by_study(manifests)
    judged = judge_all(cfg.claims, by_study, cfg.equivalence)
    verdicts = {key: {"pair": r["primary"], "measure": measure_of(r["claim"], r["primary"]),
                      "effect": effect_of(r.get("answer")), "verdict": r["verdict"]} for key, r in judged.items()}
    return verdicts, {pair: a for answers in by_study.values() for pair, a in answers.items()}


def run1_side(row: dict, run1: dict[tuple[str, str], dict], answers: dict[str, dict]) -> dict:
    """Run 1's cells beside a run 2 row: its verdict on the claim and task, or, where run 2's row reads another answer
    than run 1's primary (dynamic sampling at equal rollouts), run 1's value of that answer, exploratory there."""
    one = run1.get((row["claim"], row["task"]))
    pair = Path(row["answer"]).stem if row.get("answer") else None
    if one and pair and pair != one["pair"]:
        return {"measure": pair, "effect": effect_of(answers.get(pair)), "verdict": EXPLORATORY}
    return one or {"measure": "—", "effect": "—", "verdict": NOT_JUDGED}


def rows(run1: dict[tuple[str, str], dict], family: dict, answers: dict[str, dict] | None = None) -> list[dict]:
    """The table's rows: run 2's rows in their family order (sequence, then rest), each beside run 1's verdict on the
    same claim and task (its measure named: run 2's k may differ); then run 1's pairs that run 2's family holds no
    row of."""
    out, seen = [], set()
    for r in family["rows"]:
        one = run1_side(r, run1, answers or {})
        if one["verdict"] not in (EXPLORATORY, NOT_JUDGED):  # run 1's primary of the claim and task stands beside it
            seen.add((r["claim"], r["task"]))
        out.append({"claim": r["claim"], "task": r["task"], "run 1: measure": one["measure"],
                    "run 1: effect, raw [95% CI]": one["effect"], "run 1: verdict": one["verdict"],
                    "run 2 row": f"`{r['key']}`", "run 2: estimate (one-sided bound)": index.family_estimate(r),
                    "run 2: verdict": r["verdict_text"] or r["verdict"]})
    for (claim, task), one in run1.items():
        if (claim, task) not in seen:
            out.append({"claim": claim, "task": task, "run 1: measure": one["measure"],
                        "run 1: effect, raw [95% CI]": one["effect"], "run 1: verdict": one["verdict"],
                        "run 2 row": "—", "run 2: estimate (one-sided bound)": "—", "run 2: verdict": NOT_JUDGED})
    return out


def page(table: list[dict]) -> str:
    intro = ("Written by `python scripts/run1_vs_run2.py`. Run 1 (the pilot, [reports/run1](run1/README.md)) "
             "judged each claim on the raw scale, two-sided beyond the equivalence region, in one Holm family; run 2 "
             "judges its pre-registered rows ([primaries.md](primaries.md)) on each row's own scale, one-sided, a "
             "fixed sequence then Holm, with gates measured before the run. The runs' bases differ (another CPU "
             "kind, other seeds admitted), so this sets their verdicts side by side; it pools nothing.")
    head = ["# Run 1 against run 2, claim by claim", "", intro, "", ""]
    return "\n".join(head) + index.md_rows(table) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=Path("."))
    ap.add_argument("--out", type=Path, default=Path("reports/run1_vs_run2.md"))
    a = ap.parse_args()
    run1, answers = run1_verdicts(a.root)
    table = rows(run1, read_json(a.root / "reports/metrics/primaries.json"), answers)
    write_text(a.root / a.out if not a.out.is_absolute() else a.out, page(table))
    print(f"{len(table)} rows -> {a.out}")


if __name__ == "__main__":
    main()
