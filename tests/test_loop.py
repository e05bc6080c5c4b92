"""`rl_step` on hand-built batches (issue #17, item 2).

The sampler is replaced by fixed responses through the narrowest seams `reasonrl/rl/algorithm.py` has:
its module-level `draw_problems` (which problems a step gets) and `sample_responses` (what the policy
"wrote"), so everything from scoring on is the real algorithm. What the step hands to its update is read by
wrapping its module-level `update` and the advantage registry entry. Every expected
number is written out below, worked by hand from the responses.

Ring used throughout: a>b>c>d>e>a. P1 = start a, 2 hops (trace "bc", answer c); P2 = start b, 3 hops
("cde", e); P3 = start c, 1 hop ("d", d); P4 = start d, 2 hops ("ea", a); P5 = start e, 1 hop ("a", a).
Batches use B = 3 prompts and G = 4 samples (B != G, so a transposed group view shows).
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import random
import re

import pytest
import torch
import tqdm.std

from reasonrl.logprobs import token_logprobs
from reasonrl.model import ModelConfig, TinyReasoner
from reasonrl.pretrain import PhaseConfig, optimize
from reasonrl.rl import algorithm as A
from reasonrl.rl import memory as M
from reasonrl.rl import records as R
from reasonrl.rl import train as T
from reasonrl.rl.batch import Batch
from reasonrl.rl.context import Context
from reasonrl.rl.job import make_job
from reasonrl.rl.layout import FAST, PLAIN, plan_for
from reasonrl.rl.variants import ADVANTAGES
from reasonrl.tasks.hop import build_problem
from reasonrl.tokens import encode_pairs

torch.set_num_threads(1)

RING = (("a", "b"), ("b", "c"), ("c", "d"), ("d", "e"), ("e", "a"))
P1, P2, P3, P4, P5 = (build_problem(RING, s, k) for s, k in (("a", 2), ("b", 3), ("c", 1), ("d", 2), ("e", 1)))
CFG = ModelConfig(d_model=32, n_heads=2, n_layers=1, max_len=64)
EPS = 1e-4  # the grpo advantage's std epsilon


def _model(seed=0):
    return TinyReasoner(CFG, generator=torch.Generator().manual_seed(seed)).eval()


class Fixed:
    """Stands in for the sampler: rounds of (problems, {prompt: G responses}) served in order."""

    def __init__(self, *rounds):
        self.rounds = list(rounds)
        self.calls = 0

    def draw(self, rng, job, count):
        problems, _ = self.rounds[self.calls]
        assert count == len(problems)
        return list(problems)

    def sample(self, model, problems, n_samples, temperature, generator, **kw):
        _, responses = self.rounds[self.calls]
        self.calls += 1
        assert all(len(responses[p.prompt]) == n_samples for p in problems)
        return [list(responses[p.prompt]) for p in problems]


class Seen:
    """Records what rl_step hands to `update` (rows' weights and their mask) before running it."""

    def __init__(self):
        self.w, self.m, self.seqs = None, None, None

    def wrap(self, real):
        def spy(ctx, opt, seqs, w, *args, **kw):
            self.w, self.m, self.seqs = w.detach().clone(), seqs.m.detach().clone(), seqs
            return real(ctx, opt, seqs, w, *args, **kw)
        return spy


def _step(monkeypatch, fixed: Fixed, *, policy=None, ref=None, lr=0.0, shared=True, kl_groups=None, reference=True,
          **job):
    """One rl_step on `fixed`'s responses; kl_groups (optional) replaces the plan's; reference=False runs
    without a reference model."""
    monkeypatch.setattr(A, "draw_problems", fixed.draw)
    monkeypatch.setattr(A, "sample_responses", fixed.sample)
    seen = Seen()
    monkeypatch.setattr(A, "update", seen.wrap(A.update))
    policy = policy if policy is not None else _model()
    ref = ref if ref is not None or not reference else copy.deepcopy(policy).requires_grad_(False)
    job = make_job({}, {**dict(B=3, G=4, n_range=[5, 5], k_max=3, steps=1), **job})
    plan = plan_for(job, shared)
    ctx = Context(job=job, policy=policy, ref=ref, verifier=None, rng=random.Random(0),
                    sample_gen=torch.Generator().manual_seed(1), reward_gen=torch.Generator().manual_seed(2),
                    shared_prefix=shared,
                    plan=plan if kl_groups is None else dataclasses.replace(plan, kl_groups=kl_groups))
    record, batch = A.rl_step(ctx, torch.optim.SGD(policy.parameters(), lr=lr), 0)
    return record, batch, seen


def right(p):
    return p.trace + "|" + p.answer + "$"


def wrong(p):  # a well-formed response with the right length and a wrong answer
    return p.trace + "|" + ("a" if p.answer != "a" else "b") + "$"


# P1 rewards 1 0 0 0; P2 rewards 1 1 0 0; P3 rewards 0 0 0 1 (lengths differ inside each group)
MIXED = (P1, P2, P3), {
    P1.prompt: [right(P1), wrong(P1), "b|a$", "bcdef|f$"],
    P2.prompt: [right(P2), "|e$", wrong(P2), "c|c$"],
    P3.prompt: ["|a$", wrong(P3), "de|e$", right(P3)],
}


def test_weights_are_the_group_advantages_row_by_row(monkeypatch):
    _, batch, seen = _step(monkeypatch, Fixed(MIXED))
    assert [p.prompt for p in batch.problems] == [p.prompt for p in (P1, P2, P3) for _ in range(4)]
    assert batch.true.tolist() == [1, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 1]
    # group 1 and 3: mean 1/4, unbiased std 1/2; group 2: mean 1/2, unbiased std sqrt(1/3)
    a, b = 0.75 / (0.5 + EPS), -0.25 / (0.5 + EPS)
    c = 0.5 / (3 ** -0.5 + EPS)
    assert seen.w.tolist() == pytest.approx([a, b, b, b, c, c, -c, -c, b, b, b, a], rel=1e-6)


def test_rloo_and_dr_grpo_weights_row_by_row(monkeypatch):
    _, _, seen = _step(monkeypatch, Fixed(MIXED), advantage="rloo")
    # r_i minus the mean of the other three
    assert seen.w.tolist() == pytest.approx([1, -1 / 3, -1 / 3, -1 / 3, 2 / 3, 2 / 3, -2 / 3, -2 / 3,
                                             -1 / 3, -1 / 3, -1 / 3, 1], rel=1e-6)
    _, _, seen = _step(monkeypatch, Fixed(MIXED), advantage="dr_grpo")
    assert seen.w.tolist() == pytest.approx([0.75, -0.25, -0.25, -0.25, 0.5, 0.5, -0.5, -0.5,
                                             -0.25, -0.25, -0.25, 0.75], rel=1e-6)


def test_records_of_the_step(monkeypatch):
    record, _, _ = _step(monkeypatch, Fixed(MIXED))
    lengths = [5, 5, 4, 8, 6, 3, 6, 4, 3, 4, 5, 4]
    assert record["reward/true"] == pytest.approx(4 / 12)
    assert record["reward/proxy"] == pytest.approx(4 / 12)
    assert record["rollout/length"] == pytest.approx(sum(lengths) / 12)
    # the wrong ones: every length but those of rows 0, 4, 5, 11
    assert record["rollout/length_wrong"] == pytest.approx((5 + 4 + 8 + 6 + 4 + 3 + 4 + 5) / 8)
    assert record["rollout/think_rate"] == pytest.approx(10 / 12)  # "|e$" and "|a$" answer directly
    assert record["rollout/think_any_rate"] == pytest.approx(10 / 12)  # the other ten are well-formed
    assert record["rollout/zero_var_frac"] == 0.0
    assert record["losses/kl"] == pytest.approx(0.0, abs=1e-6)  # the reference is the policy itself


@pytest.mark.parametrize("shared", [True, False])
def test_a_run_without_a_reference_records_no_kl_and_takes_the_same_step(monkeypatch, shared):
    # at beta 0 the reference feeds the `losses/kl` record only: without it the record goes, nothing else moves
    ref_policy, bare_policy = _model(), _model()
    with_ref, _, _ = _step(monkeypatch, Fixed(MIXED), policy=ref_policy, ref=_model(1), lr=0.5, shared=shared)
    bare, _, _ = _step(monkeypatch, Fixed(MIXED), policy=bare_policy, reference=False, lr=0.5, shared=shared)
    assert with_ref["losses/kl"] > 0.01  # another model's weights: a KL that shows
    assert "losses/kl" not in bare and bare == {k: v for k, v in with_ref.items() if k != "losses/kl"}
    assert all(torch.equal(a, b) for a, b in zip(ref_policy.parameters(), bare_policy.parameters()))
    assert not torch.equal(ref_policy.embed.weight, _model().embed.weight)  # the step moved the weights
    with pytest.raises(ValueError, match=r"ref: a KL term \(beta 0.1\) needs the reference model"):
        _step(monkeypatch, Fixed(MIXED), reference=False, beta=0.1)


def test_rft_trains_exactly_on_the_correct_rows(monkeypatch):
    _, batch, seen = _step(monkeypatch, Fixed(MIXED), method="rft")
    assert seen.w.tolist() == [1.0, 1.0, 1.0, 1.0]  # rows 0, 4, 5, 11
    # the kept rows are the correct ones: their response tokens are 5 + 6 + 3 + 4 = 18
    assert float(seen.m.sum()) == 18.0
    assert batch.true.sum() == 4


def test_rft_without_a_correct_row_skips_the_update(monkeypatch):
    none_right = (P1, P2, P3), {p.prompt: [wrong(p)] * 4 for p in (P1, P2, P3)}
    policy = _model()
    before = [q.detach().clone() for q in policy.parameters()]
    record, _, seen = _step(monkeypatch, Fixed(none_right), policy=policy, lr=1.0, method="rft")
    assert seen.w is None
    assert {k: record[k] for k in ("losses/pg", "losses/kl_term", "losses/clip_frac", "losses/grad_norm")} == \
        dict.fromkeys(("losses/pg", "losses/kl_term", "losses/clip_frac", "losses/grad_norm"), 0.0)
    assert all(torch.equal(a, b) for a, b in zip(before, policy.parameters()))


def test_sft_trains_on_the_gold_traces(monkeypatch):
    fixed = Fixed(((P1, P2, P3), {}))
    monkeypatch.setattr(A, "sample_responses", lambda *a, **k: pytest.fail("SFT must not sample"))
    monkeypatch.setattr(A, "draw_problems", fixed.draw)
    seen = Seen()
    monkeypatch.setattr(A, "update", seen.wrap(A.update))
    policy = _model()
    job = make_job({}, dict(B=3, G=4, n_range=[5, 5], k_max=3, method="sft"))
    ctx = Context(job=job, policy=policy, ref=copy.deepcopy(policy), verifier=None, rng=random.Random(0),
                    sample_gen=torch.Generator(), reward_gen=torch.Generator())
    record, batch = A.rl_step(ctx, torch.optim.SGD(policy.parameters(), lr=0.0), 0)
    assert batch.responses == ["bc|c$", "cde|e$", "d|d$"] and batch.group == 1
    assert seen.w.tolist() == [1.0, 1.0, 1.0]
    assert float(seen.m.sum()) == 5 + 6 + 4
    assert record["reward/true"] == 1.0 and record["rollout/zero_var_frac"] == 0.0


def _tokens(model, problems, responses, temperature=1.0):
    """(logp, ent, m), each (N, T): every next-token log-prob and entropy of prompt + response at `temperature`,
    computed in full, and the mask of the response's tokens."""
    X, M = encode_pairs([(p.prompt, r) for p, r in zip(problems, responses)])
    with torch.no_grad():
        logp, ent = token_logprobs(model, X, temperature)
    return logp, ent, M[:, 1:]


def _seq_logp(model, problems, responses) -> torch.Tensor:
    logp, _, m = _tokens(model, problems, responses)
    return (logp * m).sum(1)  # (N,)


# Wrong rows written with letters the right ones never use, so that rows of opposite sign share as little as
# possible (they still share `|` and `$`): then each row's own term dominates its change.
SIGNS = (P1, P2, P3), {
    P1.prompt: [right(P1), "hg|f$", "kj|l$", "mn|o$"],
    P2.prompt: [right(P2), "pon|m$", right(P2), "ijk|h$"],
    P3.prompt: ["g|h$", "i|j$", "k|l$", right(P3)],
}


@pytest.mark.parametrize("shared", [True, False])
def test_one_sgd_step_raises_positive_rows_and_lowers_negative_rows(monkeypatch, shared):
    policy = _model()
    problems = [p for p in (P1, P2, P3) for _ in range(4)]
    responses = [r for p in (P1, P2, P3) for r in SIGNS[1][p.prompt]]
    before = _seq_logp(policy, problems, responses)
    _, _, seen = _step(monkeypatch, Fixed(SIGNS), policy=policy, lr=0.05, shared=shared, advantage="dr_grpo")
    delta = _seq_logp(policy, problems, responses) - before
    assert seen.w.tolist() == pytest.approx([0.75, -0.25, -0.25, -0.25, 0.5, -0.5, 0.5, -0.5,
                                             -0.25, -0.25, -0.25, 0.75])
    assert (delta[seen.w > 0] > 0).all(), delta
    assert (delta[seen.w < 0] < 0).all(), delta


# ---------------------------------------------------------------------------------------------------- reward shaping

# P1 and P2 (max_new = largest k + 5 = 8): lengths 3 .. 8, direct answers, a response that never wrote `$`
SHAPES = (P1, P2, P3), {
    P1.prompt: ["|c$", "bc|c$", "bcd|c$", "bcdefgh"],  # 3, 5, 6, 7 characters
    P2.prompt: ["cde|e$", "cdeab|e$", "|e$", "cdeabcde"],  # 6, 8, 3, 8
    P3.prompt: ["d|d$", "|d$", "dea|d$", "de|a$"],  # 4, 3, 6, 5
}
SHAPE_TRUE = [1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0]


def test_guard_zeroes_malformed_and_direct_answers(monkeypatch):
    _, batch, _ = _step(monkeypatch, Fixed(SHAPES), guard=True)
    assert batch.true.tolist() == SHAPE_TRUE
    # direct answers "|c$", "|e$", "|d$" are correct but not `trace|answer$`
    assert batch.proxy.tolist() == [0, 1, 1, 0, 1, 1, 0, 0, 1, 0, 1, 0]


def test_length_penalty_subtracts_per_character(monkeypatch):
    _, batch, _ = _step(monkeypatch, Fixed(SHAPES), len_pen=0.01)
    lengths = [3, 5, 6, 7, 6, 8, 3, 8, 4, 3, 6, 5]
    assert batch.proxy.tolist() == pytest.approx([t - 0.01 * n for t, n in zip(SHAPE_TRUE, lengths)])


def test_overlong_penalty_over_the_last_window_of_the_budget(monkeypatch):
    # budget 8 (largest k 3, plus 5), window 3: penalty max(0, len - 5) / 3, at most 1
    _, batch, _ = _step(monkeypatch, Fixed(SHAPES), overlong=3)
    pen = [0, 0, 1 / 3, 2 / 3, 1 / 3, 1, 0, 1, 0, 0, 1 / 3, 0]
    assert batch.proxy.tolist() == pytest.approx([t - x for t, x in zip(SHAPE_TRUE, pen)])
    assert batch.true.tolist() == SHAPE_TRUE  # the true reward is never shaped


def test_guard_then_length_then_overlong(monkeypatch):
    _, batch, _ = _step(monkeypatch, Fixed(SHAPES), guard=True, len_pen=0.1, overlong=3)
    guarded = [0, 1, 1, 0, 1, 1, 0, 0, 1, 0, 1, 0]
    lengths = [3, 5, 6, 7, 6, 8, 3, 8, 4, 3, 6, 5]
    pen = [0, 0, 1 / 3, 2 / 3, 1 / 3, 1, 0, 1, 0, 0, 1 / 3, 0]
    assert batch.proxy.tolist() == pytest.approx([g - 0.1 * n - x for g, n, x in zip(guarded, lengths, pen)])


# ---------------------------------------------------------------------------------------------------- dynamic sampling

ROUND1 = (P1, P2, P3), {  # rewards: all 1 (zero variance), 1 0 0 0, all 0 (zero variance)
    P1.prompt: [right(P1)] * 4,
    P2.prompt: [right(P2), wrong(P2), wrong(P2), "|a$"],
    P3.prompt: [wrong(P3)] * 4,
}
ROUND2 = (P4, P5, P1), {  # rewards: 1 0 0 0, 1 0 0 0, all 1 (zero variance again)
    P4.prompt: [right(P4), wrong(P4), wrong(P4), wrong(P4)],
    P5.prompt: [right(P5), wrong(P5), wrong(P5), wrong(P5)],
    P1.prompt: [right(P1)] * 4,
}


# steps=10: a rollout budget of 10 x 3 x 4 = 120 samples, never what stops a step's resampling unless a test says so
def test_dynamic_sampling_drops_zero_variance_groups_and_refills(monkeypatch):
    fixed = Fixed(ROUND1, ROUND2)
    record, batch, seen = _step(monkeypatch, fixed, dynamic_sampling=True, max_resample=4, steps=10)
    assert fixed.calls == 2  # the second round filled the batch: no third
    assert [p.prompt for p in batch.problems[::4]] == [P2.prompt, P4.prompt, P5.prompt]
    assert batch.true.tolist() == [1, 0, 0, 0] * 3
    assert batch.rollouts == 24 and record["rollout/count"] == 24  # both rounds are paid for
    # zero_var_frac is on every group sampled (3 of 6); the kept batch has none
    assert record["rollout/zero_var_frac"] == pytest.approx(3 / 6)
    assert record["filtered/zero_var_frac"] == 0.0
    a, b = 0.75 / (0.5 + EPS), -0.25 / (0.5 + EPS)
    assert seen.w.tolist() == pytest.approx([a, b, b, b] * 3, rel=1e-6)


def test_without_dynamic_sampling_zero_variance_groups_stay(monkeypatch):
    fixed = Fixed(ROUND1, ROUND2)
    record, batch, seen = _step(monkeypatch, fixed)
    assert fixed.calls == 1
    assert [p.prompt for p in batch.problems[::4]] == [P1.prompt, P2.prompt, P3.prompt]
    assert record["rollout/zero_var_frac"] == pytest.approx(2 / 3)
    assert record["rollout/count"] == 12 and not any(k.startswith("filtered/") for k in record)
    assert seen.w[:4].abs().max() == 0 and seen.w[8:].abs().max() == 0


def test_dynamic_sampling_gives_up_after_max_resample_rounds(monkeypatch):
    all_same = (P1, P2, P3), {p.prompt: [right(p)] * 4 for p in (P1, P2, P3)}
    fixed = Fixed(all_same, all_same, all_same)
    record, batch, seen = _step(monkeypatch, fixed, dynamic_sampling=True, max_resample=2, steps=10)
    assert fixed.calls == 3  # 1 + max_resample rounds, then the last round is trained on as it is
    assert batch.true.tolist() == [1] * 12 and seen.w.abs().max() == 0
    assert record["rollout/count"] == 36 and record["rollout/zero_var_frac"] == 1.0


ALL_RIGHT = (P1, P2, P3), {p.prompt: [right(p)] * 4 for p in (P1, P2, P3)}


def test_dynamic_sampling_stops_resampling_at_the_rollout_budget(monkeypatch):
    # steps=2: the run may draw 2 x 3 x 4 = 24 samples, so this step gets two rounds although max_resample allows
    # four; the one group with variance is all that is kept: a batch smaller than B
    fixed = Fixed(ROUND1, ALL_RIGHT, ALL_RIGHT)
    record, batch, seen = _step(monkeypatch, fixed, dynamic_sampling=True, max_resample=4, steps=2)
    assert fixed.calls == 2
    assert record["rollout/count"] == 24
    assert [p.prompt for p in batch.problems] == [P2.prompt] * 4
    a, b = 0.75 / (0.5 + EPS), -0.25 / (0.5 + EPS)
    assert seen.w.tolist() == pytest.approx([a, b, b, b], rel=1e-6)


def test_think_rate_record_counts_well_formed_traces_only():
    """`rollout/think_rate` counts the rollouts that think well; one of any form counts in
    `rollout/think_any_rate` alone (a degenerate policy's trace steps then garbage, or two answers)."""
    p = P1  # ring a..e from a, two hops: the gold response is "bc|c$"
    responses = ["bc|c$", "bc|cc$", "bc|c|c$", "|c$"]  # well-formed; trace then garbage; two answers; direct
    ones = torch.ones(4)
    batch = Batch([p] * 4, responses, ones, ones, 4, 0.0)
    record = R.rollout_record(batch, torch.zeros(4, 3), 0.0, torch.ones(4, 3))
    assert record["rollout/think_rate"] == 1 / 4 and record["rollout/think_any_rate"] == 3 / 4


def test_dynamic_sampling_records_on_the_unfiltered_samples(monkeypatch):
    policy, ref = _model(0), _model(1).requires_grad_(False)
    record, batch, _ = _step(monkeypatch, Fixed(ROUND1, ROUND2), policy=policy, ref=ref, dynamic_sampling=True,
                             steps=10)
    # everything the policy drew, both rounds: correct 4 + 1 + 0 and 1 + 1 + 4 of 24
    assert record["reward/true"] == pytest.approx(11 / 24)
    assert record["reward/proxy"] == pytest.approx(11 / 24)
    # lengths: round 1 5*4 + (6 + 6 + 6 + 3) + 4*4 = 57, round 2 5*4 + 4*4 + 5*4 = 56
    assert record["rollout/length"] == pytest.approx(113 / 24)
    # the 13 wrong ones: P2's 6 + 6 + 3, P3's 4*4, P4's 5*3, P5's 4*3
    assert record["rollout/length_wrong"] == pytest.approx(58 / 13)
    assert record["rollout/think_rate"] == pytest.approx(23 / 24)  # only "|a$" answers directly
    # the kept batch (P2, P4, P5) under filtered/
    assert record["filtered/true"] == pytest.approx(3 / 12)
    assert record["filtered/proxy"] == pytest.approx(3 / 12)
    assert record["filtered/length"] == pytest.approx((21 + 20 + 16) / 12)
    assert record["filtered/length_wrong"] == pytest.approx((15 + 15 + 12) / 9)
    assert record["filtered/think_rate"] == pytest.approx(11 / 12)
    # entropy and KL to the reference: token means over the responses of each set
    drawn = [(p, r) for rnd in (ROUND1, ROUND2) for p in rnd[0] for r in rnd[1][p.prompt]]
    for prefix, rows in (("rollout/", drawn), ("filtered/", list(zip(batch.problems, batch.responses)))):
        problems, responses = [p for p, _ in rows], [r for _, r in rows]
        lp, ent, m = _tokens(policy, problems, responses)
        lq, _, _ = _tokens(ref, problems, responses)
        d = lq - lp
        assert record[prefix + "entropy"] == pytest.approx(float((ent * m).sum() / m.sum()), rel=1e-5)
        kl = "losses/kl" if prefix == "rollout/" else "filtered/kl"
        assert record[kl] == pytest.approx(float(((d.exp() - d - 1) * m).sum() / m.sum()), rel=1e-4)
    assert abs(record["filtered/kl"] - record["losses/kl"]) > 0.005  # the two sets tell apart (0.014 and 0.025)


def test_dynamic_sampling_runs_end_at_the_rollout_budget(monkeypatch):
    # budget 3 x 3 x 4 = 36: step 1 takes two rounds (24), step 2 one (the budget has no room for a second), and
    # then no round is left for a third step
    fixed = Fixed(ROUND1, ROUND2, ROUND1, ROUND2)
    monkeypatch.setattr(A, "draw_problems", fixed.draw)
    monkeypatch.setattr(A, "sample_responses", fixed.sample)
    job = make_job({}, dict(B=3, G=4, n_range=[5, 5], k_max=3, steps=3, dynamic_sampling=True, lr=1e-3))
    hist = T.train_rl(job, _model(), progress=False)
    assert fixed.calls == 3
    assert [r["step"] for r in hist["steps"]] == [1, 2]
    assert [r["rollout/count"] for r in hist["steps"]] == [24, 12]


def test_dynamic_sampling_with_a_larger_rollout_budget_takes_every_step(monkeypatch):
    # rollouts = 72 pays for two rounds in each of the 3 steps, where the default 36 stops after 2 steps: the
    # equal-updates arm
    fixed = Fixed(ROUND1, ROUND2, ROUND1, ROUND2, ROUND1, ROUND2)
    monkeypatch.setattr(A, "draw_problems", fixed.draw)
    monkeypatch.setattr(A, "sample_responses", fixed.sample)
    job = make_job({}, dict(B=3, G=4, n_range=[5, 5], k_max=3, steps=3, dynamic_sampling=True, lr=1e-3, rollouts=72))
    hist = T.train_rl(job, _model(), progress=False)
    assert fixed.calls == 6
    assert [r["step"] for r in hist["steps"]] == [1, 2, 3]
    assert [r["rollout/count"] for r in hist["steps"]] == [24, 24, 24]
    with pytest.raises(Exception, match="rollouts: must pay for one step of B x G = 12 samples, got 11"):
        make_job({}, dict(B=3, G=4, n_range=[5, 5], k_max=3, rollouts=11))


# ---------------------------------------------------------------------------------------------------- KL in the reward

KL_BY_HAND = {"k1": lambda d: -d, "k2": lambda d: 0.5 * d * d, "k3": lambda d: d.exp() - d - 1}


def _reward_kl(policy, ref, batch, estimator, beta) -> torch.Tensor:
    """beta times the estimator summed over each response's tokens, d = log pi_ref - log pi: (N,)."""
    lp, _, m = _tokens(policy, batch.problems, batch.responses)
    lq, _, _ = _tokens(ref, batch.problems, batch.responses)
    return beta * (KL_BY_HAND[estimator](lq - lp) * m).sum(1)


# shared=False matters: in the fast layout the log-probs hold response tokens only (0 at padding), so a missing
# mask is invisible there; in the plain layout the prompt's tokens would enter the sum.
@pytest.mark.parametrize("estimator", ["k1", "k2", "k3"])
@pytest.mark.parametrize("shared", [True, False])
def test_kl_in_the_reward_is_the_masked_sequence_sum_of_the_jobs_estimator(monkeypatch, shared, estimator):
    policy = _model(0)
    ref = _model(1).requires_grad_(False)  # a different reference, so the log-ratios are not zero
    got = {}
    real = ADVANTAGES["none"]
    monkeypatch.setitem(ADVANTAGES, "none", lambda r, **kw: got.setdefault("r", r.clone()) * 0 + real(r))
    _, batch, seen = _step(monkeypatch, Fixed(MIXED), policy=policy, ref=ref, advantage="none", beta=0.5,
                           kl_in="reward", kl_estimator=estimator, shared=shared)
    kl = _reward_kl(policy, ref, batch, estimator, 0.5)
    assert float(kl.abs().max()) > 0.05
    # the advantage sees the proxy reward alone; the KL is subtracted from what it returns
    assert got["r"].reshape(-1).tolist() == batch.proxy.tolist()
    assert seen.w.tolist() == pytest.approx((batch.proxy - kl).tolist(), abs=1e-4)


def test_kl_in_the_reward_is_not_normalised_by_the_group(monkeypatch):
    # grpo divides by the group's std; the KL is subtracted after, so beta scales it as written
    policy, ref = _model(0), _model(1).requires_grad_(False)
    _, batch, seen = _step(monkeypatch, Fixed(MIXED), policy=policy, ref=ref, beta=0.5, kl_in="reward",
                           kl_estimator="k1")
    kl = _reward_kl(policy, ref, batch, "k1", 0.5)
    a, b = 0.75 / (0.5 + EPS), -0.25 / (0.5 + EPS)
    c = 0.5 / (3 ** -0.5 + EPS)
    adv = torch.tensor([a, b, b, b, c, c, -c, -c, b, b, b, a])
    assert seen.w.tolist() == pytest.approx((adv - kl).tolist(), abs=1e-4)


# ---------------------------------------------------------------------------------------------------- fooled examples

def test_fooled_examples_are_the_wrong_ones_the_proxy_loves():
    responses = ["bc|c$", "bc|a$", "b|a$", "|a$", "bcde|e$"]
    batch = Batch(problems=[P1] * 5, responses=responses, proxy=torch.tensor([0.95, 0.95, 0.5, 0.99, 0.91]),
                    true=torch.tensor([1.0, 0.0, 0.0, 0.0, 0.0]), group=5, zero_frac=0.0)
    fooled = R.fooled_examples(batch)
    assert [f["response"] for f in fooled] == ["bc|a$", "|a$", "bcde|e$"]
    assert fooled[0] == {"prompt": P1.prompt, "gold": "bc|c$", "response": "bc|a$", "proxy": 0.95}
    assert [f["response"] for f in R.fooled_examples(batch, limit=1)] == ["bc|a$"]


# ---------------------------------------------------------------------------------------------------- more of the step

def test_dr_grpo_is_the_group_mean_baseline_and_a_constant_normaliser(monkeypatch):
    # `advantage: dr_grpo` is the one knob for "no std division"; `loss_agg: dr_grpo` divides the token sum by
    # rows x the longest possible response (k_max 3 + 5 = 8), whatever the lengths:
    # pg = -(sum_i w_i T_i) / (12 * 8) = 1 / 96 with the sum worked out in test_update_records_are_means_...
    record, _, seen = _step(monkeypatch, Fixed(MIXED), advantage="dr_grpo", loss_agg="dr_grpo")
    assert seen.w.tolist() == pytest.approx([0.75, -0.25, -0.25, -0.25, 0.5, 0.5, -0.5, -0.5,
                                             -0.25, -0.25, -0.25, 0.75], rel=1e-6)
    assert record["losses/pg"] == pytest.approx(1 / 96, rel=1e-5)


# the policy trained is the one sampled from: its log-probs and entropies are at the job's sampling temperature
@pytest.mark.parametrize("temperature", [1.0, 0.5])
def test_entropy_and_kl_records_are_token_means_over_the_responses(monkeypatch, temperature):
    policy, ref = _model(0), _model(1).requires_grad_(False)
    record, batch, _ = _step(monkeypatch, Fixed(MIXED), policy=policy, ref=ref, temperature=temperature)
    lp, ent, m = _tokens(policy, batch.problems, batch.responses, temperature)
    lq, _, _ = _tokens(ref, batch.problems, batch.responses, temperature)
    d = lq - lp
    assert record["rollout/entropy"] == pytest.approx(float((ent * m).sum() / m.sum()), rel=1e-5)
    assert record["losses/kl"] == pytest.approx(float(((d.exp() - d - 1) * m).sum() / m.sum()), rel=1e-4)
    assert record["losses/kl"] > 0.01


# at beta = 0 the KL record (it feeds nothing) is measured on the plan's first kl_groups groups; a KL term needs
# all rows
@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("beta, rows", [(0.0, 8), (0.1, 12)])
def test_kl_record_at_beta_0_reads_the_plans_first_kl_groups(monkeypatch, shared, beta, rows):
    policy, ref = _model(0), _model(1).requires_grad_(False)
    record, batch, _ = _step(monkeypatch, Fixed(MIXED), policy=policy, ref=ref, shared=shared, beta=beta,
                             kl_groups=2)  # 2 of the 3 groups of 4
    lp, _, m = _tokens(policy, batch.problems, batch.responses)
    lq, _, _ = _tokens(ref, batch.problems, batch.responses)
    d = lq - lp
    kl = {n: float(((d[:n].exp() - d[:n] - 1) * m[:n]).sum() / m[:n].sum()) for n in (8, 12)}
    assert record["losses/kl"] == pytest.approx(kl[rows], rel=1e-4)
    other = kl[20 - rows]
    assert abs(record["losses/kl"] - other) > 1e-3  # the two row sets tell apart


def test_the_plans_kl_groups_moves_the_kl_record_and_nothing_else(monkeypatch):
    """The step reads its KL grouping from the plan it receives: at beta = 0 another kl_groups changes the
    `losses/kl` record and leaves every other record and the updated weights bit for bit as they were."""
    out = {}
    for groups in (1, 3):
        policy, ref = _model(0), _model(1).requires_grad_(False)
        record, _, _ = _step(monkeypatch, Fixed(MIXED), policy=policy, ref=ref, lr=0.5, kl_groups=groups)
        out[groups] = record, [p.detach().clone() for p in policy.parameters()]
    (rec_1, w_1), (rec_3, w_3) = out[1], out[3]
    assert abs(rec_1["losses/kl"] - rec_3["losses/kl"]) > 1e-3
    assert {k: v for k, v in rec_1.items() if k != "losses/kl"} == {k: v for k, v in rec_3.items() if k != "losses/kl"}
    assert rec_1["losses/grad_norm"] > 0 and all(torch.equal(a, b) for a, b in zip(w_1, w_3))


def test_head_keeps_whole_groups():
    batch = Batch(problems=[p for p in MIXED[0] for _ in range(4)],
                    responses=[r for p in MIXED[0] for r in MIXED[1][p.prompt]], group=4,
                    proxy=torch.zeros(12), true=torch.zeros(12), zero_frac=0.0)
    policy = _model(0)
    for layout in (FAST, PLAIN):
        seqs = layout.build(batch, torch.device("cpu"), 1.0)
        with torch.no_grad():
            whole, head = seqs.logprobs(policy)[0], seqs.head(8).logprobs(policy)[0]
        assert head.shape[0] == 8 and torch.allclose(head, whole[:8, :head.shape[1]], atol=1e-6)
        assert torch.equal(seqs.head(8).m, seqs.m[:8, :head.shape[1]])
    with pytest.raises(ValueError, match="whole groups"):
        FAST.build(batch, torch.device("cpu"), 1.0).head(6)


BETA_CLIPS = 3.0  # large enough that the gradient norm is in (1, 2)


def test_update_records_are_means_over_the_iterations(monkeypatch):
    # lr = 0: both iterations see the same weights, so each mean equals the one-iteration value.
    # pg at ratio 1 is -sum_i w_i T_i / sum_i T_i with the dr_grpo weights and the lengths of MIXED:
    # 0.75*5 - 0.25*(5+4+8) + 0.5*(6+3) - 0.5*(6+4) - 0.25*(3+4+5) + 0.75*4 = -1, over 57 tokens
    policy, ref = _model(0), _model(1).requires_grad_(False)
    record, _, _ = _step(monkeypatch, Fixed(MIXED), policy=policy, ref=ref, advantage="dr_grpo", num_iterations=2,
                         beta=BETA_CLIPS)
    assert record["losses/pg"] == pytest.approx(1 / 57, rel=1e-5)
    assert record["losses/kl_term"] == pytest.approx(BETA_CLIPS * record["losses/kl"], rel=1e-5)
    assert record["losses/clip_frac"] == 0.0
    clipped_norm = float(torch.cat([p.grad.reshape(-1) for p in policy.parameters()]).norm())
    assert 1.0 < record["losses/grad_norm"] < 2.0  # the clip at norm 1 acted: the gradient left behind has norm 1
    assert clipped_norm == pytest.approx(1.0, rel=1e-4)


def test_all_correct_batch_records_zero_wrong_length(monkeypatch):
    all_right = (P1, P2, P3), {p.prompt: [right(p)] * 4 for p in (P1, P2, P3)}
    record, _, _ = _step(monkeypatch, Fixed(all_right))
    assert record["rollout/length_wrong"] == 0.0 and record["reward/true"] == 1.0
    assert record["rollout/zero_var_frac"] == 1.0


def test_the_real_sampler_gets_the_runs_generator_and_layout(monkeypatch):
    seen = []
    real = A.sample_responses

    def spy(model, problems, n, temperature, generator, **kw):
        seen.append((n, temperature, generator, kw.get("shared")))
        return real(model, problems, n, temperature, generator, **kw)

    monkeypatch.setattr(A, "sample_responses", spy)
    for shared in (True, False):
        policy = _model()
        job = make_job({}, dict(B=2, G=3, n_range=[4, 5], k_max=2, temperature=0.5))
        gen = torch.Generator().manual_seed(1)
        ctx = Context(job=job, policy=policy, ref=copy.deepcopy(policy), verifier=None, rng=random.Random(0),
                        sample_gen=gen, reward_gen=torch.Generator(), shared_prefix=shared)
        before = gen.get_state().clone()
        A.rl_step(ctx, torch.optim.SGD(policy.parameters(), lr=0.0), 0)
        assert seen[-1] == (3, 0.5, gen, shared)
        assert not torch.equal(before, gen.get_state())  # the draws came from the run's generator


def test_draw_problems_covers_every_allowed_hop_count():
    job = make_job({}, dict(n_range=[3, 6], k_max=4))
    probs = A.draw_problems(random.Random(0), job, 400)
    pairs = {(p.n, p.k) for p in probs}
    allowed = {(n, k) for n in range(3, 7) for k in range(1, min(n - 1, 4) + 1)}
    assert pairs == allowed


def test_train_rl_history_schedule(monkeypatch):
    rounds = [MIXED] * 5
    fixed = Fixed(*rounds)
    monkeypatch.setattr(A, "draw_problems", fixed.draw)
    monkeypatch.setattr(A, "sample_responses", fixed.sample)
    policy = _model()
    calls = []
    job = make_job({}, dict(B=3, G=4, n_range=[5, 5], k_max=3, steps=5, eval_every=3, reward="random", lr=1e-3))
    hist = T.train_rl(job, policy, evaluate=lambda m: calls.append(m) or {"acc": 0.5}, progress=False)
    assert [r["step"] for r in hist["steps"]] == [1, 2, 3, 4, 5]
    assert [e["step"] for e in hist["evals"]] == [0, 3, 5] and all(m is policy for m in calls)
    assert [e["step"] for e in hist["examples"]] == [1, 3, 5]  # a proxy reward: the first step and each due one
    assert isinstance(hist["seconds"], float) and 0 < hist["seconds"]
    assert all(0 <= r["time/seconds"] <= hist["seconds"] for r in hist["steps"])


def test_train_rl_without_proxy_reward_records_no_examples(monkeypatch):
    fixed = Fixed(MIXED, MIXED)
    monkeypatch.setattr(A, "draw_problems", fixed.draw)
    monkeypatch.setattr(A, "sample_responses", fixed.sample)
    job = make_job({}, dict(B=3, G=4, n_range=[5, 5], k_max=3, steps=2, eval_every=1))
    assert T.train_rl(job, _model(), progress=False)["examples"] == []


def test_train_rl_uses_the_jobs_learning_rate_and_no_weight_decay(monkeypatch):
    seen = []
    def first_step(ctx, opt, step):
        # every draw comes from the run's own seeded generators, never torch's global one
        assert isinstance(ctx.sample_gen, torch.Generator) and isinstance(ctx.reward_gen, torch.Generator)
        assert ctx.sample_gen is not torch.default_generator and ctx.reward_gen is not torch.default_generator
        seen.append(opt.param_groups[0])
        pytest.skip()

    monkeypatch.setattr(T, "rl_step", first_step)
    job = make_job({}, dict(B=2, G=2, n_range=[4, 5], k_max=2, steps=1, lr=0.0123))
    try:
        T.train_rl(job, _model(), progress=False)
    except pytest.skip.Exception:
        pass
    assert seen[0]["lr"] == 0.0123 and seen[0]["weight_decay"] == 0.0


def test_train_rl_needs_a_verifier_for_a_verifier_reward():
    with pytest.raises(ValueError, match="needs a verifier"):
        T.train_rl(make_job({}, {"reward": "orm"}), _model(), progress=False)


def test_clip_mask_counts_only_tokens_the_clip_acts_on():
    logp = torch.log(torch.tensor([[1.5], [1.5], [0.5], [0.5], [1.2]]))
    adv = torch.tensor([0.5, 0.0, -0.5, 0.0, 0.5])
    _, clipped = A.clipped_surrogate(logp, torch.zeros(5, 1), adv, 0.2, 0.2)
    # ratio 1.5 with A > 0 and 0.5 with A < 0 are clipped; A = 0 never is; ratio 1.2 sits on the bound
    assert clipped[:, 0].tolist() == [True, False, True, False, False]


def test_fooled_examples_default_limit_and_rounding():
    batch = Batch(problems=[P1] * 5, responses=["b|a$", "|a$", "bc|a$", "bcd|a$", "a$"],
                    proxy=torch.tensor([0.9123, 0.95, 0.99, 0.97, 0.96]), true=torch.zeros(5), group=5, zero_frac=0.0)
    fooled = R.fooled_examples(batch)
    assert len(fooled) == 3 and fooled[0]["proxy"] == 0.912


@pytest.mark.parametrize("reward, mu, dynamic, step_events", [
    ("true", 1, False, ["sample", "trim", "forward", "update", "trim"]),
    ("true", 2, False, ["sample", "trim", "forward", "update", "trim", "update", "trim"]),
    ("orm", 1, False, ["sample", "trim", "verifier", "trim", "forward", "update", "trim"]),
    ("orm", 2, False, ["sample", "trim", "verifier", "trim", "forward", "update", "trim", "update", "trim"]),
    # the test model has one layer, run twice by the record forward (the prompts' prefill, then the responses)
    ("true", 1, True, ["sample", "trim", "record forward", "trim", "trim", "trim", "forward", "update", "trim"]),
])
def test_the_heap_is_trimmed_before_each_large_transient_and_after_each_step(monkeypatch, reward, mu, dynamic,
                                                                           step_events):
    """Where a run under the memory policy gives freed heap pages back (its peak RSS): before the training forward,
    before a verifier's scoring and before the forward over everything dynamic sampling drew (which comes before
    the kept batch's forward, so that the latter's graph is not alive under it) and after each of its layers,
    between update iterations, and after every step; nowhere else. Without hooks the loop trims nothing."""
    events = []
    fixed = Fixed(MIXED, MIXED)
    monkeypatch.setattr(A, "draw_problems", fixed.draw)
    monkeypatch.setattr(A, "sample_responses", lambda *a, **k: events.append("sample") or fixed.sample(*a, **k))
    monkeypatch.setitem(A.REWARDS, "orm", lambda problems, responses, ctx: events.append("verifier") or
                        A.REWARDS["true"](problems, responses, ctx))
    score_policy = A.score_policy

    def forward(ctx, seqs, grad=False):  # the training forward keeps its graph (the fast layout reuses it)
        events.append("forward" if grad else "record forward")
        return score_policy(ctx, seqs, grad)

    monkeypatch.setattr(A, "score_policy", forward)
    clip = torch.nn.utils.clip_grad_norm_
    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", lambda *a, **k: events.append("update") or clip(*a, **k))
    monkeypatch.setattr(M, "heap_trimmer", lambda sampled_forward: lambda: events.append("trim"))
    job = make_job({}, dict(B=3, G=4, n_range=[5, 5], k_max=3, steps=2, reward=reward, num_iterations=mu,
                            dynamic_sampling=dynamic))
    verifier = object() if reward == "orm" else None
    hist = T.train_rl(job, _model(), verifier=verifier, progress=False, hooks=M.memory_hooks(job, verifier is not None))
    assert events == step_events * 2
    rollout = ["reward/proxy", "reward/true", "rollout/zero_var_frac", "rollout/length", "rollout/length_wrong",
               "rollout/think_rate", "rollout/think_any_rate", "rollout/entropy", "losses/kl"]
    filtered = ["filtered/" + k.split("/", 1)[1] for k in rollout] if dynamic else []
    assert list(hist["steps"][0]) == ["step", *rollout, *filtered, "rollout/count", "losses/pg", "losses/kl_term",
                                      "losses/clip_frac", "losses/grad_norm", "time/seconds"]  # the history's columns
    events.clear()
    fixed.calls = 0
    T.train_rl(job, _model(), verifier=verifier, progress=False)
    assert "trim" not in events and events.count("update") == 2 * mu


def test_the_memory_policys_trims_take_no_argument():
    M.heap_trimmer()()
    M.memory_hooks(make_job({}, {}), verifier=False).between_phases()
    Context(job=make_job({}, {}), policy=_model(), ref=_model(), verifier=None, rng=random.Random(0),
            sample_gen=torch.Generator(), reward_gen=torch.Generator()).hooks.between_phases()


def test_trimming_per_layer_moves_no_number_and_leaves_no_hook():
    """The per-layer trim of dynamic sampling's record forward: the trimmer's return value (malloc_trim returns
    1 or 0) must not become a block's output, it runs once per block call, and the hooks go afterwards."""
    model = TinyReasoner(ModelConfig(d_model=32, n_heads=2, n_layers=2, max_len=64),
                         generator=torch.Generator().manual_seed(0)).eval()
    X = torch.randint(1, 20, (3, 9), generator=torch.Generator().manual_seed(1))
    calls = []
    with torch.no_grad():
        plain = model(X)
        with M.trimmed_per_layer(model, lambda: calls.append(1) or 1):
            hooked = model(X)
        after = model(X)
    assert torch.equal(hooked, plain) and len(calls) == 2  # one per block
    assert torch.equal(after, plain) and len(calls) == 2 and not any(b.mlp._forward_hooks for b in model.blocks)


def _postfix_counts(err: str, key: str) -> list[int]:
    """The step count of every progress-bar frame in `err` that shows the postfix `key=`."""
    return [int(m.group(1)) for m in re.finditer(rf"(\d+)/\d+ \[[^\]\r]*{key}=", err)]


def test_the_bars_postfix_never_comes_with_a_stale_count(capsys, monkeypatch):
    # a postfix set after step s is drawn by the next timed refresh (count >= s + 1); set_postfix's own redraw
    # would draw tqdm's count of the loop, not yet advanced: "0/3 ... true=0.000" after the first step
    clock = itertools.count(0.0, 5.0)  # tqdm's clock: every step is past mininterval, so each one is drawn
    monkeypatch.setattr(tqdm.std, "time", lambda: next(clock))
    job = make_job({}, dict(B=2, G=2, n_range=[5, 5], k_max=3, steps=3, lr=1e-3))
    T.train_rl(job, _model(), progress=True)
    model = _model()
    optimize(model, PhaseConfig(steps=3, lr=1e-3, warmup=1), lambda s: model.embed.weight.pow(2).sum(), "base")
    err = capsys.readouterr().err
    for key in ("true", "loss"):
        counts = _postfix_counts(err, key)
        assert counts and min(counts) >= 1, err  # drawn, and never with the count before its step
