"""Known-answer metrics (issue #17, item 3).

Sampling is replaced by fixed strings through the module-level names reasonrl/evaluate.py calls
(`sample` for greedy decoding, `sample_responses` for sampling), and the entropy is measured on a
lookup-table "model" whose next-token distributions are known in closed form, so every number below
is worked out by hand. Then the study verdict functions on synthetic inputs on both sides of each
boundary.

Ring a>b>c>d>e>a (n = 5) throughout.
"""

from __future__ import annotations

import math

import pytest
import torch
from matplotlib.container import BarContainer
from torch import nn

import reasonrl.evaluate as ev
from reasonrl.stats import Comparison, word
from reasonrl.studies import PasskModel, figures, hacking, methods, passk, zero
from reasonrl.studies.answers import Answer
from reasonrl.tasks import STOI, get_task, trace_of, vocab_size
from reasonrl.tasks.hop import build_problem

torch.set_num_threads(1)

RING = (("a", "b"), ("b", "c"), ("c", "d"), ("d", "e"), ("e", "a"))


def prob(start: str, k: int):
    return build_problem(RING, start, k)


# (problem, greedy continuation with junk after `$`, outcome type)
GREEDY = [
    (prob("a", 2), "bc|c$abc", "correct"),
    (prob("b", 3), "cde|a$cd", "miscopy"),  # right trace, wrong answer
    (prob("c", 1), "de|e$ddd", "overshoot"),  # right lookups, one hop too many
    (prob("d", 2), "|a$bbbbb", "correct"),  # a direct answer: right by the answer, never verified
    (prob("e", 1), "b|b$aaaa", "lookup"),  # e -> b is not an edge
    (prob("a", 3), "bc|c$aaa", "early"),  # right lookups, one hop short
    (prob("b", 1), "cccccccc", "malformed"),  # never wrote `|`
    (prob("c", 3), "dea|a$aa", "correct"),
]


@pytest.fixture
def greedy(monkeypatch):
    problems = [p for p, _, _ in GREEDY]
    calls = []

    def fake_sample(model, prompts, max_new, temperature=1.0, generator=None):
        calls.append((max_new, temperature))
        assert prompts == [p.prompt for p in problems]
        return [c for _, c, _ in GREEDY]

    monkeypatch.setattr(ev, "sample", fake_sample)
    return problems, calls


def test_greedy_accuracy_and_by_k(greedy):
    problems, calls = greedy
    got = ev.greedy_accuracy(None, problems)
    # k = 1: overshoot, lookup, malformed; k = 2: correct, correct (direct); k = 3: miscopy, early, correct
    assert got == {"acc": 2 / 8, "by_k": {"1": 0.0, "2": 0.5, "3": 1 / 3},
                   "acc_answer": 3 / 8, "by_k_answer": {"1": 0.0, "2": 1.0, "3": 1 / 3}}
    assert calls == [(3 + 5, 0)]  # greedy, with room for k + 5 characters


def test_failure_mix_counts_each_type(greedy):
    problems, _ = greedy
    assert [p.classify(ev.response_of(c)) for p, c, _ in GREEDY] == [t for _, _, t in GREEDY]
    assert ev.failure_mix(None, problems) == {"correct": 3 / 8, "overshoot": 1 / 8, "early": 1 / 8,
                                             "lookup": 1 / 8, "miscopy": 1 / 8, "malformed": 1 / 8}


# ---------------------------------------------------------------------------------------------------- entropy

# Lookup-table model: the logits after token x are c at x itself and 0 elsewhere, with c = ln 31, so that (PAD
# excluded, 32 tokens left) the repeat has probability 1/2 and each other token 1/62: entropy H = ln(124) / 2.
# After a digit or `|` the logits are all 0: entropy U = ln 32.
H = 0.5 * math.log(124)
U = math.log(32)
UNIFORM_AFTER = [STOI[c] for c in "0123456789|"]


class TableModel(nn.Module):
    def __init__(self):
        super().__init__()
        table = torch.eye(vocab_size(get_task("hop"))) * math.log(31)
        table[UNIFORM_AFTER] = 0.0
        self.table = nn.Parameter(table)

    def forward(self, idx):  # (B, T) -> (B, T, V)
        return self.table[idx]


def test_table_model_entropies_are_as_written():
    from reasonrl.logprobs import token_logprobs

    X = torch.tensor([[STOI["a"], STOI["3"], STOI["|"], STOI["$"]]])
    _, ent = token_logprobs(TableModel(), X)
    assert ent[0].tolist() == pytest.approx([H, U, U], rel=1e-6)


