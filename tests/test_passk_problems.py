"""passk.eval.problems: pass@k on a fixed, stratified, nested subset of each set (passk_eval.subset), the
problems/of the passk@ stage writes, the report's alignment check and wording, and power.py's projection."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from reasonrl.config import ConfigError, from_dict
from reasonrl.evaluate import EvalConfig
from reasonrl.pipeline import read_problems
from reasonrl.studies import newsol, passk, passk_eval
from reasonrl.studies.passk_eval import subset

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import power  # noqa: E402

TASK = SimpleNamespace(difficulty="k")


def prob(name: str, n: int, k: int):
    return SimpleNamespace(key=name, n=n, difficulty=k, task=TASK)


# three cells, interleaved in file order: (3, 1) a*, (3, 2) b*, (4, 1) c* -- two share n, two share k
FILE = [prob("a0", 3, 1), prob("b0", 3, 2), prob("a1", 3, 1), prob("c0", 4, 1), prob("b1", 3, 2),
        prob("a2", 3, 1), prob("c1", 4, 1), prob("b2", 3, 2), prob("c2", 4, 1), prob("a3", 3, 1),
        prob("b3", 3, 2), prob("c3", 4, 1)]


def keys(problems) -> list[str]:
    return [p.key for p in problems]


def test_subset_takes_the_first_of_each_cell_in_file_order():
    assert keys(subset(FILE, 3)) == ["a0", "b0", "c0"]
    assert keys(subset(FILE, 6)) == ["a0", "b0", "a1", "c0", "b1", "c1"]
    assert keys(subset(FILE, 9)) == ["a0", "b0", "a1", "c0", "b1", "a2", "c1", "b2", "c2"]
    assert keys(subset(FILE, 12)) == keys(FILE) and subset(FILE, None) is FILE


def test_subsets_are_nested_and_stratified_on_a_real_set():
    hop_in = read_problems(ROOT / "data/hop_in.jsonl")  # 8 (n, k) cells of 125
    small, large = subset(hop_in, 248), subset(hop_in, 256)
    assert (len(small), len(large)) == (248, 256)
    assert {p.key for p in small} < {p.key for p in large}
    for part in (small, large):
        cells = {}
        for p in part:
            cells[(p.n, p.k)] = cells.get((p.n, p.k), 0) + 1
        assert len(cells) == 8 and set(cells.values()) == {len(part) // 8}
    assert {p.key for p in subset(FILE, 3)} < {p.key for p in subset(FILE, 6)} < {p.key for p in subset(FILE, 9)}


def test_a_count_that_does_not_split_over_the_cells_fails_naming_the_key_and_the_counts_that_would():
    hop_in = read_problems(ROOT / "data/hop_in.jsonl")
    with pytest.raises(ConfigError, match=r"passk\.eval\.problems.*250.*8 \(n, k\) cells.*248 or 256"):
        subset(hop_in, 250)
    with pytest.raises(ConfigError, match=r"passk\.eval\.problems.*3 \(n, k\) cells.*\(a multiple of 3: 3\)$"):
        subset(FILE, 2)
    with pytest.raises(ConfigError, match=r"passk\.eval\.problems.*5 of each of the 3 cells.*only 4.*at most 12"):
        subset(FILE, 15)


def test_the_key_lives_in_passk_eval_only():
    cfg = from_dict(passk_eval.Config, {"eval": {"passk_N": 4, "problems": 248}}, "passk")
    assert cfg.eval.problems == 248 and cfg.plan  # and the draws' plans keep it:
    cfg.models = {"x": passk_eval.PasskModel("hop", "m", draw=2)}
    assert cfg.plan("x")[1].problems == 248
    assert from_dict(passk_eval.Config, {}, "passk").eval.problems is None
    with pytest.raises(ConfigError, match=r"passk\.eval\.problems.*at least 1"):
        from_dict(passk_eval.Config, {"eval": {"problems": 0}}, "passk")
    with pytest.raises(ConfigError, match=r"passk\.eval\.problems.*integer"):
        from_dict(passk_eval.Config, {"eval": {"problems": 24.5}}, "passk")
    with pytest.raises(ConfigError, match=r"eval\.problems.*unknown key"):  # the eval stages measure every problem
        from_dict(EvalConfig, {"problems": 248}, "eval")


def test_measure_writes_problems_of_and_checks_every_set_before_sampling(monkeypatch):
    sampled = []

    def fake_report(model, problems, cfg):
        sampled.append(keys(problems))
        per = [0] * len(problems)
        return {"pass_at_k": {"1": 0.0}, "pass_at_k_answer": {"1": 0.0}, "random_baseline": {"1": 0.1},
                "distinct_answers": 1.0, "guess_distinct": 2.5, "entropy": 0.5, "guess_answer_entropy": 1.5,
                "counts": per, "counts_answer": per}

    monkeypatch.setattr(passk_eval, "sampling_report", fake_report)
    two = [prob("d0", 5, 1), prob("e0", 5, 2), prob("d1", 5, 1), prob("e1", 5, 2)]  # 2 cells
    cfg = passk_eval.PasskEval(passk_N=1, passk_ks=[1], problems=6)
    with pytest.raises(ConfigError, match=r"passk\.eval\.problems.*set 'small'"):
        passk_eval.measure(None, {"file": FILE, "small": two}, cfg)  # 6 fits FILE, but a cell of two holds 2
    assert sampled == []
    out = passk_eval.measure(None, {"file": FILE}, cfg)
    assert sampled == [["a0", "b0", "a1", "c0", "b1", "c1"]]
    assert {k: out["sets"]["file"][k] for k in ("problems", "of", "difficulties")} == {
        "problems": 6, "of": 12, "difficulties": [1, 2]}
    assert len(out["sets"]["file"]["counts"]) == 6
    # a uniform guess's distinct answers and answer entropy go into the data file beside the model's
    assert {k: out["sets"]["file"][k] for k in ("guess_distinct", "guess_answer_entropy")} == {
        "guess_distinct": 2.5, "guess_answer_entropy": 1.5}
    every = passk_eval.measure(None, {"file": FILE}, EvalConfig(passk_N=1, passk_ks=[1]))  # an eval: section's
    assert (every["sets"]["file"]["problems"], every["sets"]["file"]["of"]) == (12, 12)


def test_the_report_says_how_many_problems_and_refuses_misaligned_files():
    assert passk.measured({"problems": 248, "of": 1000}) == "248 of 1,000 problems"
    assert passk.measured({"problems": 1000}) == "1,000 problems"  # a file from before the key: all
    assert passk.measured({"problems": 16, "of": 16}) == "16 problems"

    def data(n, of):
        return {"task": "hop", "sets": {"in": {"problems": n, "of": of, "counts": [0] * n}}}

    ok = {"base": data(8, 16), "GRPO": data(8, 16)}
    assert newsol.aligned(ok) is ok
    with pytest.raises(ValueError, match="GRPO, set in: 16 counts of 16 of 16 problems, but base has 8 of 16"):
        newsol.aligned({"base": data(8, 16), "GRPO": data(16, 16)})
    assert newsol.aligned({"base": data(8, 16), "cbase": {**data(16, 16), "task": "chain"}})  # other task: own sets


def test_power_projects_the_problem_term_only():
    ans = {"se": 0.05, "se_run": 0.03, "df": 4, "problems": 1000, "mde": 0.2}
    # problem variance 0.05^2 - 0.03^2 = 0.0016, x 1000 / 250 = 0.0064; + 0.0009 run
    from reasonrl import stats
    assert power.projected_mde(ans, 250) == pytest.approx(stats.mde(0.0073 ** 0.5, 4))
    assert power.projected_mde(ans, 1000) == pytest.approx(stats.mde(0.05, 4))
    claim = SimpleNamespace(study="passk")
    cols = power.problem_columns(claim, "grpo_vs_base_edge_k001", ans, None, [250])
    assert cols == {"MDE now": "0.200 (1,000 problems)", "MDE at 250 problems": f"{stats.mde(0.0073 ** 0.5, 4):.3f}"}
    for c, primary in ((claim, "grpo_vs_base_edge_new"), (SimpleNamespace(study="zero"), "x")):
        assert set(power.problem_columns(c, primary, ans, None, [250]).values()) == {"—"}
