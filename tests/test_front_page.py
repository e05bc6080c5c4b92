"""The front page's short verdict rows and the legend under them (issue 72): the rows carry a short name linked to
the claim's section in claims.md, the measure, the raw effect and the verdict; the legend's four lines are worded by
reasonrl.studies.claims from the judged rows, naming the rows a reader could misread."""

from __future__ import annotations

from scipy import stats as sps

from reasonrl.studies import claims, index


def ans(effect, se, a=0.5, df=4, **kw):
    p = float(2 * sps.t.sf(abs(effect) / se, df)) if se else 1.0
    return {"a": a, "b": a + effect, "effect": effect, "ci_lo": effect - 2.8 * se, "ci_hi": effect + 2.8 * se,
            "se": se, "df": df, "p": p, "mde": 3.7 * se, "seeds": df + 1, "problems": 100, "constant": None,
            "a_label": "A", "b_label": "B", **kw}


def judged():
    cl = {"wide": claims.Claim("Yue et al. 2025", "RL raises pass@1 over the base (GRPO with edge data)", "passk",
                               "grpo_vs_base_k001", 1),
          "near": claims.Claim("DAPO (Yu et al. 2025)", "clip-higher beats the symmetric clip", "ablations", "near", 1),
          "top": claims.Claim("Yue et al. 2025", "…but the base solves more at large k", "passk", "top_k256", -1),
          "aha": claims.Claim("DeepSeek-R1-Zero 2025", "RL makes a base write traces", "zero", "think_after", 1)}
    answers = {"passk": {"grpo_vs_base_k001": ans(0.3, 0.1), "top_k256": ans(0.08, 0.04, a=0.92)},
               "ablations": {"near": ans(0.004, 0.0034, a=0.926)},
               "zero": {"think_after": ans(0.97, 0.001, a=0.02)}}
    return cl, answers, list(claims.judge_all(cl, answers, 0.01).values())


def test_a_claims_cell_is_cut_to_its_rows_width_in_bytes():
    # counted in characters this row fits with a wider cut; its "−" (three bytes each) and the cut's "…" do not
    cl, _, _ = judged()
    long = claims.Claim("Yue et al. 2025", "RL " + "widens what the model solves " * 4, "passk", "grpo_vs_base_k001", 1)
    cfg = index.Config(claims={**cl, "wide": long})
    row = {"task": "hop", "measure": "b − a, " * 12}
    (cell,) = index.claim_cells(cfg, [("wide", row)])
    line = index.md_rows([cell]).splitlines()[-1]
    assert cell["claim"].startswith("[Yue et al. 2025: RL widens") and "…](claims.md#wide)" in cell["claim"]
    assert 190 < index.row_width(line) <= 200 and len(line) < 180
    assert index.check_limits(line + " " + "−" * 4) == [f"line 1: a table row of {index.row_width(line) + 13} "
                                                          "bytes > 200"]


def test_each_row_says_what_it_measures():
    cl, _, rows = judged()
    assert [claims.measure_of(r["claim"], r["primary"]) for r in rows] == [
        "pass@1, verified", "accuracy, verified", "pass@256, verified", "think rate"]
    assert claims.measure_of(cl["near"], "x_entropy") == "token entropy"
    assert claims.measure_of(cl["near"], "x_wrong_length") == "wrong-response length"


def test_the_legend_names_the_rows_a_reader_could_misread():
    _, _, rows = judged()
    verdicts = {r["id"]: r["verdict"] for r in rows}
    assert verdicts["wide"].startswith("underpowered") and verdicts["near"] == "not reproduced"
    assert verdicts["top"] == "not testable here" and verdicts["aha"] == "reproduced"
    lines = claims.legend(rows, {"hop": (0.065, 1.0)})
    assert [line.split("**")[1] for line in lines] == ["underpowered at N seeds", "not reproduced",
                                                      "not testable here", "reproduced"]
    assert 'not "no effect"' in lines[0] and "not for the one observed" in lines[0]
    # the arm to beat had 0.074 of room to the ceiling, less than the 0.1 it was powered for
    assert "near (hop): 0.074 of room, powered for 0.1" in lines[1]
    # an untested row still shows its observed effect; a think rate is not an accuracy; a guess is no floor
    assert "top (hop): +0.080 [" in lines[2]
    assert "aha (hop): a think rate, not an accuracy" in lines[3]
    assert "hop 0.065 at pass@1, 1.000 at the largest k" in lines[3] and "floor is 0" in lines[3]


def test_short_rows_link_to_the_claims_sections():
    cl, answers, _ = judged()
    rows = index.verdict_rows(index.Config(claims=cl), answers, {"final_kl_opt_rloo": 0.004})
    assert rows[0] == {"claim": "[Yue et al. 2025: RL raises pass@1 over the base](claims.md#wide)", "task": "hop",
                       "measure": "pass@1, verified", index.RAW: "+0.300 [0.020, 0.580]",
                       "verdict": rows[0]["verdict"]}
    assert rows[-1]["claim"] == "[KL-regularised RL (analytic optimum): reaches π*](claims.md#exact)"
    assert all(len(line.encode()) <= index.LIMITS["row"] for line in index.md_rows(rows).splitlines())
    # a statistics module that tests on another scale adds its column beside the raw one
    answers["passk"]["grpo_vs_base_k001"]["test_scale"] = {"effect": 0.5, "ci_lo": 0.1, "ci_hi": 0.9}
    rows = index.verdict_rows(index.Config(claims=cl), answers, None)
    assert rows[0]["effect, test scale [95% CI]"] == "+0.5 [0.1, 0.9]" and rows[1]["effect, test scale [95% CI]"] == "—"
