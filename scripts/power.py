"""Seeds per arm for each primary of `studies.claims`, powered from a finished run's answers (the pilot's).

    python scripts/power.py [--reports reports] [--params params.yaml] [--power 0.8] [--most 400] [--problems P ...]
    python scripts/power.py --registered --reports reports/pilot

One row per claim and task whose primary answer file exists and which the rules fixed before the run
(`reasonrl.studies.claims.untestable`: no variance, a ceiling, chance, the mechanism absent) leave testable:
the run's effect, its run spread (sd of one run per arm) and problem term, and then, at alpha / m for the m
distinct comparisons of the family (a bound Holm's step-down only raises), the power at the run's seeds and the
seeds per arm that reach `--power` for the claim's `power_for`, and for the effect the run observed. The
projection keeps the test set's problem term and takes the run spread as known (`stats.seeds_for_power`).

`--problems P`: beside each passk claim's MDE (unadjusted, 95%, at the run's seeds), the MDE had its pass@k been
measured on P problems per set (passk.eval.problems) instead of the run's: the problem term scaled by
run problems / P, the run term kept (`projected_mde`).

`--registered`: the power each primary of `params.yaml` has at the seeds it registers (`Claim.seeds`), projected
from the answers in `--reports` (the pilot's): the test at alpha / m for m, the distinct comparisons the design
holds (all of them testable: the run's family can only be smaller, so the power is a lower bound), with
`stats.projected_se` at the registered seeds, for `power_for` and for the effect the pilot saw."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import yaml

from reasonrl import stats
from reasonrl.io import read_json
from reasonrl.studies import index, newsol
from reasonrl.studies.claims import comparison, margin, untestable

LOWER_BOUND = ("the run term the answers store also holds the run x problem noise (MS_res / (R P)), which grows as P "
               "shrinks and is not stored: below the run's problems the projected MDE is a lower bound")


def projected_mde(ans: dict, problems: int) -> float | None:
    """The answer's MDE (unadjusted, 95%, its df) with its problem term (se^2 - se_run^2) scaled by
    ans["problems"] / problems and its run term kept: the same comparison measured on `problems` problems."""
    v_prob = max(0.0, ans["se"] ** 2 - ans["se_run"] ** 2) * ans["problems"] / problems
    return stats.mde(math.sqrt(ans["se_run"] ** 2 + v_prob), ans["df"])


def problem_columns(c, primary: str, ans: dict | None, why: str | None, problems: list[int]) -> dict:
    """{"MDE now": the answer's, "MDE at P problems": projected_mde} for a passk pass@k claim ("—" elsewhere:
    another study, not testable, or the new-solutions measure, whose per-seed shares have no problem term)."""
    cols = {"MDE now": "—", **{f"MDE at {p} problems": "—" for p in problems}}
    if why is not None or c.study != "passk" or primary.endswith(f"_{newsol.SUFFIX}") or "se_run" not in ans:
        return cols
    return {"MDE now": f"{_fmt(ans['mde'])} ({ans['problems']:,} problems)",
            **{f"MDE at {p} problems": _fmt(projected_mde(ans, p)) for p in problems}}


def _fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def read_answer(reports: Path, study: str, primary: str) -> dict | None:
    """The primary's answer file in `reports`, None where the run did not write it."""
    path = reports / study / "answers" / f"{primary}.json"
    return read_json(path) if path.exists() else None


def not_computed(reports: Path, study: str, primary: str) -> str | None:
    """Why the study wrote no answer file for `primary` (its manifest's `not_computed`), None if it gave none."""
    path = reports / study / "manifest.json"
    return read_json(path).get("not_computed", {}).get(primary) if path.exists() else None


