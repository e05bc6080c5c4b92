"""The KL term of the RL loop points the right way (issue #17, item 1).

Two kinds of check:
- exact: the algorithm's own `update` (reasonrl/rl/algorithm.py) run on the exact toy's enumerable world
  (reasonrl/exact.py: every response of a 5-token vocabulary up to length 6), with each response
  weighted by its probability under the policy, so the gradient it takes IS the expected gradient of
  the sampled estimator. It is compared with the toy's own exact quantities (`exact_kl`,
  `expected_k3_loss`) and with per-state KLs computed in closed form here.
- behavioural: a TinyReasoner moved away from a fixed reference, rewards held equal, a few real
  `rl_step`s with beta > 0 must bring it back towards the reference, for each placement; and the
  reference must never move.
"""

from __future__ import annotations

import copy
import random

import pytest
import torch

from reasonrl import exact as E
from reasonrl import exact_gradients as G
from reasonrl.model import ModelConfig, TinyReasoner
from reasonrl.rl import algorithm as A
from reasonrl.rl import train as T
from reasonrl.rl.context import Context
from reasonrl.rl.job import make_job
from reasonrl.rl.variants import REWARDS
from reasonrl.tasks.hop import make_problem
from reasonrl.tokens import encode_pairs

torch.set_num_threads(1)


# ---------------------------------------------------------------------------------------------------- exact


def _toy_policies():
    # two independently initialised toy policies: the live one and the (fixed) reference
    pol = E.new_policy(16, torch.Generator().manual_seed(1)).requires_grad_(True)
    ref = E.new_policy(16, torch.Generator().manual_seed(2)).requires_grad_(False)
    return pol, ref


class _ToySequences:
    """The toy's whole world as the loop's batch layout: row y is one response, column t its decision t.

    The mask carries pi(y) (detached), so the loop's `seq_mean_token_sum` aggregation is (1/N) E_pi[sum_t .]:
    the gradient the loop takes is exactly the expected gradient of sampling y from pi."""

    def __init__(self, policy):
        w = E.world()
        self.idx = torch.arange(w.n)
        with torch.no_grad():
            pi = E.all_logprobs(policy).exp()  # (N,)
        self.m = w.dec_mask.to(E.DTYPE) * pi[:, None]  # (N, 6)

    def logprobs(self, model):
        tok = E.token_logprobs(model, self.idx)  # (N, 6)
        return tok, torch.zeros_like(tok)


def _loop_kl_gradient(estimator: str, beta: float = 0.5) -> tuple[torch.Tensor, float]:
    """The gradient the loop's update takes from its KL term alone (advantages all zero), rescaled to
    beta * E_pi[grad sum_t k_t]; and the pre-clip gradient norm it reports."""
    pol, ref = _toy_policies()
    job = make_job({}, {"beta": beta, "kl_estimator": estimator, "kl_in": "loss", "loss_agg": "seq_mean_token_sum"})
    ctx = Context(job=job, policy=pol, ref=ref, verifier=None, rng=random.Random(0),
                    sample_gen=torch.Generator(), reward_gen=torch.Generator())
    seqs = _ToySequences(pol)
    with torch.no_grad():
        old = E.token_logprobs(pol, seqs.idx)
        ref_lp = E.token_logprobs(ref, seqs.idx)
    n = E.world().n
    scored = A.Scored(old_logp=old, ent=torch.zeros_like(old), ref_logp=ref_lp, first=None, kl=0.0)
    stats = A.update(ctx, torch.optim.SGD(pol.parameters(), lr=0.0), seqs, torch.zeros(n, dtype=E.DTYPE),
                     scored, step=0)
    grad = G.flat_grad(pol) * n  # undo the 1/N of the aggregation
    return grad, stats["losses/grad_norm"] * n


def _exact_gradient(fn) -> torch.Tensor:
    """∇ of fn(pol, ref) (a 0-d tensor) for the two toy policies, with respect to the live one."""
    pol, ref = _toy_policies()
    pol.zero_grad()
    fn(pol, ref).backward()
    return G.flat_grad(pol)


def _sequence_kl(pol, ref):  # KL(pi || pi_ref) over whole responses: the toy's exact_kl
    return E.exact_kl(E.all_token_logprobs(pol), E.all_token_logprobs(ref))