def test_sample_entropy_by_hand():
    p1, p2 = prob("a", 2), prob("b", 1)
    responses = [["bc|c$", "|a$", "bbbbbb"], ["", "c|c$"]]
    # the predicting positions read "=" then the response but its last character:
    #   "bc|c$": = b c | c -> 4 H + 1 U;  "|a$": = | a -> 2 H + 1 U  (the third is beyond per_problem=2)
    #   "": nothing;  "c|c$": = c | c -> 3 H + 1 U
    want = (9 * H + 3 * U) / 12
    assert ev.sample_entropy(TableModel(), [p1, p2], responses, per_problem=2) == pytest.approx(want, rel=1e-6)
    # all three of the first problem: "bbbbbb" adds = b b b b b -> 6 H
    want3 = (15 * H + 3 * U) / 18
    assert ev.sample_entropy(TableModel(), [p1, p2], responses, per_problem=3, chunk=1) == pytest.approx(
        want3, rel=1e-6)


def test_sample_entropy_of_nothing_is_an_error():
    with pytest.raises(ValueError, match="nothing to measure"):
        ev.sample_entropy(TableModel(), [prob("a", 2)], [["", ""]])


# ---------------------------------------------------------------------------------------------------- sampling

SAMPLED = {  # 4 samples each; verified counts 1, 0, 2; right answers 2, 0, 4
    prob("a", 2).prompt: ["bc|c$", "|c$", "|a$", "b|d$"],  # answers c c a d: 3 distinct
    prob("b", 3).prompt: ["cde|a$", "cd|d$", "", "|b$"],  # a d None b: 4 distinct
    prob("c", 1).prompt: ["d|d$", "|d$", "d|d$", "de|d$"],  # d: 1 distinct; "de|d$" is a hop too long
}
PROBS = [prob("a", 2), prob("b", 3), prob("c", 1)]


@pytest.fixture
def sampled(monkeypatch):
    calls = []

    def fake(model, problems, n, temperature, generator, **kw):
        calls.append((n, temperature, generator.initial_seed()))
        return [list(SAMPLED[p.prompt][:n]) for p in problems]

    monkeypatch.setattr(ev, "sample_responses", fake)
    return calls


def test_sampling_report_by_hand(sampled):
    cfg = ev.EvalConfig(passk_N=4, passk_ks=[1, 2, 4, 8], temperature=0.7, seed=11, entropy_samples=2)
    rep = ev.sampling_report(TableModel(), PROBS, cfg)
    assert sampled == [(4, 0.7, 11)]
    assert rep["counts"] == [1, 0, 2] and rep["counts_answer"] == [2, 0, 4]
    # pass@1 = c/4; pass@2 = 1 - C(4-c, 2)/6; pass@4 = [c > 0]; k = 8 > N is left out
    assert rep["pass_at_k"] == pytest.approx({"1": (0.25 + 0 + 0.5) / 3, "2": (0.5 + 0 + 5 / 6) / 3, "4": 2 / 3})
    assert rep["pass_at_k_answer"] == pytest.approx({"1": (0.5 + 0 + 1) / 3, "2": (5 / 6 + 0 + 1) / 3, "4": 2 / 3})
    assert list(rep["pass_at_k"]) == list(rep["pass_at_k_answer"]) == ["1", "2", "4"]
    assert rep["random_baseline"] == pytest.approx({str(k): 1 - 0.8**k for k in (1, 2, 4)})
    assert rep["distinct_answers"] == pytest.approx((3 + 4 + 1) / 3)
    # beside it, a uniform guess among the ring's 5 letters, N = 4 draws: 5 (1 - (4/5)^4) = 5 x 0.5904 = 2.952
    # distinct letters expected per problem; its entropy over the answer: ln 5 = 1.6094 nats
    assert rep["guess_distinct"] == pytest.approx(2.952)
    assert rep["guess_answer_entropy"] == pytest.approx(1.6094379)
    # the first two samples of each: "bc|c$" 4H+U, "|c$" 2H+U, "cde|a$" 5H+U, "cd|d$" 4H+U, "d|d$" 3H+U,
    # "|d$" 2H+U
    assert rep["entropy"] == pytest.approx((20 * H + 6 * U) / 26, rel=1e-6)


