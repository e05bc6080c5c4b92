"""The results pages in run 2's design (params studies.primaries has rows): each claim's verdicts are its rows' in
reports/metrics/primaries.json, in gatekeeping's words, with the estimate and its one-sided bound, the raw gain, the
sign counts, the pre-run power and the reason; a claim's primary no row tests is exploratory; the exact toy keeps its
line. Hand-built rows (a reproduced sequence row, one that stops the sequence, a not-reached rest row, a gated row, an
answer row) and the lines they give, written out. Without rows (run 1's params, the smoke DAG's thin ones) the pages
are run 1's, byte for byte."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from reasonrl.config import ConfigError, load_params
from reasonrl.studies import claims as C
from reasonrl.studies import gatekeeping as G
from reasonrl.studies import index
from reasonrl.studies.claims import STUDIES
from reasonrl.studies.stage import load_config

ROOT = Path(__file__).resolve().parents[1]

CLAIMS = {
    "yue_pass1": C.Claim("Yue et al. 2025", "RL raises pass@1 over the base (GRPO with edge data)", "passk", "k001", 1,
                         tasks={"chain": "chain_k001"}),
    "zhang_edge": C.Claim("Zhang, Neubig & Yue 2025", "RL on edge data raises pass@k at large k", "passk", "k256", 1),
    "yue_cross": C.Claim("Yue et al. 2025", "…but the base solves more at large k", "passk", "k256", -1,
                         tasks={"chain": "chain_k256"}),
    "dapo_dynamic": C.Claim("DAPO (Yu et al. 2025)", "dynamic sampling beats plain GRPO", "ablations",
                            "dynamic_on_vs_off", 1),
    "zhang_new": C.Claim("Zhang, Neubig & Yue 2025", "RL solves problems its base never solved", "passk",
                         "grpo_edge_vs_base_edge_new", 1, tasks={"chain": "chain_grpo_edge_vs_chain_base_edge_new"}),
}


def part(k, value, bound, direction=1, scale="log error ratio"):
    return {"k": k, "scale": scale, "value": value, "se": 0.2, "df": 8, "unit": "base", "units": None, "bound": bound,
            "direction": direction}


def row(key, claim, task, test, verdict, reason, family, **kw):
    out = {"key": key, "claim": claim, "paper": "", "wording": "", "task": task, "test": test, "answer": None,
           "scale": "log error ratio", "rl": ["GRPO edge"], "base": "base", "set": "edge", "k": 1, "k_high": None,
           "direction": 1, "margin": 0.0, "verdict": verdict, "verdict_text": verdict, "reason": reason,
           "family": family, "estimate": None, "bound": None, "high": None, "raw_gain": None, "raw_gain_high": None,
           "sign": None, "correlation_with_start": None, "p": None, "adjusted_p": None, "level": None, "power": 0.9,
           "power_judged": 0.9, "power_for": 0.693, "power_reason": "log 2", "gates": {}}
    return out | kw


ROWS = [
    row("yue_pass1_hop", "yue_pass1", "hop", "sign", G.REPRODUCED, "adjusted p 0.0039 ≤ 0.05 in the claimed direction",
        "sequence", estimate=part(1, 2.857, 2.4), bound=2.4, raw_gain=0.295,
        sign={"beyond": 8, "short": 1, "ties": 0, "p": 0.02}, adjusted_p=0.0039, level=0.025, power=0.95,
        power_judged=0.95),
    row("zhang_edge_hop", "zhang_edge", "hop", "sign", G.INCONCLUSIVE, "pre-run power 0.90 ≥ 0.8; the interval reaches "
        "across the margin", "sequence", k=64, estimate=part(64, 0.41, -0.12), bound=-0.12, raw_gain=0.031,
        sign={"beyond": 6, "short": 3, "ties": 0, "p": 0.25}, adjusted_p=0.5, level=0.025,
        power_judged=0.86),  # jointly with yue_pass1_hop: 0.95 x 0.9
    row("yue_pass1_chain", "yue_pass1", "chain", "blocked", G.NOT_REACHED, "the sequence stopped at zhang_edge_hop",
        "rest", rl=["chain GRPO edge"], base="chain base", estimate=part(1, 0.52, -0.31), bound=-0.31,
        raw_gain=-0.062, sign={"beyond": 3, "short": 2, "ties": 0, "p": 0.5}, power=0.1, power_judged=0.1),
    row("yue_cross_hop", "yue_cross", "hop", "crossing", G.NOT_TESTABLE, "not testable here: crossing_arm measured 0, "
        "needs ≥ 1", None, k_high=256, power=0.0, power_judged=None, gates={"crossing_arm": {}}),
    row("dapo_dynamic_rollouts_hop", "dapo_dynamic", "hop", "answer", G.NOT_REACHED,
        "the sequence stopped at zhang_edge_hop", "rest", answer="reports/ablations/answers/dynamic_on_vs_off.json",
        scale="raw gain", rl=None, base="base_cot", verdict_text=f"{G.NOT_REACHED} on base_cot",
        estimate=part(1, -0.433, -0.41, scale="raw gain"), bound=-0.41, raw_gain=-0.433, power=0.79,
        power_judged=0.79),
]
FAMILY = {"alpha": 0.05, "sequence": ["yue_pass1_hop", "zhang_edge_hop"],
          "rest": ["yue_pass1_chain", "yue_cross_hop", "dapo_dynamic_rollouts_hop"], "rows": ROWS}
# the answers of the primaries outside the family: yue_cross on chain (the claim has a row on hop only) and
# zhang_new (no row); zhang_new's chain primary was not computed
ANSWERS = {"chain_k256": {"a": 0.9, "b": 0.84, "effect": -0.06, "ci_lo": -0.217, "ci_hi": 0.098, "se": 0.06, "df": 4,
                          "p": 0.4, "mde": 0.2, "seeds": 5, "problems": 100},
           "grpo_edge_vs_base_edge_new": {"a": 0.0, "b": 0.785, "effect": 0.785, "ci_lo": 0.661, "ci_hi": 0.908,
                                          "se": 0.05, "df": 7, "p": 0.0001, "mde": 0.1, "seeds": 8, "problems": 100}}
EXACT = {"final_kl_opt_rloo": 0.004, "final_kl_opt_grpo": 0.03}


def cfg() -> index.Config:
    return index.Config(claims=dict(CLAIMS), family=[r["key"] for r in ROWS])


def manifests() -> list[dict]:
    out = []
    for study in index.STUDIES:
        answers = [{"pair": p, "text": "t", **a} for p, a in ANSWERS.items()] if study == "passk" else []
        missing = {"chain_grpo_edge_vs_chain_base_edge_new": "fewer than two seeds"} if study == "passk" else {}
        out.append({"study": study, "title": study.title(), "question": "q?", "answer": "a.", "runs": [],
                    "figures": [], "tables": [], "answers": answers, "not_computed": missing})
    return out


def test_the_front_page_gives_each_row_its_verdict_estimate_bound_raw_gain_sign_and_power():
    table = index.md_rows(index.family_verdict_rows(cfg(), FAMILY)).splitlines()
    assert table == [
        "| claim | row | task | estimate (one-sided bound) | raw gain | sign | power | verdict |",
        "|---|---|---|---|---|---|---|---|",
        "| [Yue et al. 2025: RL raises pass@1 over the base](claims.md#yue_pass1) | yue_pass1_hop | hop | "
        "pass@1: +2.857 (≥ +2.40) | +0.295 | 8 of 9 | 0.95 | reproduced |",
        "| [Zhang, Neubig & Yue 2025: RL on edge data raises pass@k at large k](claims.md#zhang_edge) | zhang_edge_hop "
        "| hop | pass@64: +0.410 (≥ -0.12) | +0.031 | 6 of 9 | 0.86 | inconclusive |",
        "| [Yue et al. 2025: RL raises pass@1 over the base](claims.md#yue_pass1) | yue_pass1_chain | chain | "
        "pass@1: +0.520 (≥ -0.31) | -0.062 | 3 of 5 | 0.10 | not reached |",
        "| [Yue et al. 2025: …but the base solves more at large k](claims.md#yue_cross) | yue_cross_hop | hop | — | "
        "— | — | — | not testable here |",
        "| [DAPO: dynamic sampling beats plain GRPO](claims.md#dapo_dynamic) | dapo_dynamic_rollouts_hop | hop | "
        "b − a: -0.433 (≥ -0.41) | -0.433 | — | 0.79 | not reached on base_cot |"]
    assert all(len(line) <= index.LIMITS["row"] for line in table)


def test_outside_the_family_exploratory_primaries_and_the_exact_toys_line():
    rows = index.outside_rows(cfg(), FAMILY, index.answers_by_study(manifests()), EXACT)
    assert index.md_rows(rows).splitlines()[2:] == [
        "| [Yue et al. 2025: …but the base solves more at large k](claims.md#yue_cross) | chain | pass@256, verified | "
        "-0.060 [-0.217, 0.098] | exploratory (not in run 2's family) |",
        "| [Zhang, Neubig & Yue 2025: RL solves problems its base never solved](claims.md#zhang_new) | hop | "
        "share newly solved, verified | +0.785 [0.661, 0.908] | exploratory (not in run 2's family) |",
        "| [Zhang, Neubig & Yue 2025: RL solves problems its base never solved](claims.md#zhang_new) | chain | "
        "share newly solved, verified | — | exploratory (not in run 2's family) |",
        # the exact toy's row as run 1's verdict table gives it
        index.md_rows([index.verdict_rows(index.Config(), {}, EXACT)[-1]]).splitlines()[-1]]
    assert {r["verdict"] for r in rows[:-1]} == {index.EXPLORATORY} and index.EXPLORATORY not in G.VERDICTS


def test_a_long_claim_is_cut_alike_in_each_of_its_rows_to_keep_the_row_short():
    long = C.Claim("Zhang, Neubig & Yue 2025", "with a foothold of pre-training exposure to the far cells, RL on far "
                   "data raises pass@256 there over its own base", "passk", "x", 1)
    rows = index.claim_cells(index.Config(claims={"zhang_exposure": long}), [
        ("zhang_exposure", {"row": "zhang_exposure_hop", "task": "hop", "verdict": "x" * 90}),
        ("zhang_exposure", {"row": "b", "task": "chain", "verdict": "y"})])
    lines = index.md_rows(rows).splitlines()[2:]
    assert max(map(len, lines)) <= index.LIMITS["row"]
    assert rows[0]["claim"] == rows[1]["claim"] == (
        "[Zhang, Neubig & Yue 2025: with a foothold of…](claims.md#zhang_exposure)")


def test_claims_page_sections_give_each_row_in_full_and_the_exploratory_primaries():
    page = index.family_claims_page(cfg(), FAMILY, manifests(), EXACT)
    sections = {s.split("\n", 1)[0]: s for s in page.split("\n### ")[1:]}
    assert sections["yue_pass1"].splitlines()[4:6] == [
        "- `yue_pass1_hop` (hop, sign test on the log error ratio, edge): **reproduced**; estimate pass@1: +2.857 "
        "(≥ +2.40) on the log error ratio; raw gain +0.295; sign 8 of 9 (p 0.02); adjusted p 0.0039 (one-sided level "
        "0.025, the sequence); pre-run power 0.95 for 0.693 (log 2). Why: adjusted p 0.0039 ≤ 0.05 in the claimed "
        "direction.",
        "- `yue_pass1_chain` (chain, blocked test on the log error ratio, edge): **not reached**; estimate pass@1: "
        "+0.520 (≥ -0.31) on the log error ratio; raw gain -0.062; sign 3 of 5 (p 0.5); pre-run power 0.10 for 0.693 "
        "(log 2). Why: the sequence stopped at zhang_edge_hop."]
    assert "pre-run power 0.90, jointly with the sequence before it 0.86 for 0.693 (log 2)" in sections["zhang_edge"]
    assert sections["yue_cross"].splitlines()[4:6] == [
        "- `yue_cross_hop` (hop, crossing test on the log error ratio, edge): **not testable here**; not read: out of "
        "the family. Why: not testable here: crossing_arm measured 0, needs ≥ 1.",
        "- chain, pass@256, verified: **exploratory (not in run 2's family)**; effect -0.060 [-0.217, 0.098] "
        "(b − a, unadjusted 95% interval)."]
    assert sections["dapo_dynamic"].splitlines()[4] == (
        "- `dapo_dynamic_rollouts_hop` (hop, answer reports/ablations/answers/dynamic_on_vs_off.json): **not reached "
        "on base_cot**; estimate b − a: -0.433 (≥ -0.41) on the raw gain; raw gain -0.433; pre-run power 0.79 for "
        "0.693 (log 2). Why: the sequence stopped at zhang_edge_hop.")
    # a claim no row tests: exploratory on every task, with its answer's effect, or why it has none
    assert sections["zhang_new"].splitlines()[4:] == [
        "- hop, share newly solved, verified: **exploratory (not in run 2's family)**; effect +0.785 [0.661, 0.908] "
        "(b − a, unadjusted 95% interval).",
        "- chain, share newly solved, verified: **exploratory (not in run 2's family)**; effect —: "
        "passk/chain_grpo_edge_vs_chain_base_edge_new was not computed (fewer than two seeds)."]
    assert sections["exact"].splitlines()[4].startswith("- toy: **holds exactly**; final KL")  # its own line
    # gatekeeping's words, and none of run 1's "underpowered at N seeds"
    assert G.legend() in page and " seeds**" not in page


def test_report_writes_run_2s_pages_from_primaries_json_and_refuses_a_stale_one(tmp_path):
    for m in manifests():
        (tmp_path / index.manifest_path(m["study"])).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / index.manifest_path(m["study"])).write_text(json.dumps(m))
    (tmp_path / index.EXACT_METRICS).parent.mkdir(parents=True)
    (tmp_path / index.EXACT_METRICS).write_text(json.dumps(EXACT))
    (tmp_path / index.PRIMARIES).write_text(json.dumps(FAMILY))
    assert index.inputs(cfg())[-1] == index.PRIMARIES and index.PRIMARIES not in index.inputs(index.Config())
    index.report(cfg(), tmp_path)
    front = (tmp_path / index.INDEX).read_text()
    assert index.md_rows(index.family_verdict_rows(cfg(), FAMILY)) in front
    assert "- `yue_cross_hop`: not testable here: crossing_arm measured 0, needs ≥ 1" in front
    assert "underpowered at" not in front and index.check_limits(front) == []
    assert (tmp_path / index.CLAIMS).read_text() == index.family_claims_page(cfg(), FAMILY, manifests(), EXACT)
    # params naming other rows than the stage judged: the file is stale
    with pytest.raises(ConfigError, match="studies.primaries"):
        index.report(index.Config(claims=dict(CLAIMS), family=["yue_pass1_hop"]), tmp_path)
    (tmp_path / index.PRIMARIES).write_text(json.dumps(FAMILY | {"rows": [ROWS[0] | {"verdict": "holds"}, *ROWS[1:]]}))
    with pytest.raises(ConfigError, match="gatekeeping"):
        index.report(cfg(), tmp_path)


def test_load_config_takes_the_family_from_studies_primaries_rows():
    params = {"studies": {"claims": {}, "primaries": {"sequence": ["a"], "rest": ["b"], "rows": {"a": {}, "b": {}}}}}
    assert index.load_config(params).family == ["a", "b"]
    thin = {"studies": {"claims": {}, "primaries": {"sequence": [], "rest": [], "rows": {}}}}
    assert index.load_config(thin).family == [] and index.load_config({"studies": {"claims": {}}}).family == []


def test_run_1s_pages_regenerate_byte_for_byte_from_run_1s_params(tmp_path):
    """reports/run1/params.yaml (run 1's params, kept for the pilot scripts) with its draft studies.primaries emptied,
    as in the thin DAG: that file was copied after the draft rows were written, and no stage of run 1 read them."""
    params = load_params(ROOT / "reports/run1/params.yaml")
    params["studies"]["primaries"] = {"sequence": [], "rest": [], "rows": {}}
    # run 1 had one headline report over both tasks, where today there is one per task
    run1_studies = ("headline", *(s for s in STUDIES if not s.startswith("headline_")))
    cfg_ = replace(load_config(index, params), studies=run1_studies)
    assert cfg_.family == []
    kept = ROOT / "reports/run1"  # run 1's inputs and pages, kept when run 2's landed over reports/
    for path in index.inputs(cfg_):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(kept / Path(path).relative_to("reports"), tmp_path / path)
    index.report(cfg_, tmp_path)
    for page in (index.INDEX, index.CLAIMS):
        assert (tmp_path / page).read_text() == (kept / Path(page).relative_to("reports")).read_text(), page


def test_claims_py_takes_its_verdict_words_from_gatekeeping():
    """One set of verdict words: claims.py (run 1's judge) imports gatekeeping's, writing none of them out again."""
    import ast

    tree = ast.parse((ROOT / "reasonrl/studies/claims.py").read_text())
    literals = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    assert not literals & set(G.VERDICTS)
    assert (C.REPRODUCED, C.NOT_REPRODUCED, C.CONTRADICTED, C.NOT_TESTABLE, C.UNDERPOWERED) == (
        G.REPRODUCED, G.NOT_REPRODUCED, G.CONTRADICTED, G.NOT_TESTABLE, G.UNDERPOWERED)