def _expected_k3(pol, ref):  # E_pi[sum_t k3_t] with pi held constant: the toy's expected_k3_loss
    return E.expected_k3_loss(E.all_token_logprobs(pol), E.all_token_logprobs(ref))


def _tables(pol, ref):
    """log pi(.|s), log pi_ref(.|s) (P, V + 1) and reach = stopgrad(chance that pi writes prefix s) (P,)."""
    table, ref_table = E.log_table(pol), E.log_table(ref)
    lp = E.all_logprobs(pol)  # (N,); prefixes are the first P responses, and pi(s) = pi(s, END) / pi(END | s)
    reach = (lp[: table.shape[0]] - table[:, E.END]).detach().exp()
    return table, ref_table, reach


def _per_state_kl_pi_ref(pol, ref):  # sum_s d(s) KL(pi(.|s) || pi_ref(.|s)), in closed form
    table, ref_table, reach = _tables(pol, ref)
    return (reach * (table.exp() * (table - ref_table)).sum(1)).sum()


def _per_state_kl_ref_pi(pol, ref):  # sum_s d(s) KL(pi_ref(.|s) || pi(.|s)), in closed form
    table, ref_table, reach = _tables(pol, ref)
    return (reach * (ref_table.exp() * (ref_table - table)).sum(1)).sum()


def _close(a: torch.Tensor, b: torch.Tensor, tol: float = 1e-9) -> bool:
    return float((a - b).abs().max()) <= tol * max(1.0, float(b.abs().max()))


def test_k3_in_the_loss_follows_the_per_state_kl_from_the_reference():
    beta = 0.5
    got, norm = _loop_kl_gradient("k3", beta)
    assert norm < 1.0  # below the loop's grad-norm clip: the gradient read back is the unclipped one
    want = beta * _exact_gradient(_expected_k3)  # the toy's own expected k3 update
    assert float(want.abs().max()) > 1e-3  # the policies differ: a sign or direction error shows
    assert _close(got, want)
    # which is, in closed form, the per-state KL from the reference (checks the estimator and the toy's helper)
    assert _close(want, beta * _exact_gradient(_per_state_kl_ref_pi))
    # What it is not: the gradient of KL(pi || pi_ref). k3 in the loss descends KL(pi_ref || pi) state by state
    # (Schulman's k3 is an unbiased estimate of the KL's VALUE, not of its gradient).
    seq = beta * _exact_gradient(_sequence_kl)
    assert not _close(got, seq, tol=1e-3)
    # ...but both are descent directions of KL(pi || pi_ref): a small step along -got lowers it.
    assert float(got @ seq) > 0


def test_k2_in_the_loss_follows_the_per_state_kl_to_the_reference():
    beta = 0.5
    got, norm = _loop_kl_gradient("k2", beta)
    assert norm < 1.0
    want = beta * _exact_gradient(_per_state_kl_pi_ref)
    assert float(want.abs().max()) > 1e-3
    assert _close(got, want)
    assert not _close(got, beta * _exact_gradient(_per_state_kl_ref_pi), tol=1e-3)


def test_k1_in_the_loss_has_zero_expected_gradient():
    # E_pi[∇(log pi - log pi_ref)] = E_pi[∇ log pi] = 0: k1 in the loss is a no-op in expectation.
    got, _ = _loop_kl_gradient("k1", 0.5)
    assert float(got.abs().max()) < 1e-12
    # the mutation "KL in the loss with its sign flipped" would still be 0 here; it is caught below and in the
    # k2/k3 tests, whose gradients change sign with it


def test_exact_sequence_kl_of_the_toy_policies_is_positive():
    # the KL helpers the tests above compare with agree with the toy's own KL on full responses
    pol, ref = _toy_policies()
    lp, ref_lp = E.all_logprobs(pol).detach(), E.all_logprobs(ref)
    assert E.kl(lp, ref_lp) == pytest.approx(_sequence_kl(pol, ref).item(), rel=1e-12)
    assert E.kl(lp, ref_lp) > 0.01
    # k3 is unbiased: the expected k3 loss has the KL as its value (only its gradient differs)
    assert _expected_k3(pol, ref).item() == pytest.approx(E.kl(lp, ref_lp), rel=1e-9)