def test_uniform_guess_diversity_by_hand():
    """A uniform guess among n answers, N draws: n (1 - (1 - 1/n)^N) distinct values expected, entropy ln n over
    the answer; both averaged over the set's problems (not taken at the mean n)."""
    import random

    from reasonrl.tasks.hop import make_problem

    two, four = make_problem(random.Random(0), 2, 1), make_problem(random.Random(0), 4, 1)  # rings of 2 and 4
    # n = 2, N = 2: 2 (1 - 1/4) = 1.5; n = 4, N = 2: 4 (1 - 9/16) = 1.75; their mean 1.625 (at the mean n = 3:
    # 3 (1 - 4/9) = 1.667, not the same)
    got = ev.uniform_guess_diversity([two, four], 2)
    assert got["distinct_answers"] == pytest.approx(1.625)
    assert got["answer_entropy"] == pytest.approx((math.log(2) + math.log(4)) / 2)  # 1.5 ln 2 = 1.0397
    assert ev.uniform_guess_diversity([four], 1) == pytest.approx({"distinct_answers": 1.0,  # one draw, one value
                                                                   "answer_entropy": math.log(4)})


def test_pass_curve_by_hand(sampled):
    curve, counts = ev.pass_curve(TableModel(), PROBS, 4, [1, 3], seed=5)
    assert counts == [1, 0, 2]
    # pass@3 with 1 of 4 verified: 1 - C(3, 3)/C(4, 3) = 3/4; with 2 of 4: 1 - C(2, 3)/C(4, 3) = 1
    assert curve == pytest.approx({"1": 0.25, "3": (0.75 + 0 + 1) / 3})
    curve, counts = ev.pass_curve(TableModel(), PROBS, 4, [1, 3], seed=5, judge=ev.answer_only)
    assert counts == [2, 0, 4] and curve == pytest.approx({"1": 0.5, "3": 2 / 3})


def test_think_profile_by_hand(sampled):
    t = ev.think_profile(TableModel(), PROBS, N=4, seed=3, temperature=0.5)
    assert sampled == [(4, 0.5, 3)]
    # thinking: bc|c$ b|d$ | cde|a$ cd|d$ | d|d$ d|d$ de|d$  -> 7 of 12; right answers among them: bc|c$, d|d$ x2,
    # de|d$; verified: those but de|d$ (a hop too long). direct: |c$ (right), |a$, "", |b$, |d$ (right) -> 5 of 12;
    # 2 right answers, none verified
    assert t["think"] == t["think_any"] == pytest.approx(7 / 12)  # every trace here is well-formed
    assert t["acc"] == pytest.approx(3 / 12) and t["acc_answer"] == pytest.approx(6 / 12)
    assert t["acc_think"] == pytest.approx(3 / 7) and t["acc_think_answer"] == pytest.approx(4 / 7)
    assert t["acc_direct"] == pytest.approx(2 / 5)
    assert t["len"] == pytest.approx((5 + 3 + 3 + 4 + 6 + 5 + 0 + 3 + 4 + 3 + 4 + 5) / 12)
    want = {"1": {"think": 3 / 4, "think_any": 3 / 4, "acc": 2 / 4, "acc_answer": 1.0, "trace": (1 + 1 + 2) / 3},
            "2": {"think": 2 / 4, "think_any": 2 / 4, "acc": 1 / 4, "acc_answer": 2 / 4, "trace": (2 + 1) / 2},
            "3": {"think": 2 / 4, "think_any": 2 / 4, "acc": 0.0, "acc_answer": 0.0, "trace": (3 + 2) / 2}}
    assert list(t["by_k"]) == list(want)
    for k, row in want.items():
        assert t["by_k"][k] == pytest.approx(row)


# ---------------------------------------------------------------------------------------------------- verdicts

def cmp(a: float, b: float, lo: float, hi: float, mde: float = 0.125) -> Comparison:
    """A paired comparison given by hand (binary fractions: exact arithmetic and formatting)."""
    return Comparison(a, b, b - a, lo, hi, mde / 3, 1, 0.05, mde, 2, 8)


