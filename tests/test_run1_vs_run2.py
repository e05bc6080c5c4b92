"""scripts/run1_vs_run2.py: run 1's verdicts beside run 2's, from hand-made rows and from run 1's kept files."""

import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def script():
    spec = importlib.util.spec_from_file_location("run1_vs_run2", ROOT / "scripts" / "run1_vs_run2.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["run1_vs_run2"] = module
    spec.loader.exec_module(module)
    return module


def family_row(key, claim, task, verdict, value=None, k=1, answer=None) -> dict:
    est = None if value is None else {"value": value, "bound": value - 0.5, "direction": 1, "k": k}
    return {"key": key, "claim": claim, "task": task, "verdict": verdict, "verdict_text": verdict, "estimate": est,
            "raw_gain": None if value is None else 0.1, "answer": answer}


def test_rows_pair_each_run2_row_with_run1s_claim_and_task_and_list_the_rest():
    s = script()
    def one(pair, measure, effect, verdict):
        return {"pair": pair, "measure": measure, "effect": effect, "verdict": verdict}

    run1 = {("yue_pass1", "hop"): one("grpo_edge_vs_base_edge_k001", "pass@1, verified", "+0.295 [0.097, 0.493]",
                                      "underpowered at 8 seeds"),
            ("yue_pass1", "chain"): one("c_k001", "pass@1, verified", "-0.062 [-0.397, 0.272]",
                                        "underpowered at 5 seeds"),
            ("dapo_dynamic", "hop"): one("dynamic_on_equal_updates_vs_off", "accuracy, verified",
                                         "+0.046 [0.031, 0.060]", "reproduced"),
            ("zhang_new", "hop"): one("grpo_edge_vs_base_edge_new", "share newly solved, verified",
                                      "+0.785 [0.661, 0.908]", "reproduced")}
    # run 1's answer at equal rollouts: not its primary there, so shown as exploratory beside run 2's co-primary
    answers = {"dynamic_on_vs_off": {"effect": -0.433, "ci_lo": -0.5, "ci_hi": -0.366, "a": 0.9, "b": 0.467,
                                     "se": 0.024, "df": 4, "p": 1e-4, "mde": 0.07, "seeds": 5, "problems": 1000}}
    family = {"rows": [family_row("yue_pass1_hop", "yue_pass1", "hop", "reproduced", 2.857),
                       family_row("yue_pass1_chain", "yue_pass1", "chain", "inconclusive", 0.2),
                       family_row("verified_chain", "verified_chain", "chain", "underpowered", 0.4),
                       family_row("yue_cross_hop", "yue_cross", "hop", "not testable here"),
                       family_row("dyn_rollouts", "dapo_dynamic", "hop", "reproduced", 0.1,
                                  answer="reports/ablations/answers/dynamic_on_vs_off.json")]}
    rows = s.rows(run1, family, answers)
    assert [(r["claim"], r["task"], r["run 1: verdict"], r["run 2: verdict"]) for r in rows] == [
        ("yue_pass1", "hop", "underpowered at 8 seeds", "reproduced"),
        ("yue_pass1", "chain", "underpowered at 5 seeds", "inconclusive"),  # the task's own row of each run
        ("verified_chain", "chain", s.NOT_JUDGED, "underpowered"),  # run 2's own claim: run 1 had none
        ("yue_cross", "hop", s.NOT_JUDGED, "not testable here"),  # the hand-made run 1 lacks it
        ("dapo_dynamic", "hop", s.EXPLORATORY, "reproduced"),  # run 2's equal-rollouts row: not run 1's primary
        ("dapo_dynamic", "hop", "reproduced", s.NOT_JUDGED),  # run 1's equal-updates primary: no run 2 row here
        ("zhang_new", "hop", "reproduced", s.NOT_JUDGED)]  # in run 1's family only: exploratory in run 2
    assert rows[4]["run 1: measure"] == "dynamic_on_vs_off" and rows[4]["run 1: effect, raw [95% CI]"].startswith(
        "-0.433")
    assert rows[0]["run 1: measure"] == "pass@1, verified"
    assert rows[0]["run 2: estimate (one-sided bound)"] == "pass@1: +2.857 (≥ +2.36)"
    assert rows[3]["run 2: estimate (one-sided bound)"] == "—" and rows[0]["run 2 row"] == "`yue_pass1_hop`"
    text = s.page(rows)
    assert text.startswith("# Run 1 against run 2") and text.count("\n| ") == 8  # the header and seven rows
    assert "nothing.\n\n| claim |" in text  # a blank line before the table


def test_run1s_verdicts_are_those_its_claims_page_printed():
    run1, answers = script().run1_verdicts(ROOT)
    assert answers["dynamic_on_vs_off"]["effect"] < -0.4  # run 1 at equal rollouts: -0.433 (issue 70)
    claims = (ROOT / "reports/run1/claims.md").read_text()
    assert run1[("yue_pass1", "hop")]["verdict"] == "underpowered at 8 seeds"
    assert run1[("yue_pass1", "hop")]["effect"] == "+0.295 [0.097, 0.493]"
    assert run1[("r1zero_aha", "hop")]["verdict"] == "reproduced"
    for (claim, task), one in run1.items():  # every verdict stands on run 1's page, in its claim's section and task
        section = claims.split(f"\n### {claim}\n", 1)[1].split("\n### ", 1)[0]
        lines = [x for x in section.splitlines() if x.startswith(f"- {task},")]
        assert len(lines) == 1 and f"**{one['verdict']}**" in lines[0], (claim, task)
    assert len(run1) == 16 and json.dumps([list(k) for k in run1])  # run 1's 16 rows
