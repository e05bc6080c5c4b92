import itertools
import math
import random
from fractions import Fraction

import pytest
import torch

from reasonrl.evaluate import (
    EvalConfig,
    answer_only,
    auc,
    baseline_curve,
    distinct_answers,
    failure_mix,
    failure_mix_of,
    greedy_accuracy,
    greedy_eval,
    greedy_responses,
    outcome_rows,
    outcomes_csv,
    pass_at_k,
    pass_curve,
    pass_curve_of,
    sample_entropy,
    sample_entropy_plain,
    sample_set,
    sampling_report,
    think_profile,
)
from reasonrl.tasks.hop import (
    FAILURE_TYPES,
    build_problem,
    classify,
    make_eval_set,
    make_problem,
    random_guess_baseline,
)

# ring a>b>c>d>e>f>a, start a, k = 3: walk a b c d, trace "bcd", answer d
P = build_problem((("a", "b"), ("b", "c"), ("c", "d"), ("d", "e"), ("e", "f"), ("f", "a")), "a", 3)


def brute_pass_at_k(n, c, k):
    """Share of the k-subsets of n samples (c of them correct) holding at least one correct one."""
    samples = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    return sum(any(samples[i] for i in s) for s in subsets) / len(subsets)


def test_pass_at_k_matches_brute_force_over_subsets():
    for n in range(1, 9):
        for c in range(n + 1):
            for k in range(1, n + 1):
                assert pass_at_k(n, c, k) == pytest.approx(brute_pass_at_k(n, c, k), abs=1e-12)


def test_pass_at_k_hand_values():
    assert pass_at_k(4, 1, 2) == 0.5  # 1 - C(3,2)/C(4,2) = 1 - 3/6
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)
    assert pass_at_k(5, 2, 4) == 1.0  # any 4 of 5 samples include a correct one


def test_pass_at_k_is_exact_up_to_n_1024():
    rng = random.Random(0)
    cases = [(1024, 1, 1), (1024, 1, 1023), (1024, 1, 512), (1024, 1023, 1), (1024, 512, 512), (1024, 3, 1000)]
    cases += [(n, rng.randint(0, n), rng.randint(1, n)) for n in (2, 17, 100, 513, 1024) for _ in range(20)]
    for n, c, k in cases:
        exact = 1 - Fraction(math.comb(n - c, k), math.comb(n, k))
        got = pass_at_k(n, c, k)
        assert got == float(exact), (n, c, k)  # correctly rounded, not merely close
        assert 0.0 <= got <= 1.0 and math.isfinite(got)
    # a tiny probability survives (a naive 1 - product would lose it to cancellation)
    assert pass_at_k(1024, 1, 1) == 1 / 1024