def test_zero_verdict_on_both_sides_of_each_boundary():
    cfg = zero.Config(runs={"x": "y"}, present=0.25, rise=0.25)  # binary fractions: exact arithmetic

    def kind(before, after, lo, hi):
        return zero.verdict(before, after, Answer("p", "x before", "x after", cmp(before, after, lo, hi)), cfg)

    assert kind(0.25, 0.5, 0.125, 0.375)[0] == "selected"  # rise exactly 0.25: acted; before == present
    assert kind(0.25, 0.4999, 0.125, 0.375)[0] == "raised"  # just under the rise: above 0, not an act
    assert kind(0.2499, 0.5, 0.125, 0.375)[0] == "created"  # just under present
    # the same rise with an interval covering 0 creates nothing (zero's old "creates it in think0" at +0.081
    # [-0.138, 0.299]): the interval's word, with its MDE
    assert kind(0.0, 0.25, -0.125, 0.625) == (
        "no detectable difference",
        "no detectable difference: think rate 0.0% → 25.0%, +0.250 [-0.125, 0.625], MDE 0.125")
    assert kind(0.5, 0.25, -0.375, -0.125) == ("lowered", "lowered: think rate 50.0% → 25.0%, -0.250 [-0.375, -0.125]")


def test_zero_answer_groups_bases_by_verdict():
    cfg = zero.Config(runs={"x": "y"}, present=0.25, rise=0.25)
    prof = {"b0": {"before": {"think": 0.0}, "after": {"think": 0.5}},
            "b1": {"before": {"think": 0.5}, "after": {"think": 0.75}},
            "b2": {"before": {"think": 0.5}, "after": {"think": 0.5}}}
    answers = [Answer("b0_after_vs_before", "b0 before", "b0 after", cmp(0.0, 0.5, 0.25, 0.75)),
               Answer("b1_after_vs_before", "b1 before", "b1 after", cmp(0.5, 0.75, 0.125, 0.375)),
               Answer("b2_after_vs_before", "b2 before", "b2 after", cmp(0.5, 0.5, -0.125, 0.125))]
    assert zero.answer(cfg, prof, answers) == (
        "RL selects thinking in b1 (50.0% → 75.0%, +0.250 [0.125, 0.375]); creates it in b0 (0.0% → 50.0%, "
        "+0.500 [0.250, 0.750]); no detectable difference in b2 (50.0% → 50.0%, +0.000 [-0.125, 0.125], MDE 0.125). "
        "Think rate: b0 after > b0 before by 0.500 [0.250, 0.750]; b1 after > b1 before by 0.250 [0.125, 0.375]; "
        "no detectable difference between b2 before and b2 after (effect +0.000 [-0.125, 0.125], MDE 0.125).")


def test_passk_crossings_around_the_tie():
    ks = [1, 2, 4]
    base = [0.5, 0.5, 0.5]
    tiny = passk.TIE / 2
    assert passk.crossings(ks, base, [0.5 + tiny, 0.5 - tiny, 0.5]) == []  # within the tie: no side
    assert passk.describe_crossing(ks, base, [0.5 + tiny, 0.5 - tiny, 0.5]) == "means equal at every k"
    assert passk.crossings(ks, base, [0.6, 0.5 + tiny, 0.4]) == [(1, 4, "above → below")]  # the tie is skipped
    assert passk.describe_crossing(ks, base, [0.4, 0.5, 0.45]) == "mean below the base's at every k"
    assert passk.first_crossing(ks, base, [0.6, 0.7, 0.8]) is None


def test_methods_answer_states_each_comparison_by_its_interval():
    # no "highest" by point estimates any more: a method beats another only where the paired interval
    # excludes 0; a tie is "no detectable difference" with the design's MDE
    cfg = methods.Config(runs={"sft": ["s0"], "rft": ["r0"], "grpo": ["g0"]})
    metrics = {"base": {"acc": 0.25},
               "sft": {"acc_mean": 0.5, "acc_ci_lo": 0.375, "acc_ci_hi": 0.625},
               "rft": {"acc_mean": 0.75, "acc_ci_lo": 0.625, "acc_ci_hi": 0.875},
               "grpo": {"acc_mean": 0.75, "acc_ci_lo": 0.5, "acc_ci_hi": 1.0}}
    answers = [Answer("rft_vs_sft", "sft", "rft", cmp(0.5, 0.75, 0.125, 0.375)),
               Answer("grpo_vs_sft", "sft", "grpo", cmp(0.5, 0.75, -0.125, 0.5, mde=0.25)),
               Answer("grpo_vs_rft", "rft", "grpo", cmp(0.75, 0.5, -0.375, -0.125))]
    assert methods.answer(cfg, metrics, answers) == (
        "Final verified greedy accuracy on edge [95% CI]: base 0.250; sft 0.500 [0.375, 0.625], "
        "rft 0.750 [0.625, 0.875], grpo 0.750 [0.500, 1.000]. rft > sft by 0.250 [0.125, 0.375]; no detectable "
        "difference between sft and grpo (effect +0.250 [-0.125, 0.500], MDE 0.250); rft > grpo by 0.250 "
        "[0.125, 0.375].")