def rows(cfg: index.Config, reports: Path, target: float, most: int,
         problems: list[int] | None = None) -> tuple[list[dict], int]:
    testable = []
    for cid, c in cfg.claims.items():
        for task, primary in c.primaries().items():
            ans = read_answer(reports, c.study, primary)
            eq = margin(c, ans, cfg.equivalence)
            why = untestable(c, ans, primary, eq, None if ans else not_computed(reports, c.study, primary))
            testable.append((cid, task, c, ans, eq, why, primary))
    m = len({(c.study, c.primaries()[task], eq) for cid, task, c, ans, eq, why, _ in testable if why is None})
    alpha = (1 - stats.CONFIDENCE) / max(m, 1)
    out = []
    for cid, task, c, ans, eq, why, primary in testable:
        row = {"claim": cid, "task": task, "effect": "—", "run sd": "—", "problem se": "—", "seeds": "—",
               "power_for": f"{c.power_for:g} beyond ±{eq:g}", "power at its seeds": "—",
               "seeds for power_for": "—", "seeds for the effect seen": "—", "not testable": why or ""}
        if why is None and "run_sd" in ans:
            cmp = comparison(ans)
            need = stats.seeds_for_power(cmp, c.power_for, eq, alpha, target, most)
            beyond = abs(ans["effect"]) > eq
            seen = stats.seeds_for_power(cmp, ans["effect"], eq, alpha, target, most) if beyond else None
            row |= {"effect": f"{ans['effect']:+.3f}", "run sd": f"{ans['run_sd']:.3f}",
                    "problem se": f"{math.sqrt(max(0.0, ans['se'] ** 2 - ans['se_run'] ** 2)):.4f}",
                    "seeds": ans["seeds"],
                    "power at its seeds": f"{stats.power(ans['se'], ans['df'], c.power_for, eq, alpha):.2f}",
                    "seeds for power_for": need or f"> {most}",
                    "seeds for the effect seen": seen or (f"> {most}" if beyond else "—")}
        out.append(row | (problem_columns(c, primary, ans, why, problems) if problems else {}))
    return out, m


def registered_rows(cfg: index.Config, reports: Path) -> tuple[list[dict], int]:
    """One row per claim and task: its primary, registered seeds, the pilot's effect and run spread, and the
    projected power at those seeds for `power_for` and for the pilot's effect (beyond the claim's margin)."""
    answers = {(c.study, p): read_answer(reports, c.study, p)
               for c in cfg.claims.values() for p in c.primaries().values()}
    # one test per (study, primary, margin), as the claims' judge counts them
    m = len({(c.study, p, margin(c, answers.get((c.study, p)), cfg.equivalence))
             for c in cfg.claims.values() for p in c.primaries().values()})
    alpha = (1 - stats.CONFIDENCE) / max(m, 1)
    out = []
    for cid, c in cfg.claims.items():
        for task, primary in c.primaries().items():
            ans, n = answers.get((c.study, primary)), c.seeds_on(task)
            row = {"claim": cid, "task": task, "primary": primary, "seeds": n if n is not None else "—",
                   "pilot effect (run sd)": "no pilot answer", "power for power_for": "",
                   "power for the pilot's effect": ""}
            if ans is not None and ans.get("run_sd") and n is not None and n >= 2:
                eq, cmp = margin(c, ans, cfg.equivalence), comparison(ans)
                se = stats.projected_se(cmp, n)
                beyond = abs(ans["effect"]) > eq
                row |= {"pilot effect (run sd)": f"{ans['effect']:+.3f} (sd {ans['run_sd']:.3f})",
                        "power for power_for": f"{stats.power(se, n - 1, c.power_for, eq, alpha):.2f} for "
                                               f"{c.power_for:g} beyond ±{eq:.3g}",
                        "power for the pilot's effect": f"{stats.power(se, n - 1, ans['effect'], eq, alpha):.2f}"
                                                        if beyond else "—"}
            elif ans is not None:
                why = ("no seeds registered" if n is None else "no run spread stored" if "run_sd" not in ans
                       else "no spread")
                row["pilot effect (run sd)"] = f"pilot effect {ans['effect']:+.3f}, {why}"
            out.append(row)
    return out, m


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reports", type=Path, default=Path("reports"))
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--power", type=float, default=stats.POWER)
    ap.add_argument("--most", type=int, default=400)
    ap.add_argument("--problems", type=int, nargs="+", metavar="P", help="project the passk claims' MDE on P problems")
    ap.add_argument("--registered", action="store_true", help="the power of the registered seeds (Claim.seeds)")
    args = ap.parse_args()
    cfg = index.load_config(yaml.safe_load(args.params.read_text()))
    if args.registered:
        table, m = registered_rows(cfg, args.reports)
        print(f"m = {m}, alpha / m = {(1 - stats.CONFIDENCE) / max(m, 1):.4f}\n")
        print(index.md_rows(table))
        return
    table, m = rows(cfg, args.reports, args.power, args.most, args.problems)
    print(f"m = {m} distinct testable comparisons: power at alpha / m = {(1 - stats.CONFIDENCE) / max(m, 1):.4f}\n")
    if args.problems:
        print(f"MDE at P problems: each passk pass@k claim's MDE (unadjusted, 95%, its seeds) with the problem term "
              f"scaled by the run's problems / P, the run term kept; {LOWER_BOUND}.\n")
    print(index.md_rows(table))


if __name__ == "__main__":
    main()
