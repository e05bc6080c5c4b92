import random
from pathlib import Path

import pytest
import yaml

from reasonrl.tasks import ALPHABET, PAD_ID, decode, encode
from reasonrl.tasks import hop as task
from reasonrl.tasks.hop import (
    make_eval_set,
    make_problem,
    parse_answer,
    problem_key,
    sample_problem,
    step_labels,
)


def test_walk_follows_edges_and_answer_is_last():
    rng = random.Random(0)
    for _ in range(500):
        p = sample_problem(rng, (2, 16))
        succ = p.succ
        assert len(p.edges) == p.n == len(succ)
        assert len(p.walk) == p.k + 1 and p.walk[0] == p.start
        for a, b in zip(p.walk, p.walk[1:]):
            assert succ[a] == b
        assert p.answer == p.walk[p.k] and p.trace == p.walk[1:]
        assert 1 <= p.k <= min(p.n - 1, 9)


def test_single_cycle_and_prompt_format():
    p = make_problem(random.Random(3), 5, 2)
    x, seen = p.start, set()
    for _ in range(p.n):
        seen.add(x)
        x = p.succ[x]
    assert x == p.start and len(seen) == 5
    edges, question = p.prompt.split("?")
    assert question == f"{p.start}2="
    assert sorted(edges.split(",")) == sorted(f"{a}>{b}" for a, b in p.edges)


def test_targets():
    p = task.build_problem((("b", "d"), ("a", "b"), ("d", "a")), "a", 2)
    assert p.prompt == "b>d,a>b,d>a?a2="
    assert p.target("cot") == "bd|d$" and p.target("direct") == "|d$"
    with pytest.raises(ValueError, match="mode"):
        p.target("verbose")


def test_encode_decode_round_trip():
    rng = random.Random(1)
    for _ in range(50):
        p = sample_problem(rng, (4, 16))
        text = p.prompt + p.target("cot")
        ids = encode(text)
        assert decode(ids) == text and all(0 < i <= len(ALPHABET) for i in ids)
    assert decode([PAD_ID, *encode("a>b")]) == "a>b"
    with pytest.raises(ValueError, match="alphabet"):
        encode("a\nb")


@pytest.mark.parametrize("resp,want", [
    ("bda|a$", "a"), ("|c$", "c"), ("ab|b$xyz", "b"), ("ab|b", None), ("abb$", None),
    ("ab|bc$", None), ("|$", None), ("a|1$", None), ("", None), ("c|d$|e$", "d"), ("b|y$", None),
])
def test_parse_answer(resp, want):
    assert parse_answer(resp) == want


def test_step_labels():
    p = task.build_problem((("b", "d"), ("a", "b"), ("d", "a")), "a", 2)
    assert step_labels(p, "bda") == [True, True, True]
    assert step_labels(p, "bad") == [True, False, False]
    assert step_labels(p, "dab") == [False, True, True]
    assert step_labels(p, "") == []


def test_eval_set_is_a_pure_function():
    a = make_eval_set(12, 4, 10, seed=21)
    assert a == make_eval_set(12, 4, 10, seed=21)
    assert a != make_eval_set(12, 4, 10, seed=22)
    assert all(p.n == 12 and p.k == 4 for p in a)
    assert task.Problem.from_dict(a[0].to_dict()) == a[0]


@pytest.mark.parametrize("call,name", [
    (lambda: make_problem(random.Random(0), 17, 3), "n=17"),
    (lambda: make_problem(random.Random(0), 1, 1), "n=1"),
    (lambda: make_problem(random.Random(0), 6, 6), "k=6"),
    (lambda: make_problem(random.Random(0), 16, 10), "k=10"),
    (lambda: make_problem(random.Random(0), 6, 0), "k=0"),
    (lambda: task.build_problem((("a", "z"), ("z", "a")), "a", 1), "edges"),
    (lambda: task.build_problem((("a", "b"), ("b", "a")), "c", 1), "start"),
    (lambda: sample_problem(random.Random(0), (4, 20)), "n_range"),
    (lambda: make_eval_set(8, 3, 0, 1), "count"),
    (lambda: make_eval_set(4, 2, 25, 1), "count=25: only 24"),  # 3! cycles x 4 starts
])
def test_bad_arguments_name_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_problem_key_ignores_edge_order_and_tells_problems_apart():
    p = task.build_problem((("b", "d"), ("a", "b"), ("d", "a")), "a", 2)
    q = task.build_problem((("d", "a"), ("b", "d"), ("a", "b")), "a", 2)  # the same cycle, listed otherwise
    assert p.prompt != q.prompt and problem_key(p) == problem_key(q) == "abd:a2"
    assert problem_key(task.build_problem(p.edges, "b", 2)) == "abd:b2"
    assert problem_key(task.build_problem(p.edges, "a", 1)) == "abd:a1"
    assert problem_key(task.build_problem((("a", "d"), ("d", "b"), ("b", "a")), "a", 2)) == "adb:a2"