def test_answer_wording_on_both_sides_of_zero():
    assert word(cmp(0.5, 0.5, 0.0, 0.25), "a", "b").startswith("no detectable difference")  # lo == 0: covers 0
    assert word(cmp(0.5, 0.625, 2 ** -20, 0.25), "a", "b").startswith("b > a by 0.125")
    assert word(cmp(0.5, 0.375, -0.25, -(2 ** -20)), "a", "b").startswith("a > b by 0.125")
    assert word(cmp(0.5, 0.5, -0.25, 0.0), "a", "b").startswith("no detectable difference")  # hi == 0


def test_hacking_clip_answer_ratio():
    a = {"mu": 1, "clip_frac": 0.0, "kl_end": 0.5, "acc_start": 0.25, "acc_end": 0.125}
    b = {"mu": 4, "clip_frac": 0.25, "kl_end": 1.5, "acc_start": 0.25, "acc_end": 0.0}
    assert hacking.clip_answer([a, b]).endswith("μ = 4 ends 3.0× as far from the start (KL).")
    assert hacking.clip_answer([{**a, "kl_end": 0.0}, b]).endswith("inf× as far from the start (KL).")


def test_trace_of_by_hand():
    assert trace_of("bc|c$") == "bc"
    assert trace_of("bc|c|d$") == "bc"  # the first `|`
    assert trace_of("bcd$") == "bcd"  # unfinished: the trailing `$` is dropped
    assert trace_of("bcd") == "bcd"
    assert trace_of("$") == ""
    assert trace_of("bc$|c$") == "bc$"  # a `$` inside a trace that has its `|` stays


def test_think_profile_when_every_or_no_response_thinks(monkeypatch):
    p = prob("a", 2)
    for responses, want in (
        (["bc|c$", "b|d$"], {"think": 1.0, "acc": 0.5, "acc_answer": 0.5, "acc_think": 0.5, "acc_direct": 0.0}),
        (["|c$", "|a$"], {"think": 0.0, "acc": 0.0, "acc_answer": 0.5, "acc_think": 0.0, "acc_direct": 0.5}),
    ):
        monkeypatch.setattr(ev, "sample_responses", lambda *a, r=responses, **k: [list(r)])
        t = ev.think_profile(TableModel(), [p], N=2)
        assert {k: t[k] for k in want} == want
        assert t["by_k"]["2"]["trace"] == (1.5 if want["think"] else 0.0)


def test_think_rate_counts_well_formed_traces_only(monkeypatch):
    """A degenerate policy (trace steps then garbage, two answers) passes `thinks` but not the think rate: it counts
    in think_any alone, and in neither conditional accuracy."""
    p = prob("a", 2)  # ring of 5 letters, answer c after the trace "bc"
    responses = ["bc|c$",  # thinks well, verified
                 "bc|c$|d$",  # two answers: a trace, not well-formed; its first answer is read (right, verified)
                 "bcd|cc$",  # trace then garbage: no parsable answer
                 "|c$",  # direct, right
                 "|d$"]  # direct, wrong
    assert [p.task.thinks(r) for r in responses] == [True, True, True, False, False]
    assert [p.task.thinks_well(r) for r in responses] == [True, False, False, False, False]
    monkeypatch.setattr(ev, "sample_responses", lambda *a, **k: [list(responses)])
    t = ev.think_profile(TableModel(), [p], N=5)
    assert t["think"] == 1 / 5 and t["think_any"] == 3 / 5  # 1 well-formed trace; 3 traces of any form
    # the three parts sum to all five: thinking well 1, a trace of the wrong form 3 - 1 = 2, direct 5 - 3 = 2
    assert t["think"] * 5 + (t["think_any"] - t["think"]) * 5 + (1 - t["think_any"]) * 5 == pytest.approx(5)
    assert t["acc_think"] == t["acc_think_answer"] == 1.0  # over the one well-formed trace, which is right
    assert t["acc_direct"] == 1 / 2  # over the two direct answers ("|c$" right), not the degenerate traces
    assert t["acc"] == 2 / 5 and t["acc_answer"] == 3 / 5  # "bc|c$", "bc|c$|d$"; and "|c$" by the answer
    assert t["by_k"]["2"] == {"think": 1 / 5, "think_any": 3 / 5, "acc": 2 / 5, "acc_answer": 3 / 5,
                              "trace": 2.0}  # the trace length of the well-formed one only ("bcd" is 3)


