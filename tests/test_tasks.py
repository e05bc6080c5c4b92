"""The Task conformance suite: every registered task (reasonrl/tasks) keeps the promises the library relies
on. A new task passes these before anything else uses it."""

from __future__ import annotations

import random

import pytest

from reasonrl.config import ConfigError
from reasonrl.tasks import ANSWER_MARK, END, TASKS, VOCAB_SIZE, decode, encode, get_task, trace_of

TASK_NAMES = sorted(TASKS)


def problems(task, seed: int = 0, count: int = 200) -> list:
    rng = random.Random(seed)
    return [task.sample(rng, task.example_spec) for _ in range(count)]


@pytest.fixture(params=TASK_NAMES)
def task(request):
    return TASKS[request.param]


def test_prompts_and_targets_round_trip_through_the_vocabulary(task):
    assert set(task.chars) >= {ANSWER_MARK, END} and VOCAB_SIZE == len(set(c for t in TASKS.values()
                                                                           for c in t.chars)) + 1
    for p in problems(task):
        for text in (p.prompt, p.target("cot"), p.target("direct")):
            assert decode(encode(text)) == text
            assert 0 not in encode(text)  # 0 pads


def test_gold_targets_are_correct_well_formed_and_in_the_response_format(task):
    for p in problems(task):
        cot, direct = p.target("cot"), p.target("direct")
        assert cot == p.trace + ANSWER_MARK + p.answer + END and direct == ANSWER_MARK + p.answer + END
        assert p.is_correct(cot) and p.is_correct(direct)
        assert p.classify(cot) == p.classify(direct) == "correct" == task.failure_types[0]
        assert task.parse_answer(cot) == p.answer and trace_of(cot) == p.trace
        assert task.thinks(cot) == bool(p.trace) and not task.thinks(direct)
        assert task.well_formed(cot) == bool(p.trace) and not task.well_formed(direct)
        assert not task.well_formed(cot + END) and not task.well_formed(p.trace)
        assert len(cot) <= p.budget  # the sampler leaves room for the gold response


def test_gold_steps_are_all_right_and_a_corrupted_step_is_caught(task):
    rng = random.Random(1)
    for p in problems(task, count=100):
        assert p.step_labels(p.trace) == [True] * len(p.trace)
        probes = task.probes(p, rng)
        assert list(probes) == list(task.failure_types)  # one hand-built response per outcome type
        for kind, response in probes.items():
            assert p.classify(response) == kind, (kind, response)
            assert p.is_correct(response) == (kind == "correct")
        assert not all(p.step_labels(trace_of(probes["lookup"])))  # the corrupted step is labelled wrong


def test_difficulty_is_respected(task):
    spec, cell = task.example_spec, task.example_cell
    task.check_spec(spec)
    task.check_spec(cell)
    drawn = problems(task)
    assert all(p.budget <= task.max_budget(spec) for p in drawn)
    assert max(p.budget for p in drawn) == task.max_budget(spec)  # 200 draws reach the hardest problem
    assert all(len(p.prompt) + len(p.target("cot")) <= task.longest(spec, "cot") for p in drawn)
    assert len({p.difficulty for p in drawn}) > 1
    cells = task.eval_set(cell, 20, seed=3)
    assert len({p.key for p in cells}) == 20
    assert all(p.difficulty == cell[task.difficulty] for p in cells)
    excluded = task.eval_set(cell, 20, seed=3, exclude=frozenset(p.key for p in cells))  # the same draws, skipped
    assert len(excluded) == 20 and not {p.key for p in excluded} & {p.key for p in cells}


def test_a_narrow_range_draws_only_its_difficulties(task):
    spec = task.example_narrow
    task.check_spec(spec)
    rng = random.Random(2)
    drawn = [task.sample(rng, spec) for _ in range(300)]
    assert {p.difficulty for p in drawn} == set(range(spec["k_min"], spec["k_max"] + 1))
    assert all(len(p.prompt) + p.budget <= task.longest(spec, "sampled") for p in drawn)
    with pytest.raises(ConfigError, match="^k_min: must be in"):
        task.check_spec({**spec, "k_min": spec["k_max"] + 1})
    with pytest.raises(ConfigError, match="^k_min: must be in"):
        task.check_spec({**spec, "k_min": spec["n_range"][0]})  # the smallest size cannot hold it
    # k_min = 1 is the full range: the same draws as a spec without it
    wide = {k: v for k, v in spec.items() if k != "k_min"}
    assert [task.sample(random.Random(3), wide) for _ in range(5)] == \
        [task.sample(random.Random(3), {**wide, "k_min": 1}) for _ in range(5)]


def test_the_same_rng_gives_the_same_problems_and_files_round_trip(task):
    assert problems(task, seed=5) == problems(task, seed=5)
    assert problems(task, seed=5) != problems(task, seed=6)
    assert task.eval_set(task.example_cell, 10, seed=7) == task.eval_set(task.example_cell, 10, seed=7)
    for p in problems(task, count=50):
        q = task.from_dict(p.to_dict())
        assert q == p and q.key == p.key and q.task is task


def test_the_random_guess_baseline_is_a_probability_rising_with_k(task):
    for p in problems(task, count=20):
        values = [p.random_guess(k) for k in (0, 1, 4, 32)]
        assert values[0] == 0.0 and all(0 < v <= 1 for v in values[1:]) and values == sorted(values)


def test_an_unknown_task_is_one_error_naming_the_key():
    with pytest.raises(ConfigError, match=r"^bases\.cot\.task: unknown task 'hopp' \(did you mean 'hop'\? "
                                          r"registered tasks: hop"):
        get_task("hopp", "bases.cot.task")
