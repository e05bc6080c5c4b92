"""Run 2's gates read again on the run's own outputs (reasonrl.studies.gate_readings), from hand-made files."""

import json
from pathlib import Path

import pytest

from reasonrl.config import from_dict
from reasonrl.studies import gate_readings as R
from reasonrl.studies import gatekeeping as G
from reasonrl.studies import primaries as P

N = 4  # samples per problem


def write(root: Path, model: str, sets: dict) -> None:
    path = root / "reports" / "passk" / "data" / f"{model}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"N": N, "sets": sets}))


def params() -> dict:
    models = {"b0": "base_c0", "b1": "base_c1", "a0": "rl_ans_s0", "a1": "rl_ans_s1", "v0": "rl_ver_s0",
              "v1": "rl_ver_s1", "e0": "base_e0", "e1": "base_e1", "e2": "base_e2"}
    return {"runs_noeval": {"ans_s0": {"init": "base_c0"}, "ans_s1": {"init": "base_c1"},
                            "ver_s0": {"init": "base_c0"}, "ver_s1": {"init": "base_c1"}},
            "passk": {"bases": ["base", "exp"], "sets": ["edge", "far"],
                      "models": {k: {"task": "hop" if k.startswith("e") else "chain", "model": m}
                                 for k, m in models.items()}
                      | {"b0_draw2": {"task": "chain", "model": "base_c0", "draw": 2, "sets": ["edge"]}},
                      "arms": {"base": ["b0", "b1"], "answer-only": ["a0", "a1"], "verified": ["v0", "v1"],
                               "exp": ["e0", "e1", "e2"]}}}


def row(**kw) -> P.Row:
    return from_dict(P.Row, {"claim": "c", "task": "chain", "test": "blocked", "rl": "verified",
                             "base": "answer-only", "power_for": 0.693, "power_reason": "log 2", "power": 0.1} | kw,
                     "r")


def test_chain_corruption_is_the_answer_only_arms_rise_over_its_base(tmp_path):
    # corrupted share = mean over problems of (answer-only count - verified count) / N
    write(tmp_path, "b0", {"edge": {"counts": [2, 4], "counts_answer": [3, 4]}})  # 1/8 = 0.125
    write(tmp_path, "b1", {"edge": {"counts": [0, 0], "counts_answer": [0, 0]}})  # 0
    write(tmp_path, "b0_draw2", {"edge": {"counts": [0, 0], "counts_answer": [4, 4]}})  # a second draw: not read
    write(tmp_path, "a0", {"edge": {"counts": [1, 1], "counts_answer": [4, 3]}})  # 5/8 = 0.625: +0.5 over b0
    write(tmp_path, "a1", {"edge": {"counts": [3, 2], "counts_answer": [3, 4]}})  # 2/8 = 0.25: +0.25 over b1
    spec = G.GateSpec(threshold=0.02, what="rise", measured=0.11)
    assert R.chain_corruption(row(), spec, params(), tmp_path) == pytest.approx((0.5 + 0.25) / 2)


def test_exposure_foothold_counts_the_bases_with_a_foothold(tmp_path):
    # N = 4, k = 4: pass@4 is the share of problems with any verified sample; pass@1 the mean count / 4
    write(tmp_path, "e0", {"far": {"counts": [0, 1, 0, 0]}})  # pass@1 1/16 <= 0.1, pass@4 1/4 >= 0.2: held
    write(tmp_path, "e1", {"far": {"counts": [0, 0, 0, 0]}})  # no foothold
    write(tmp_path, "e2", {"far": {"counts": [4, 4, 0, 0]}})  # pass@1 0.5: mastery, not a foothold
    spec = G.GateSpec(threshold=3, what="bases", measured=3, pass1=0.1, top_k=0.2)
    r = row(task="hop", rl="verified", base="exp", set="far", k=4)
    assert R.exposure_foothold(r, spec, params(), tmp_path) == 1.0


def test_a_foothold_without_bounds_in_params_takes_the_defaults():
    # pass@1 at most 0.1 (a foothold, not mastery) and pass@k at least 0.2, the rule scripts/gates.py measured with
    assert G.foothold(None, 0.1, 0.2) and G.foothold(G.GateSpec(threshold=3, what="b"), 0.05, 0.9)
    assert not G.foothold(None, 0.11, 0.9) and not G.foothold(None, 0.05, 0.19)
    assert G.foothold(G.GateSpec(threshold=3, what="b", pass1=0.3, top_k=0.5), 0.25, 0.5)


def test_shao_base_reads_the_base_stages_greedy_edge_accuracy(tmp_path):
    path = tmp_path / R.base_metrics_path("cot_s6")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"in": {"acc": 1.0}, "edge": {"acc": 0.4321, "acc_answer": 0.5}}))
    spec = G.GateSpec(threshold=0.5, what="greedy", measured=0.535)
    r = row(task="hop", test="answer", rl="", base="cot_s6", scale="raw gain")
    assert R.shao_base(r, spec, {}, tmp_path) == 0.4321
    # in the run: read (and rounded) where it passed before; a gate that failed before, or has no reader, is not read
    specs = {"shao_base": spec, "clip_regime": G.GateSpec(threshold=0.01, what="clip", measured=0.0007),
             "other": G.GateSpec(threshold=1, what="no reader", measured=2)}
    rows = {"s": from_dict(P.Row, {**vars_of(r), "gates": ["shao_base", "other"]}, "r"),
            "c": from_dict(P.Row, {**vars_of(r), "gates": ["clip_regime"]}, "r")}
    assert R.in_run(rows, specs, {}, tmp_path) == {"shao_base": 0.4321}
    failed = {**specs, "shao_base": G.GateSpec(threshold=0.5, what="greedy", measured=0.25)}  # out before the run
    assert R.in_run(rows, failed, {}, tmp_path) == {} and R.inputs(rows, failed) == []
    assert R.inputs(rows, specs) == ["reports/metrics/base_cot_s6.json"]
    # a reading under the threshold holds the row at p = 1 in the family (gatekeeping.judge)
    gate = spec.gate("shao_base")
    assert gate.passes(gate.before) and not gate.passes(0.4321)


def vars_of(r: P.Row) -> dict:
    return {k: v for k, v in vars(r).items() if v not in (None, (), "")}