# ----------------------------------------------------------------------------- study configs, each check by hand

def test_zero_and_passk_configs_check_each_bound():
    from reasonrl.config import ConfigError, from_dict

    def error(cls, d, section):
        with pytest.raises(ConfigError) as e:
            from_dict(cls, d, section)
        return str(e.value)

    one = {"runs": {"a": "r1", "b": ["r2"]}}
    for bad in ({}, {"a": []}):
        assert error(zero.Config, {"runs": bad}, "studies.zero") == \
            "studies.zero.runs: need at least one arm with one run"
    for present, rise in ((0, 0), (1, 1), (0.5, 0.0), (0.0, 0.5)):  # both bounds are inclusive
        from_dict(zero.Config, one | {"present": present, "rise": rise}, "studies.zero")
    for present, rise in ((1.5, 0.05), (-0.1, 0.05), (0.01, 1.5), (0.01, -0.1), (2, 0.5)):
        assert error(zero.Config, one | {"present": present, "rise": rise}, "studies.zero") == \
            "studies.zero.present: present and rise must be in [0, 1]"
    for pair in (["a"], ["a", "c"], ["a", "b", "a"]):
        assert error(zero.Config, one | {"pairs": [pair]}, "studies.zero") == \
            f"studies.zero.pairs: each pair is two arms of `runs`, got {pair}"
    from_dict(zero.Config, one | {"pairs": [["a", "b"]]}, "studies.zero")

    models = {"b": {"task": "hop", "model": "x"}, "m": {"task": "hop", "model": "y"}}
    assert error(passk.Config, {"bases": ["z"], "models": models}, "passk") == \
        "passk.bases: 'z' is not one of the arms ['b', 'm']"
    assert error(passk.Config, {"bases": ["b"], "models": models, "arms": {"b": ["b"], "c": []}}, "passk") == \
        "passk.arms: c: [] must be keys of passk.models ['b', 'm']"
    assert error(passk.Config, {"bases": ["b"], "models": models, "arms": {"b": ["b"], "c": ["m", "q"]}}, "passk") == \
        "passk.arms: c: ['m', 'q'] must be keys of passk.models ['b', 'm']"
    two = models | {"c": {"task": "chain", "model": "z"}}
    assert error(passk.Config, {"bases": ["b"], "models": two, "arms": {"b": ["b"], "m": ["m", "c"]}}, "passk") == \
        "passk.arms: m: its models are of tasks ['chain', 'hop']; an arm holds one task"
    assert error(passk.Config, {"bases": ["b"], "models": two}, "passk") == \
        "passk.bases: need one base arm per task of the arms, got {'b': 'hop'}"
    assert error(passk.Config, {"bases": ["b", "c"], "models": two, "pairs": [["m", "c"]]}, "passk") == \
        "passk.pairs: ['m', 'c']: the two arms' tasks differ"
    assert from_dict(passk.Config, {"bases": ["b"], "models": models}, "passk").arms == {"b": ["b"], "m": ["m"]}


# ----------------------------------------------------------------------------- passk helpers at their bounds

def test_passk_crossings_at_the_tie_bound():
    tie = passk.TIE  # differences of exactly TIE count as equal (no side)
    assert passk.crossings([1, 2, 3], [0.0] * 3, [-tie, 1.0, -1.0]) == [(2, 3, "above → below")]
    assert passk.describe_crossing([1, 2], [0.0, 0.0], [tie, 0.0]) == "means equal at every k"
    assert passk.describe_crossing([1, 2], [0.0, 0.0], [tie, -0.5]) == "mean below the base's at every k"
    assert passk.describe_crossing([1, 2, 3], [0.0] * 3, [1.0, -1.0, 1.0]) == \
        "means cross above → below between k = 1 and k = 2; means cross below → above between k = 2 and k = 3"


