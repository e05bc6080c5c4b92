"""Trace-verified correctness (issue 51, item 1): a sample counts when its answer is right and its trace is right
step by step (`tasks.base.verified`); a right answer alone (`Problem.is_correct`) is the secondary, answer-only
correctness. Hand-built responses: right answers after wrong or missing traces, a guessing policy, and pass@k
from a count table written out."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

import reasonrl.evaluate as ev
from reasonrl.evaluate import answer_only, baseline_curve, check_verified, pass_at_k, pass_curve_of
from reasonrl.io import write_text
from reasonrl.studies import PasskModel, answers, manifest, passk
from reasonrl.tasks import get_task, names, trace_of
from reasonrl.tasks.base import verified
from reasonrl.tasks.hop import build_problem

RING = (("a", "b"), ("b", "c"), ("c", "d"), ("d", "e"), ("e", "a"))
P = build_problem(RING, "a", 3)  # walk a b c d: gold "bcd|d$"


def problems(task, count: int, seed: int = 0) -> list:
    rng = random.Random(seed)
    return [task.sample(rng, task.example_spec) for _ in range(count)]


def mutants(p, rng: random.Random) -> list[str]:
    """Responses near the gold one: each trace character replaced, the trace cut or run on, with the right
    answer and a wrong one, the task's probes, and the direct answer."""
    gold, chars = p.trace, sorted(set(p.task.chars) - {"|", "$"})
    traces = {gold, gold[:-1], gold[1:], gold + gold[-1], gold + rng.choice(chars), ""}
    traces |= {gold[:i] + rng.choice(chars) + gold[i + 1:] for i in range(len(gold))}
    wrong = next(r for r in p.task.probes(p, rng).values() if p.task.parse_answer(r) not in (None, p.answer))
    answers = {p.answer, p.task.parse_answer(wrong)}
    return [t + "|" + a + "$" for t in traces for a in answers] + list(p.task.probes(p, rng).values())


@pytest.mark.parametrize("name", names())
def test_verified_is_the_gold_trace_and_a_right_answer(name):
    # for hop and chain, "every step label true, the gold trace's length, a right answer" is the same as
    # "the gold trace and a right answer": each label pins its character given the ones before it
    task, rng = get_task(name), random.Random(1)
    seen = {True: 0, False: 0}
    for p in problems(task, 40):
        for r in mutants(p, rng):
            want = trace_of(r) == p.trace and p.is_correct(r)
            assert verified(p, r) == want, (p.key, r)
            assert not verified(p, r) or p.is_correct(r)  # verified implies a right answer
            seen[want] += 1
    assert seen[True] >= 40 and seen[False] > 10 * seen[True]  # both sides reached, many near misses


@pytest.mark.parametrize("name", names())
def test_a_right_answer_with_a_wrong_or_missing_trace_is_answer_only(name):
    task, rng = get_task(name), random.Random(2)
    for p in problems(task, 20, seed=3):
        right = "|" + p.answer + "$"
        wrong_step = p.trace[:-1] + next(c for c in task.chars if c not in (p.trace[-1], "|", "$"))
        for response in (right, wrong_step + right, p.trace[:-1] + right, p.trace + p.trace[-1] + right):
            assert p.is_correct(response) and not verified(p, response), (p.key, response)
        assert verified(p, p.target("cot")) and not verified(p, p.target("direct"))
        miscopy = task.probes(p, rng)["miscopy"]  # the gold trace, then a wrong answer
        assert trace_of(miscopy) == p.trace and not p.is_correct(miscopy) and not verified(p, miscopy)


def test_hand_built_responses_split_verified_from_answer_only():
    responses = ["bcd|d$", "|d$", "bce|d$", "bc|d$", "bcde|d$", "bcd|c$", "bcd", ""]
    assert [verified(P, r) for r in responses] == [True] + [False] * 7
    assert [P.is_correct(r) for r in responses] == [True] * 5 + [False] * 3
    rows = ev.outcome_rows("s", [P] * len(responses), responses)
    assert [r["correct"] for r in rows] == [1, 0, 0, 0, 0, 0, 0, 0]
    assert [r["correct_answer"] for r in rows] == [1, 1, 1, 1, 1, 0, 0, 0]
    assert [r["outcome"] for r in rows][:5] == ["correct"] * 5  # the outcome types judge the answer


def guesses(p, rng: random.Random, n: int) -> list[str]:
    """A guessing policy: n answers drawn uniformly among those the prompt allows, with no trace."""
    allowed = [x for x, _ in p.edges] if p.task.name == "hop" else [str(d) for d in range(7)]
    return ["|" + rng.choice(allowed) + "$" for _ in range(n)]


@pytest.mark.parametrize("name", names())
def test_a_guessing_policy_scores_its_random_guess_by_the_answer_and_zero_verified(name):
    task, rng = get_task(name), random.Random(4)
    ps, N, ks = problems(task, 300, seed=5), 32, [1, 4, 32]
    responses = [guesses(p, rng, N) for p in ps]
    curve, counts = pass_curve_of(ps, responses, ks)
    curve_answer, counts_answer = pass_curve_of(ps, responses, ks, answer_only)
    assert counts == [0] * len(ps) and curve == {"1": 0.0, "4": 0.0, "32": 0.0}
    guess = baseline_curve(ps, ks)
    for k in map(str, ks):
        # the estimator averages 300 problems' N = 32 Bernoulli draws: its sd at k = 1 is at most ~0.009
        assert curve_answer[k] == pytest.approx(guess[k], abs=0.03), k
    assert curve_answer["1"] > 0.1 and check_verified(counts, counts_answer) == counts_answer