def test_eval_set_problems_are_distinct_and_skip_excluded():
    every = make_eval_set(4, 2, 24, seed=0)  # all 3! x 4 problems of a 4-ring
    assert len({problem_key(p) for p in every}) == 24
    keep = make_eval_set(5, 2, 30, seed=1)
    other = make_eval_set(5, 2, 30, seed=2, exclude=frozenset(problem_key(p) for p in keep))
    assert not {problem_key(p) for p in keep} & {problem_key(p) for p in other}
    assert len({problem_key(p) for p in other}) == 30
    with pytest.raises(ValueError, match="count=20: only 19"):
        make_eval_set(4, 2, 20, seed=0, exclude=frozenset(problem_key(p) for p in every[:5]))


@pytest.mark.parametrize("task", ["hop", "chain"])
def test_validation_sets_are_disjoint_from_every_test_set(task):
    from reasonrl.pipeline import TEST_ROLES, VALIDATION_ROLES, build_data_sets, data_config

    params = yaml.safe_load((Path(__file__).resolve().parents[1] / "params.yaml").read_text())
    cfg = data_config(params, task)
    sets = build_data_sets(task, cfg)
    assert set(sets) == set(TEST_ROLES) | set(VALIDATION_ROLES)
    tested = {role: {p.key for p in sets[role]} for role in TEST_ROLES}
    for role in TEST_ROLES:
        assert len(sets[role]) >= 1000, role  # the evidence standard's test-set size
    for val in VALIDATION_ROLES:
        keys = {p.key for p in sets[val]}
        assert len(keys) == len(sets[val]) >= 1000
        for role, test_keys in tested.items():
            assert not keys & test_keys, (val, role)
        assert cfg[val].seed not in {cfg[r].seed for r in TEST_ROLES}


def test_a_validation_set_skips_what_a_test_set_drew():
    from reasonrl.pipeline import ROLES, EvalSetConfig, build_data_sets

    # 4-rings with k = 2 have 24 problems: a test set of 20 leaves exactly 4 for validation
    cfg = {role: EvalSetConfig(ns=[5], ks=[2], count=1, seed=9) for role in ROLES}
    cfg["in"] = EvalSetConfig(ns=[4], ks=[2], count=20, seed=0)
    cfg["val_in"] = EvalSetConfig(ns=[4], ks=[2], count=4, seed=0)
    sets = build_data_sets("hop", cfg)
    assert {problem_key(p) for p in sets["in"]} | {problem_key(p) for p in sets["val_in"]} == \
        {problem_key(p) for p in make_eval_set(4, 2, 24, seed=0)}


@pytest.mark.parametrize("spec,message", [
    ({"n_range": (1, 4)}, r"^n_range: need 2 <= lo <= hi <= 16, got \[1, 4\]"),
    ({"n_range": (4, 17)}, r"^n_range: need 2 <= lo <= hi <= 16, got \[4, 17\]"),
    ({"n_range": (4, 8), "k_max": 0}, r"^k_max: must be in \[1, 7\] \(the most the largest size 8 allows\), got 0"),
    ({"n_range": (4, 8), "k_max": 8}, r"^k_max: must be in \[1, 7\] \(the most the largest size 8 allows\), got 8"),
    ({"n_range": (4, 16), "k_max": 10}, r"^k_max: must be in \[1, 9\] \(the most the largest size 16 allows\), got 10"),
    ({"n": 17, "k": 3}, r"^n: must be in \[2, 16\], got 17"),
    ({"n": 8, "k": 8}, r"^k: must be in \[1, 7\] for n=8, got 8"),
    ({"n": 16, "k": 10}, r"^k: must be in \[1, 9\] for n=16, got 10"),
    ({"k_max": 3}, r"^k_max: bounds the difficulties of a size range: give n_range"),
    ({"n_range": (4, 8), "k_min": 4}, r"^k_min: must be in \[1, 3\] \(the most the smallest size 4 allows"),
    ({"n_range": (4, 12), "ks": [3]}, r"^ks: not a spec key of task hop"),
])
def test_hop_specs_out_of_range_name_their_key(spec, message):
    from reasonrl.config import ConfigError

    with pytest.raises(ConfigError, match=message):
        task.TASK.check_spec(spec)
    edge = {"n_range": (4, 16), "k_max": 9} if "n_range" in spec or "k_max" in spec else {"n": 16, "k": 9}
    task.TASK.check_spec(edge)  # the largest values allowed pass