def test_passk_arm_outcomes_and_intervals():
    import numpy as np

    from reasonrl import stats

    models = {k: PasskModel("hop", v) for k, v in {"b": "x", "m0": "y", "m1": "z"}.items()}
    cfg = passk.Config(bases=["b"], models=models, arms={"b": ["b"], "m": ["m0", "m1"]})
    data = {key: {"N": 2, "sets": {"s": {"counts": counts, "counts_answer": [2, 2, 2]}}}
            for key, counts in (("b", [0, 1, 2]), ("m0", [2, 2, 0]), ("m1", [1, 0, 0]))}
    base = passk.arm_passk(cfg, data, "b", "s", 1)  # one model: seedless, pairs with every seed
    assert base.label == "b" and list(base.by_seed) == [None] and base.problems == ["0", "1", "2"]
    assert base.by_seed[None].tolist() == [0.0, 0.5, 1.0]
    arm = passk.arm_passk(cfg, data, "m", "s", 2)
    assert arm.label == "m" and list(arm.by_seed) == [0, 1]
    assert arm.by_seed[0].tolist() == [1.0, 1.0, 0.0] and arm.by_seed[1].tolist() == [1.0, 0.0, 0.0]
    (iv,) = passk.curve_cis(cfg, data, "s", [1])["m"]
    x = np.array([[1.0, 1.0, 0.0], [0.5, 0.0, 0.0]])  # pass@1 per problem of m0 and m1 (N = 2)
    assert iv == stats.mean_ci(x)  # the arm's two models are its runs: df 1
    assert arm.answer.by_seed[1].tolist() == [1.0, 1.0, 1.0]  # its answer-only pass@2: every answer right
    (iv,) = passk.curve_cis(cfg, data, "s", [1], "counts_answer")["m"]
    assert iv.mean == 1.0
    data["m1"]["sets"]["s"]["counts_answer"] = [0, 0, 0]  # a sample verified with no right answer: a bug
    with pytest.raises(ValueError, match="arm 'm': a verified outcome exceeds its answer-only one"):
        passk.arm_passk(cfg, data, "m", "s", 1)


# ----------------------------------------------------------------------------- zero: answer and the bar figure

def test_zero_answer_lists_every_base_of_a_kind():
    cfg = zero.Config(runs={"a": "r1", "b": "r2", "c": "r3"})
    prof = {"a": {"before": {"think": 0.2}, "after": {"think": 0.5}},
            "b": {"before": {"think": 0.3}, "after": {"think": 0.9}},
            "c": {"before": {"think": 0.0}, "after": {"think": 0.0}}}
    answers = [Answer("a_after_vs_before", "a before", "a after", cmp(0.2, 0.5, 0.1, 0.5)),
               Answer("b_after_vs_before", "b before", "b after", cmp(0.3, 0.9, 0.4, 0.8)),
               Answer("c_after_vs_before", "c before", "c after",
                      Comparison(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1, 1.0, None, 2, 8, constant=0.0))]
    # a kind no base has is left out (no "creates it in none"); c never varies: not testable
    assert zero.answer(cfg, prof, answers) == (
        "RL selects thinking in a (20.0% → 50.0%, +0.300 [0.100, 0.500]), b (30.0% → 90.0%, +0.600 [0.400, 0.800]); "
        "not testable (no variance) in c (0.0% → 0.0%, +0.000 [0.000, 0.000]). Think rate: a after > a before by "
        "0.300 [0.100, 0.500]; b after > b before by 0.600 [0.400, 0.800]; not testable: both c before and c after "
        "at the floor.")


def test_zero_think_vs_direct_bars_and_notes_by_hand(monkeypatch):
    from pathlib import Path

    import matplotlib.pyplot as plt

    figs = {}
    monkeypatch.setattr(zero, "save_figure", lambda fig, path: figs.__setitem__(Path(path).name, fig))
    cfg = zero.Config(runs={"A": "r1", "B": "r2"})
    prof = {"A": {"before": {"think": 0.0, "acc_think": None, "acc_direct": 0.2},
                  "after": {"think": 0.005, "acc_think": 0.5, "acc_direct": 0.25}},
            "B": {"before": {"think": 0.01, "acc_think": 0.75, "acc_direct": 0.375},  # exactly 1%: no mark
                  "after": {"think": 0.995, "acc_think": 0.8, "acc_direct": 0.4}}}
    zero.think_vs_direct_figure(cfg, prof, Path("t.png"))
    (ax,) = figs["t.png"].axes
    # four bars per base, 0.2 wide, centred on the base's tick
    bars = [c for c in ax.containers if isinstance(c, BarContainer)]
    centres = {c.get_label(): [round(r.get_x() + r.get_width() / 2, 9) for r in c] for c in bars}
    assert centres == {"thinking, before (verified)": [-0.3, 0.7], "thinking, after (verified)": [-0.1, 0.9],
                       "direct, before (answer-only)": [0.1, 1.1], "direct, after (answer-only)": [0.3, 1.3]}
    assert {round(r.get_width(), 9) for c in ax.containers if isinstance(c, BarContainer) for r in c} == {0.2}
    # n/a over an empty bar; <1% over a bar resting on under 1% of the responses (thinking or direct)
    notes = sorted((t.get_text(), round(t.get_position()[0], 9), round(t.get_position()[1], 9)) for t in ax.texts)
    assert notes == [("<1%", -0.1, 0.52), ("<1%", 1.3, 0.42), ("n/a", -0.3, 0.02)]
    assert ax.get_ylim() == figures.SHARE_YLIM and ax.get_xlabel() == "starting base"
    plt.close(figs["t.png"])