# ---------------------------------------------------------------------------------------------------- behaviour

CFG = ModelConfig(d_model=32, n_heads=2, n_layers=1, max_len=64)


def _ref_and_moved():
    ref = TinyReasoner(CFG, generator=torch.Generator().manual_seed(0)).eval().requires_grad_(False)
    policy = copy.deepcopy(ref).requires_grad_(True)
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():  # move the policy away from the reference
        for p in policy.parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=gen))
    return ref, policy


def _probe():
    rng = random.Random(3)
    probs = [make_problem(rng, 5, 2) for _ in range(8)]
    X, M = encode_pairs([(p.prompt, p.trace + "|" + p.answer + "$") for p in probs])
    return X, M[:, 1:]


@torch.no_grad()
def _probe_kl(policy, ref, X, m) -> float:
    """Mean over the response positions of a fixed probe set of the full next-token KL(pi || pi_ref)."""
    lp = torch.log_softmax(policy(X[:, :-1]), -1)
    lq = torch.log_softmax(ref(X[:, :-1]), -1)
    kl = (lp.exp() * (lp - lq)).sum(-1)  # (B, T)
    return float((kl * m).sum() / m.sum())


def _steps(monkeypatch, steps: int, **job):
    # rewards held equal (all zero), so only the KL term moves the policy
    monkeypatch.setitem(REWARDS, "true", lambda problems, responses, ctx: torch.zeros(len(responses)))
    ref, policy = _ref_and_moved()
    job = make_job({}, dict(B=4, G=4, n_range=[4, 5], k_max=2, steps=steps, lr=1e-2, **job))
    ctx = Context(job=job, policy=policy, ref=ref, verifier=None, rng=random.Random(5),
                    sample_gen=torch.Generator().manual_seed(6), reward_gen=torch.Generator().manual_seed(7))
    opt = torch.optim.Adam(policy.parameters(), lr=job.lr)
    X, m = _probe()
    before = _probe_kl(policy, ref, X, m)
    ref_before = [p.clone() for p in ref.parameters()]
    for step in range(steps):
        A.rl_step(ctx, opt, step)
    assert all(torch.equal(a, b) for a, b in zip(ref_before, ref.parameters()))  # the reference stays fixed
    return before, _probe_kl(policy, ref, X, m)


@pytest.mark.parametrize("kl_in,estimator,beta", [
    ("loss", "k3", 1.0), ("loss", "k2", 1.0), ("reward", "k1", 0.5), ("reward", "k2", 0.5), ("reward", "k3", 0.5),
])
def test_a_few_steps_with_beta_bring_the_policy_back_to_the_reference(monkeypatch, kl_in, estimator, beta):
    before, after = _steps(monkeypatch, 8, beta=beta, kl_in=kl_in, kl_estimator=estimator)
    assert after < 0.9 * before, (before, after)


def test_without_beta_equal_rewards_leave_the_policy_where_it_is(monkeypatch):
    # the control: with beta = 0 and equal rewards every advantage is 0, so nothing moves the policy
    before, after = _steps(monkeypatch, 3, beta=0.0)
    assert after == pytest.approx(before, rel=1e-6)


def test_train_rl_keeps_a_frozen_copy_of_the_start_as_reference(monkeypatch):
    ref, policy = _ref_and_moved()
    start = [p.detach().clone() for p in policy.parameters()]
    seen = []
    real_step = T.rl_step

    def spy(ctx, opt, step):
        assert ctx.ref is not ctx.policy
        assert all(torch.equal(a, b) for a, b in zip(start, ctx.ref.parameters()))  # never moves
        assert not any(p.requires_grad for p in ctx.ref.parameters())
        out = real_step(ctx, opt, step)
        seen.append(out[0]["losses/kl"])
        return out

    monkeypatch.setattr(T, "rl_step", spy)
    job = make_job({}, dict(B=4, G=4, n_range=[4, 5], k_max=2, steps=3, lr=1e-2, beta=0.1, reward="random"))
    T.train_rl(job, policy, progress=False)
    assert seen[0] == 0.0  # the first rollout comes from the start itself
    assert seen[-1] > 0.0  # after updates the policy has left its (fixed) reference
    assert any(not torch.equal(a, b) for a, b in zip(start, policy.parameters()))