def test_pass_at_k_edges_and_bad_arguments():
    for n in (1, 7, 64, 1024):
        for k in (1, n // 2 or 1, n):
            assert pass_at_k(n, 0, k) == 0.0
            assert pass_at_k(n, n, k) == 1.0
    with pytest.raises(ValueError, match="k="):
        pass_at_k(4, 1, 5)
    with pytest.raises(ValueError, match="k="):
        pass_at_k(4, 1, 0)
    with pytest.raises(ValueError, match="c="):
        pass_at_k(4, 5, 1)
    with pytest.raises(ValueError, match="c="):
        pass_at_k(4, -1, 1)


def test_random_guess_baseline():
    assert random_guess_baseline(12, 1) == pytest.approx(1 / 12)
    assert random_guess_baseline(2, 2) == pytest.approx(0.75)
    assert random_guess_baseline(12, 0) == 0.0
    probs = make_eval_set(12, 3, 4, seed=1)
    assert baseline_curve(probs, [1, 64]) == {"1": pytest.approx(1 / 12), "64": pytest.approx(1 - (11 / 12) ** 64)}


def test_classify_reaches_every_failure_type():
    assert P.trace == "bcd" and P.answer == "d"
    cases = {
        "bcd|d$": "correct",
        "bcde|e$": "overshoot",  # one hop too many, every lookup right
        "bc|c$": "early",  # stopped a hop short
        "bce|e$": "lookup",  # c > e is not an edge
        "bcd|b$": "miscopy",  # right trace, the answer copied wrong
        "bcd": "malformed",  # never wrote `|`
        "bcd|$": "malformed",
        "bcd|dd$": "malformed",
        "|d$": "correct",  # a direct answer that is right
        "|e$": "early",  # a direct answer that is wrong has an empty trace
        "bcefa|a$": "lookup",  # a wrong lookup wins over a wrong length
    }
    for response, want in cases.items():
        assert classify(P, response) == want, response
    assert {classify(P, r) for r in cases} == set(FAILURE_TYPES)


def test_failure_mix_of_and_distinct_answers():
    mix = failure_mix_of([P] * 4, ["bcd|d$", "bcd|d$", "bcde|e$", "bcd"])
    assert mix == {"correct": 0.5, "overshoot": 0.25, "early": 0.0, "lookup": 0.0, "miscopy": 0.0,
                   "malformed": 0.25}
    # answers {d, e} and {d, None}: two distinct each
    assert distinct_answers([P, P], [["bcd|d$", "bcde|e$", "bcd|d$"], ["|d$", "bcd"]]) == 2.0


def test_pass_curve_of_hand_built():
    responses = [["bcd|d$", "bc|c$", "bcd", "bcd|d$"], ["bc|c$"] * 4]  # 2 of 4 correct, 0 of 4
    curve, counts = pass_curve_of([P, P], responses, [1, 2, 4, 8])
    assert counts == [2, 0]
    assert curve == {"1": 0.25, "2": pytest.approx((1 - 1 / 6) / 2), "4": 0.5}  # k = 8 > N is skipped
    # a right answer after a wrong trace, or none, is right by the answer alone, never verified
    guessed = [["|d$", "bce|d$", "bcd|d$", "bc|d$"]]
    assert pass_curve_of([P], guessed, [1, 4]) == ({"1": 0.25, "4": 1.0}, [1])
    assert pass_curve_of([P], guessed, [1, 4], answer_only) == ({"1": 1.0, "4": 1.0}, [4])


def test_auc_hand_built():
    assert auc([0.1, 0.4, 0.35, 0.8], [False, False, True, True]) == 0.75
    assert auc([0.5, 0.5, 0.5], [True, False, False]) == 0.5  # ties count one half
    assert auc([0.9, 0.1], [True, False]) == 1.0
    assert auc([0.3, 0.2], [True, True]) is None


def test_model_evaluations_shapes_and_determinism(tiny_model):
    probs = [p for k in (2, 3) for p in make_eval_set(6, k, 3, seed=0)]
    g = greedy_accuracy(tiny_model, probs)
    assert set(g) == {"acc", "acc_answer", "by_k", "by_k_answer"}
    assert set(g["by_k"]) == set(g["by_k_answer"]) == {"2", "3"}
    assert g["acc"] <= g["acc_answer"]
    mix = failure_mix(tiny_model, probs)
    assert list(mix) == list(FAILURE_TYPES) and sum(mix.values()) == pytest.approx(1.0)
    curve, counts = pass_curve(tiny_model, probs, 6, [1, 2, 4, 8], seed=3)
    assert list(curve) == ["1", "2", "4"] and all(0 <= c <= 6 for c in counts) and len(counts) == len(probs)
    assert list(curve.values()) == sorted(curve.values())  # pass@k grows with k
    assert (curve, counts) == pass_curve(tiny_model, probs, 6, [1, 2, 4, 8], seed=3)
    responses = sample_set(tiny_model, probs, 4, seed=1)
    ent = sample_entropy(tiny_model, probs, responses)
    assert 0 < ent <= math.log(tiny_model.cfg.vocab_size - 1) + 1e-6
    assert ent == pytest.approx(sample_entropy(tiny_model, probs, responses, chunk=5), rel=1e-5)
    assert ent == pytest.approx(sample_entropy_plain(tiny_model, probs, responses), rel=1e-5)
    think = think_profile(tiny_model, probs, N=4, seed=2)
    assert set(think) == {"think", "think_any", "acc", "acc_answer", "len", "acc_think", "acc_think_answer",
                          "acc_direct", "by_k"}
    assert set(think["by_k"]) == {"2", "3"}
    assert set(think["by_k"]["2"]) == {"think", "think_any", "acc", "acc_answer", "trace"}
    assert all(0 <= t["think"] <= t["think_any"] <= 1 for t in (think, *think["by_k"].values()))
    assert think == think_profile(tiny_model, probs, N=4, seed=2)
    rep = sampling_report(tiny_model, probs, EvalConfig(passk_N=4, passk_ks=[1, 2, 4, 8], entropy_samples=2))
    assert list(rep["pass_at_k"]) == list(rep["pass_at_k_answer"]) == list(rep["random_baseline"]) == ["1", "2", "4"]
    assert all(v <= a for v, a in zip(rep["counts"], rep["counts_answer"], strict=True))
    assert 1 <= rep["distinct_answers"] <= 4


def test_greedy_responses_do_not_depend_on_the_chunk(tiny_model):
    probs = [p for k in (1, 2, 3, 4) for p in make_eval_set(7, k, 5, seed=4)]
    whole = greedy_responses(tiny_model, probs, chunk=len(probs))
    assert greedy_responses(tiny_model, probs, chunk=3) == greedy_responses(tiny_model, probs) == whole
    assert len(whole) == len(probs)


def test_think_profile_counts_traces(tiny_model, monkeypatch):
    import reasonrl.evaluate as ev

    probs = [P, make_problem(random.Random(0), 6, 2)]
    fake = [["bcd|d$", "|d$", "bc|c$", "|a$"], ["|" + probs[1].answer + "$"] * 4]
    monkeypatch.setattr(ev, "sample_set", lambda *a, **k: fake)
    t = think_profile(tiny_model, probs, N=4)
    # verified: only "bcd|d$"; by the answer: it and the five right direct answers
    assert t["think"] == 2 / 8 and t["acc"] == 1 / 8 and t["acc_answer"] == 6 / 8
    assert t["acc_think"] == t["acc_think_answer"] == 0.5 and t["acc_direct"] == 5 / 6
    assert t["by_k"]["3"] == {"think": 0.5, "think_any": 0.5, "acc": 0.25, "acc_answer": 0.5, "trace": 2.5}
    assert t["by_k"]["2"] == {"think": 0.0, "think_any": 0.0, "acc": 0.0, "acc_answer": 1.0, "trace": 0.0}
    assert t["len"] == pytest.approx(sum(len(r) for rs in fake for r in rs) / 8)


def test_eval_config_validation():
    from reasonrl.config import ConfigError, from_dict

    with pytest.raises(ConfigError, match="eval.passk_N"):
        from_dict(EvalConfig, {"passk_N": 0}, "eval")
    with pytest.raises(ConfigError, match="eval.passk_k: unknown key"):
        from_dict(EvalConfig, {"passk_k": [1]}, "eval")


def test_sample_set_is_seeded(tiny_model):
    probs = make_eval_set(6, 2, 3, seed=0)
    torch.manual_seed(123)  # the global RNG must not matter
    a = sample_set(tiny_model, probs, 3, seed=5)
    torch.manual_seed(456)
    assert a == sample_set(tiny_model, probs, 3, seed=5)


def test_outcome_rows_and_csv_by_hand():
    q = make_problem(random.Random(0), 6, 2)
    rows = outcome_rows("n6", [P, q, P], ["bcd|d$", "bcde|e$", "|d$"])
    assert rows[0] == {"set": "n6", "problem": "abcdef:a3", "k": 3, "correct": 1, "correct_answer": 1,
                       "outcome": "correct"}
    assert rows[1]["correct"] == 0 and rows[1]["outcome"] == classify(q, "bcde|e$") and rows[1]["k"] == 2
    assert (rows[2]["correct"], rows[2]["correct_answer"], rows[2]["outcome"]) == (0, 1, "correct")  # no trace
    text = outcomes_csv(rows)
    assert text.splitlines()[0] == "set,problem,k,correct,correct_answer,outcome"
    assert text.splitlines()[1] == "n6,abcdef:a3,3,1,1,correct" and text.endswith("\n") and len(text.splitlines()) == 4


def test_greedy_eval_agrees_with_the_separate_evaluations(tiny_model, monkeypatch):
    import reasonrl.evaluate as ev

    probs = [p for k in (2, 3) for p in make_eval_set(6, k, 3, seed=0)]
    summary, rows = greedy_eval(tiny_model, probs, "s")
    assert summary["acc"] == greedy_accuracy(tiny_model, probs)["acc"]
    assert summary["by_k"] == greedy_accuracy(tiny_model, probs)["by_k"]
    assert summary["acc_answer"] == greedy_accuracy(tiny_model, probs)["acc_answer"]
    assert summary["failure_mix"] == failure_mix(tiny_model, probs)
    assert [r["k"] for r in rows] == [p.k for p in probs] and {r["set"] for r in rows} == {"s"}
    # hand-built responses: 2 of 3 right at k = 2 (one with its gold trace, one a direct answer), 1 of 3 at
    # k = 3 (direct), the others malformed
    fake = [p.target("cot") if i == 0 else "|" + p.answer + "$" if i in (1, 5) else "" for i, p in enumerate(probs)]
    monkeypatch.setattr(ev, "greedy_responses", lambda model, problems: fake)
    summary, rows = greedy_eval(tiny_model, probs, "s")
    assert [r["correct"] for r in rows] == [1, 0, 0, 0, 0, 0]
    assert [r["correct_answer"] for r in rows] == [1, 1, 0, 0, 0, 1]
    assert summary["acc"] == 1 / 6 and summary["by_k"] == {"2": 1 / 3, "3": 0.0}
    assert summary["acc_answer"] == 0.5 and summary["by_k_answer"] == {"2": 2 / 3, "3": 1 / 3}
    assert summary["failure_mix"]["correct"] == 0.5 and summary["failure_mix"]["malformed"] == 0.5


def test_eval_config_checks_each_bound():
    from reasonrl.config import ConfigError, from_dict

    from_dict(EvalConfig, {"passk_N": 1, "passk_ks": [1], "temperature": 0.01, "entropy_samples": 1}, "eval")
    for bad, message in (({"passk_N": 0}, "eval.passk_N: must be at least 1, got 0"),
                         ({"passk_ks": []}, "eval.passk_ks: must be a non-empty list of k >= 1, got []"),
                         ({"passk_ks": [1, 0]}, "eval.passk_ks: must be a non-empty list of k >= 1, got [1, 0]"),
                         ({"temperature": 0.0}, "eval.temperature: must be positive, got 0.0"),
                         ({"entropy_samples": 0}, "eval.entropy_samples: must be at least 1, got 0")):
        with pytest.raises(ConfigError) as e:
            from_dict(EvalConfig, bad, "eval")
        assert str(e.value) == message


def test_bad_arguments_name_themselves():
    assert random_guess_baseline(1, 1) == 1.0  # a ring of one: the guess is always right
    with pytest.raises(ValueError, match=r"^ring_size=0: must be at least 1$"):
        random_guess_baseline(0, 1)
    with pytest.raises(ValueError, match=r"^k=-1: must be >= 0$"):
        random_guess_baseline(4, -1)
    with pytest.raises(ValueError, match=r"^responses: empty$"):
        distinct_answers([], [])
    for call in (lambda: greedy_accuracy(None, []), lambda: greedy_eval(None, [], "s"),
                 lambda: pass_curve_of([], [], [1]), lambda: think_profile(None, [])):
        with pytest.raises(ValueError, match=r"^problems: empty evaluation set$"):
            call()
    with pytest.raises(ValueError, match=r"^responses: every problem needs the same number of samples$"):
        pass_curve_of([P, P], [["bcd|d$"], ["bcd|d$", "b"]], [1])
    with pytest.raises(ValueError, match=r"^N=0: must be at least 1$"):
        sample_set(None, [P], 0)


def test_sampling_defaults_and_arguments_reach_the_sampler(tiny_model, monkeypatch):
    import reasonrl.evaluate as ev

    probs = make_eval_set(6, 2, 3, seed=0)
    assert sample_set(tiny_model, probs, 1) == sample_set(tiny_model, probs, 1, 1.0, 7)  # defaults: T = 1, seed 7
    assert len(sample_set(tiny_model, probs, 1)[0]) == 1
    calls = []
    monkeypatch.setattr(ev, "sample_set", lambda *a: calls.append(a[2:]) or [["bcd|d$", "bcdefab"]])
    assert pass_curve(tiny_model, [P], 2, [1, 2], temperature=0.5, seed=5) == ({"1": 0.5, "2": 1.0}, [1])
    pass_curve(tiny_model, [P], 2, [1])
    t = think_profile(tiny_model, [P])
    # (N, temperature, seed) as passed; defaults: pass_curve T = 1, seed 7; think_profile N = 16, T = 1, seed 3
    assert calls == [(2, 0.5, 5), (2, 1.0, 7), (16, 1.0, 3)]
    # a response that never wrote `|` does not think, and its letters are no trace
    assert t["by_k"]["3"] == {"think": 0.5, "think_any": 0.5, "acc": 0.5, "acc_answer": 0.5, "trace": 3.0}


def test_outcomes_csv_carries_sampled_when_the_rows_do():
    rows = [{"set": "n6", "problem": "abcdef:a3", "k": 3, "correct": 1, "outcome": "correct", "sampled": 0.5}]
    assert outcomes_csv(rows) == "set,problem,k,correct,outcome,sampled\nn6,abcdef:a3,3,1,correct,0.5\n"
    with pytest.raises(ValueError, match="rows: no outcomes"):
        outcomes_csv([])


@pytest.mark.parametrize("per_problem,chunk", [(2, 512), (3, 4), (16, 1)])
def test_shared_prompt_entropy_equals_the_plain_path(tiny_model, per_problem, chunk):
    """The prompt computed once per problem gives the plain forward's entropy, with empty responses (no
    tokens), a problem whose responses are all empty, and chunks that split the problems unevenly."""
    probs = [p for k in (2, 3) for p in make_eval_set(7, k, 3, seed=4)]
    responses = sample_set(tiny_model, probs, 3, seed=5)
    responses[0] = ["", responses[0][1], ""]
    responses[2] = ["", "", ""]
    responses[3] = [responses[3][0] + "abc", "", responses[3][2]]
    want = sample_entropy_plain(tiny_model, probs, responses, per_problem=per_problem, chunk=chunk)
    got = sample_entropy(tiny_model, probs, responses, per_problem=per_problem, chunk=chunk)
    assert got == pytest.approx(want, rel=1e-5, abs=1e-7)
    first = sample_entropy_plain(tiny_model, probs, [rs[:1] for rs in responses])
    assert sample_entropy(tiny_model, probs, responses, per_problem=1) == pytest.approx(first, rel=1e-5)
    with pytest.raises(ValueError, match="nothing to measure"):
        sample_entropy(tiny_model, probs[:1], [["", ""]])