def test_zero_direct_bar_rests_on_the_responses_with_no_trace(monkeypatch):
    """The direct bar's share is 1 − think_any (no trace at all), not 1 − think: a degenerate policy whose traces are
    mostly of the wrong form (think 0.5, any trace 0.995) answers directly in 0.5% of its responses: marked <1%."""
    from pathlib import Path

    import matplotlib.pyplot as plt

    figs = {}
    monkeypatch.setattr(zero, "save_figure", lambda fig, path: figs.__setitem__(Path(path).name, fig))
    cfg = zero.Config(runs={"A": "r1"})
    prof = {"A": {"before": {"think": 0.5, "think_any": 0.995, "acc_think": 0.5, "acc_direct": 0.25},
                  "after": {"think": 0.5, "think_any": 0.5, "acc_think": 0.5, "acc_direct": 0.25}}}
    zero.think_vs_direct_figure(cfg, prof, Path("t.png"))
    (ax,) = figs["t.png"].axes
    notes = sorted((t.get_text(), round(t.get_position()[0], 9), round(t.get_position()[1], 9)) for t in ax.texts)
    assert notes == [("<1%", 0.1, 0.27)]  # the direct bar before RL only: 1 − 0.995 = 0.005 of the responses
    plt.close(figs["t.png"])


def test_passk_detected_crossing_by_hand():
    def at(*intervals):  # one comparison per k, (ci_lo, ci_hi) of arm - base
        return [Answer(f"k{i}", "base", "arm", Comparison(0.5, 0.5, 0.0, lo, hi, 0.03, 3, 0.5, 0.1, 4, 4))
                for i, (lo, hi) in enumerate(intervals)]

    ks = [1, 2, 4, 8]
    # an interval touching 0 is no detection on either side
    assert passk.detected_crossing(ks, at((0.0, 0.1), (-0.1, 0.0), (-0.1, 0.1), (-0.2, 0.0))) == \
        "no detectable difference from the base at any k"
    assert passk.detected_crossing(ks, at((0.1, 0.2), (0.01, 0.3), (-0.1, 0.1), (0.0, 0.1))) == \
        "detectably above the base at k = 1, 2, no detectable crossing"
    assert passk.detected_crossing(ks, at((-0.1, 0.1), (-0.3, -0.1), (-0.2, -0.01), (0.0, 0.1))) == \
        "detectably below the base at k = 2, 4, no detectable crossing"
    assert passk.detected_crossing(ks, at((0.1, 0.2), (0.1, 0.3), (-0.1, 0.1), (-0.3, -0.1))) == \
        "detectably above the base at k = 1, 2 and below at k = 8: the curves cross"
    # excluding 0 but inside the ±0.01 equivalence region: equivalent, not a side (k = 1 and k = 8 here)
    assert passk.detected_crossing(ks, at((0.001, 0.009), (0.1, 0.3), (-0.1, 0.1), (-0.009, -0.002))) == \
        "detectably above the base at k = 2, no detectable crossing"
    # reaching past the region on one side counts (k = 8: [-0.02, -0.001])
    assert passk.detected_crossing(ks, at((0.001, 0.009), (0.1, 0.3), (-0.1, 0.1), (-0.02, -0.001))) == \
        "detectably above the base at k = 2 and below at k = 8: the curves cross"
    assert passk.detected_crossing(ks, at((-0.3, -0.1), (-0.1, 0.1), (0.1, 0.3), (0.2, 0.4))) == \
        "detectably below the base at k = 1 and above at k = 4, 8: the curves cross"