def test_pass_at_k_from_a_count_table_written_out():
    # N = 4 samples of P per problem row: c verified (the gold response), a - c answer-only (a direct answer),
    # the rest wrong
    table = [(0, 2), (1, 3), (2, 4), (4, 4)]
    responses = [["bcd|d$"] * c + ["|d$"] * (a - c) + ["|c$"] * (4 - a) for c, a in table]
    curve, counts = pass_curve_of([P] * 4, responses, [1, 2, 4])
    curve_answer, counts_answer = pass_curve_of([P] * 4, responses, [1, 2, 4], answer_only)
    assert counts == [0, 1, 2, 4] and counts_answer == [2, 3, 4, 4]
    # pass@2 = 1 - C(4 - c, 2) / C(4, 2): c = 0, 1, 2, 3, 4 -> 0, 1/2, 5/6, 1, 1
    assert curve == pytest.approx({"1": (0 + 0.25 + 0.5 + 1) / 4, "2": (0 + 0.5 + 5 / 6 + 1) / 4, "4": 3 / 4})
    assert curve_answer == pytest.approx({"1": (0.5 + 0.75 + 1 + 1) / 4, "2": (5 / 6 + 1 + 1 + 1) / 4, "4": 1.0})
    assert curve == pytest.approx({"1": 0.4375, "2": 0.583333, "4": 0.75}, abs=1e-6)
    assert curve_answer == pytest.approx({"1": 0.8125, "2": 0.958333, "4": 1.0}, abs=1e-6)
    # the passk report's arms from the same table: per-problem pass@2 and its answer-only twin
    cfg = passk.Config(bases=["b"], models={"b": PasskModel("hop", "x")})
    data = {"b": {"N": 4, "sets": {"s": {"counts": counts, "counts_answer": counts_answer}}}}
    arm = passk.arm_passk(cfg, data, "b", "s", 2)
    assert arm.by_seed[None] == pytest.approx([0, 0.5, 5 / 6, 1])
    assert arm.answer.by_seed[None] == pytest.approx([pass_at_k(4, a, 2) for _, a in table])


def test_verified_never_exceeds_answer_only_guards():
    check_verified([0, 1, 2], [0, 1, 3])
    with pytest.raises(ValueError, match="verified correctness exceeds answer-only"):
        check_verified([0, 2], [1, 1])
    arm = answers.ArmOutcomes("x", {0: np.array([1.0, 0.0])}, ["p", "q"])
    answers.with_answer(arm, answers.ArmOutcomes("x", {0: np.array([1.0, 1.0])}, ["p", "q"]))
    with pytest.raises(ValueError, match="arm 'x': a verified outcome exceeds its answer-only one"):
        answers.with_answer(arm, answers.ArmOutcomes("x", {0: np.array([0.0, 1.0])}, ["p", "q"]))


def test_outcome_files_carry_answer_only_arms_and_answers(tmp_path: Path):
    def outcomes(path: str, verified_: list[int], right: list[int]) -> None:
        write_text(tmp_path / path, ev.outcomes_csv([
            {"set": "edge", "problem": f"p{i}", "k": 3, "correct": v, "correct_answer": a, "outcome": "x",
             "sampled": v / 2, "sampled_answer": a / 2} for i, (v, a) in enumerate(zip(verified_, right))]))

    outcomes("a.csv", [1, 0, 0, 0], [1, 1, 0, 0])
    outcomes("b.csv", [1, 1, 0, 0], [1, 1, 1, 1])
    a = answers.arm_outcomes(tmp_path, "a", {None: "a.csv"}, "edge")
    b = answers.arm_outcomes(tmp_path, "b", {None: "b.csv"}, "edge", "sampled")
    assert a.by_seed[None].tolist() == [1, 0, 0, 0] and a.answer.by_seed[None].tolist() == [1, 1, 0, 0]
    assert b.answer.by_seed[None].tolist() == [0.5] * 4 and b.answer.answer is None
    x = answers.Answer.of("b_vs_a", "a", "b", a, answers.arm_outcomes(tmp_path, "b", {None: "b.csv"}, "edge"), 0.01)
    assert (x.cmp.a, x.cmp.b, x.answer_only.a, x.answer_only.b) == (0.25, 0.5, 0.5, 1.0)
    (m,) = manifest.manifest_answers([x])
    assert (m["a"], m["b"], m["answer_only"]["a"], m["answer_only"]["b"]) == (0.25, 0.5, 0.5, 1.0)
    outcomes("bad.csv", [1, 1, 0, 0], [1, 0, 0, 0])
    with pytest.raises(ValueError, match="a verified outcome exceeds its answer-only one"):
        answers.arm_outcomes(tmp_path, "bad", {None: "bad.csv"}, "edge")
