"""The fast paths against their plain references: prefix-shared rollouts (same characters, same generator
state) and prefix-shared training (same log-probs, losses and gradients within 1e-5)."""

import copy
import dataclasses
import functools
import random

import pytest
import torch

from reasonrl.logprobs import shared_token_logprobs, token_logprobs
from reasonrl.model import ModelConfig, TinyReasoner
from reasonrl.pretrain import PhaseConfig, train_phase
from reasonrl.rl.algorithm import rl_step
from reasonrl.rl.context import Context
from reasonrl.rl.job import make_job
from reasonrl.rl.layout import plan_for
from reasonrl.sampling import response_of, sample, sample_groups, sample_reference, sample_responses
from reasonrl.tasks import PAD_ID, encode
from reasonrl.tasks.hop import make_problem, sample_problem
from reasonrl.tokens import encode_pairs

TOL = 1e-5


def _problems(count, seed=0, n_range=(4, 12), k_max=7):
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        n = rng.randint(*n_range)
        out.append(make_problem(rng, n, rng.randint(1, min(n - 1, k_max))))
    return out


@functools.cache
def _warm():
    """A tiny policy trained a little: it writes `$` (so decoding can stop early) and is right only sometimes."""
    model = TinyReasoner(ModelConfig(d_model=32, n_heads=2, n_layers=2), generator=torch.Generator().manual_seed(0))
    train_phase(model, PhaseConfig(steps=120, batch_size=32, warmup=5, lr=3e-3, n_range=(3, 5)), 1.0)
    return model.eval()


def _gen(seed=5):
    return torch.Generator().manual_seed(seed)


# ----------------------------------------------------------------------------- rollouts


@pytest.mark.parametrize("temperature", [0.0, 1.0, 0.7])
@pytest.mark.parametrize("G", [1, 3, 8])
def test_groups_equal_reference_on_repeated_prompts(tiny_model, temperature, G):
    prompts = [p.prompt for p in _problems(6, seed=G)]
    assert len({len(p) for p in prompts}) > 2  # mixed prompt lengths
    flat = [p for p in prompts for _ in range(G)]
    ga, gb, gc = _gen(), _gen(), _gen()
    ref = sample_reference(tiny_model, flat, 12, temperature, ga)
    assert sample(tiny_model, flat, 12, temperature, gb) == ref
    assert sample_groups(tiny_model, prompts, G, 12, temperature, gc, stop_at_end=False) == ref
    assert torch.equal(ga.get_state(), gc.get_state())


@pytest.mark.parametrize("temperature", [1.0, 0.7, 0.0])
def test_early_stop_keeps_responses_and_generator_state(temperature):
    model = _warm()
    probs = _problems(12, seed=3, n_range=(3, 5), k_max=3)
    prompts = [p.prompt for p in probs]
    G, max_new = 8, 12
    ga, gb = _gen(), _gen()
    full = sample_reference(model, [p for p in prompts for _ in range(G)], max_new, temperature, ga)
    early = sample_groups(model, prompts, G, max_new, temperature, gb)
    assert len(early[0]) < max_new  # every row wrote `$` before the budget ran out: the loop stopped
    assert [response_of(x) for x in early] == [response_of(x) for x in full]
    assert torch.equal(ga.get_state(), gb.get_state())
    assert torch.equal(torch.rand(5, generator=ga), torch.rand(5, generator=gb))


@pytest.mark.parametrize("chunk", [4096, 20, 3])
def test_sample_responses_shared_equals_plain_and_reference(chunk):
    model = _warm()
    probs = _problems(10, seed=4, n_range=(3, 5), k_max=3)
    G, max_new = 4, max(p.k for p in probs) + 5
    ga, gb, gc = _gen(), _gen(), _gen()
    fast = sample_responses(model, probs, G, 1.0, ga, chunk=chunk)
    plain = sample_responses(model, probs, G, 1.0, gb, chunk=chunk, shared=False)
    per = max(1, chunk // G)  # the reference, chunk by chunk of whole groups
    ref = []
    for i in range(0, len(probs), per):
        outs = sample_reference(model, [p.prompt for p in probs[i: i + per] for _ in range(G)], max_new, 1.0, gc)
        ref += [response_of(o) for o in outs]
    assert fast == plain == [ref[i * G:(i + 1) * G] for i in range(len(probs))]
    assert torch.equal(ga.get_state(), gb.get_state()) and torch.equal(ga.get_state(), gc.get_state())
    # the next call on the same generators draws the same, too
    assert sample_responses(model, probs[:3], G, 1.0, ga) == sample_responses(model, probs[:3], G, 1.0, gb,
                                                                             shared=False)


def test_sample_groups_edge_cases(tiny_model):
    assert sample_groups(tiny_model, [], 4, 5) == []
    with pytest.raises(ValueError, match="max_len"):
        sample_groups(tiny_model, ["a" * 90], 2, 10)
    with pytest.raises(ValueError, match="group"):
        sample_groups(tiny_model, ["ab"], 0, 3)
    assert sample_responses(tiny_model, [], 4, 1.0, _gen()) == []


def _kept(G=4, seed=3):
    """A batch sampled with its prefill kept: (model, batch, the kept prefill, the generator's state after)."""
    from reasonrl.rl.batch import Batch

    model = copy.deepcopy(_warm())
    probs = _problems(5, seed=seed)
    keep, gen = [], _gen()
    outs = sample_groups(model, [p.prompt for p in probs], G, 8, 1.0, gen, keep=keep)
    zeros = torch.zeros(len(outs))
    batch = Batch([p for p in probs for _ in range(G)], [response_of(o) for o in outs], zeros, zeros, G, 0.0)
    return model, batch, keep, gen.get_state()


def test_kept_prefill_moves_no_draw():
    """Keeping the prefill (with its graph) changes no character drawn and leaves the generator where it was."""
    model, batch, keep, state = _kept()
    gen = _gen()
    outs = sample_groups(model, [p.prompt for p in batch.problems[::4]], 4, 8, 1.0, gen)
    assert [response_of(o) for o in outs] == batch.responses
    assert torch.equal(gen.get_state(), state)
    (pre,) = keep
    assert pre.model is model
    assert pre.last.grad_fn is not None and all(k.grad_fn is not None and v.grad_fn is not None for k, v in pre.kv)


def test_a_kept_prefill_serves_only_its_model_at_its_weights():
    """Another model (the reference), or the policy after an update, must not start from the rollout's prefill."""
    from reasonrl.rl.layout import shared_prefix

    model, batch, keep, _ = _kept()
    batch.prefill = keep[0]
    with pytest.raises(ValueError, match="another model"):
        shared_prefix(batch, "cpu", 1.0).logprobs(copy.deepcopy(model))
    assert batch.prefill is None  # the sequences took it: the batch outlives the step, the prefill serves one forward
    batch.prefill = keep[0]
    with torch.no_grad():  # an optimizer step updates the weights in place, which bumps their versions
        next(model.parameters()).mul_(1.0)
    with pytest.raises(ValueError, match="another model"):
        shared_prefix(batch, "cpu", 1.0).logprobs(model)


def test_a_round_keeps_its_prefill_only_where_the_step_reuses_it_at_no_memory_cost():
    def keeps(shared=True, verifier=None, **overrides):  # the plan a run's context makes for itself
        job = make_job(dict(B=2, G=2, n_range=[3, 5], k_max=3, steps=1), overrides)
        return Context(job=job, policy=_warm(), ref=_warm(), verifier=verifier, rng=random.Random(0),
                       sample_gen=_gen(), reward_gen=_gen(), shared_prefix=shared).plan.keep_prefill

    assert keeps()
    assert not keeps(shared=False)  # the plain layout prefills every row in its own forward
    assert not keeps(dynamic_sampling=True)
    assert not keeps(num_iterations=2)
    assert not keeps(verifier=object())


def test_a_prefill_is_kept_only_when_the_rollout_is_one_chunk():
    """Several chunks' prefills would serve no forward (the training batch is one): none is computed with a graph."""
    model, probs = _warm(), _problems(5)
    keep = []
    sample_responses(model, probs, 4, 1.0, _gen(), chunk=8, keep=keep)  # two problems per chunk: three chunks
    assert keep == []
    sample_responses(model, probs, 4, 1.0, _gen(), chunk=20, keep=keep)
    assert len(keep) == 1 and keep[0].last.shape[0] == 5


def test_training_forward_from_the_kept_prefill_is_bit_identical():
    """The training forward that starts from the rollout's prefill gives the same log-probs, entropies and
    gradients, bit for bit, as the one that prefills anew; the prefill serves one forward only."""
    from reasonrl.rl.layout import shared_prefix

    model, batch, keep, _ = _kept()
    w = torch.randn(len(batch.responses), generator=_gen(3))
    out = {}
    for name, pre in (("anew", None), ("kept", keep[0])):
        model.zero_grad()
        batch.prefill = pre
        seqs = shared_prefix(batch, "cpu", 1.0)
        lp, ent = seqs.logprobs(model)
        ((lp * w[:, None] + 0.1 * ent) * seqs.m).sum().backward()
        out[name] = (lp.detach(), ent.detach(), _grads(model))
        assert seqs.prefilled is None  # used once: after an update its weights would be stale
    (lp_a, ent_a, g_a), (lp_k, ent_k, g_k) = out["anew"], out["kept"]
    assert torch.equal(lp_k, lp_a) and torch.equal(ent_k, ent_a)
    assert all(torch.equal(a, b) for a, b in zip(g_k, g_a))


def test_a_prefill_of_other_prompts_is_refused():
    from reasonrl.rl.layout import shared_prefix

    model, batch, keep, _ = _kept()
    sub = batch.groups([0, 1, 2])  # three of the five groups, with the prefill of all five
    sub.prefill = keep[0]
    with pytest.raises(ValueError, match="prefilled: made for \\(prompts, length\\) \\(5, "):
        shared_prefix(sub, "cpu", 1.0).logprobs(model)


@pytest.mark.parametrize("overrides", [{}, {"dynamic_sampling": True}, {"method": "sft"}, {"num_iterations": 2}])
def test_rl_step_prefills_the_policy_once_per_batch(monkeypatch, overrides):
    """A fast GRPO step prefills its prompts twice: in the rollout, with the graph kept for the training forward,
    and for the reference's few groups of the KL record. Dynamic sampling keeps no prefill (a round may be
    filtered out): each round prefills, then the record of everything sampled and the kept batch prefill for
    the policy and the reference each. SFT has no rollout. With two updates the rollout keeps none either (it
    raised the peak RSS), and the second update prefills again. The batch does not hold the prefill after."""
    import reasonrl.logprobs as logprobs_mod
    import reasonrl.sampling as sampling_mod

    grad = []  # whether each prefill recorded a graph
    real = logprobs_mod.prefill

    def counting(*a, **k):
        grad.append(torch.is_grad_enabled())
        return real(*a, **k)

    monkeypatch.setattr(logprobs_mod, "prefill", counting)
    monkeypatch.setattr(sampling_mod, "prefill", counting)
    _, batch, _, _, _ = _run_step(True, 0.5, **overrides)
    if overrides.get("dynamic_sampling"):
        rounds = len(batch.sampled.problems) // len(batch.problems)
        assert grad == [False] * rounds + [False, False, True, False]
    elif overrides.get("method") == "sft":
        assert grad == [True, False]
    elif overrides.get("num_iterations") == 2:
        assert grad == [False, True, False, True]
    else:
        assert grad == [True, False]  # the rollout's (kept), then the reference's
    assert batch.prefill is None


def test_the_step_keeps_the_prefill_only_where_its_plan_says_and_moves_no_bit(monkeypatch):
    """The rollout keeps its prefill for the training forward only where the plan the step receives says so,
    and either way the step's records, gradients and updated weights are the same, bit for bit."""
    import reasonrl.logprobs as logprobs_mod
    import reasonrl.sampling as sampling_mod

    grad = []  # whether each prefill recorded a graph
    real = logprobs_mod.prefill
    counting = lambda *a, **k: grad.append(torch.is_grad_enabled()) or real(*a, **k)  # noqa: E731
    monkeypatch.setattr(logprobs_mod, "prefill", counting)
    monkeypatch.setattr(sampling_mod, "prefill", counting)
    out = {}
    for keep in (True, False):
        grad.clear()
        record, _, seen, weights, _ = _run_step(True, 0.5, {"keep_prefill": keep})
        out[keep] = record, seen, weights, list(grad)
    (rec_k, seen_k, w_k, grad_k), (rec_n, seen_n, w_n, grad_n) = out[True], out[False]
    assert grad_k == [True, False]  # the rollout's, kept with its graph, then the reference's
    assert grad_n == [False, True, False]  # the rollout's, the training forward's anew, the reference's
    assert rec_k == rec_n
    assert all(torch.equal(a, b) for a, b in zip(seen_k[0], seen_n[0]))
    assert all(torch.equal(a, b) for a, b in zip(w_k, w_n))


@pytest.mark.parametrize("overrides", [{}, {"num_iterations": 2, "beta": 0.3}, {"method": "rft", "num_iterations": 2}])
def test_recomputing_the_blocks_moves_no_bit(monkeypatch, overrides):
    """A plan that recomputes the training forward's blocks in backward gives the step's records, every
    iteration's gradients and the updated weights of the plan that keeps their activations, bit for bit; each
    forward with a graph checkpoints both halves of each block (two layers here), none without."""
    import reasonrl.logprobs as logprobs_mod

    calls = []
    real = logprobs_mod.checkpoint
    monkeypatch.setattr(logprobs_mod, "checkpoint", lambda *a, **k: calls.append(1) or real(*a, **k))
    lr = 2.0 if overrides.get("num_iterations", 1) > 1 else 0.5
    rec_k, _, seen_k, w_k, _ = _run_step(True, lr, **overrides)
    assert calls == []
    rec_r, _, seen_r, w_r, _ = _run_step(True, lr, {"recompute": True}, **overrides)
    assert len(calls) == 2 * 2 * overrides.get("num_iterations", 1)
    assert rec_r == rec_k
    assert len(seen_r) == len(seen_k) == overrides.get("num_iterations", 1)
    assert all(torch.equal(a, b) for ga, gb in zip(seen_r, seen_k) for a, b in zip(ga, gb))
    assert all(torch.equal(a, b) for a, b in zip(w_r, w_k))


def test_a_recomputing_forward_keeps_only_the_inputs_of_each_half_block(monkeypatch):
    """What the graph holds for backward: with recompute, each block's attention and MLP halves keep only their
    inputs (n x D each), a small share of what the graph keeps without; without a graph nothing is recomputed."""
    import reasonrl.logprobs as logprobs_mod
    from reasonrl.rl.layout import shared_prefix

    saved = {}
    for recompute in (False, True):
        model, batch, keep, _ = _kept()
        batch.prefill = keep[0]  # the prompts' graph was made by the rollout: only the responses' is counted
        seqs = shared_prefix(batch, "cpu", 1.0, recompute=recompute)
        saved[recompute] = 0

        def count(t, recompute=recompute):
            saved[recompute] += t.numel()
            return t

        with torch.autograd.graph.saved_tensors_hooks(count, lambda t: t):
            seqs.logprobs(model)
    assert saved[True] < 0.25 * saved[False]  # 15% on this model: what remains is the head's softmax
    seqs = shared_prefix(batch, "cpu", 1.0, recompute=True)
    monkeypatch.setattr(logprobs_mod, "checkpoint", lambda *a, **k: 1 / 0)
    with torch.no_grad():
        seqs.logprobs(model)  # nothing to recompute without a graph: no checkpoint


def test_slicing_a_forward_without_a_graph_moves_no_weight(monkeypatch):
    """Dynamic sampling scores everything it drew B groups at a time (the plan's slices): gradients and weights are
    those of the forward in one piece, bit for bit (that forward feeds records only). The records read the same
    numbers up to float rounding: a matrix product over fewer rows may round differently (here losses/kl moved in
    its eighth digit; the dyneq_s0 stage, run side by side with and without, wrote the same bytes:
    docs/performance.md)."""
    job = dict(dynamic_sampling=True, reward="true", n_range=[3, 6], k_max=5, B=3, rollouts=5 * 3 * 4)
    rec_1, batch_1, seen_1, w_1, _ = _run_step(True, 0.5, {"slice_groups": None}, **job)
    import reasonrl.rl.layout as layout_mod

    widths = []  # the groups of each forward without a graph
    real = layout_mod.shared_token_logprobs

    def counting(model, prompts, *a, **k):
        if not torch.is_grad_enabled():
            widths.append(len(prompts))
        return real(model, prompts, *a, **k)

    monkeypatch.setattr(layout_mod, "shared_token_logprobs", counting)
    rec_s, batch_s, seen_s, w_s, _ = _run_step(True, 0.5, **job)
    assert len(batch_s.sampled.problems) > 2 * 3 * 4  # more than two slices of B = 3 groups of G = 4
    assert max(widths) == 3 and sum(widths) >= len(batch_s.sampled.problems) // 4
    assert rec_s.keys() == rec_1.keys() and any(k.startswith("rollout/") for k in rec_s)
    assert all(rec_s[k] == pytest.approx(rec_1[k], rel=1e-6, abs=1e-9) for k in rec_1)
    assert all(torch.equal(a, b) for ga, gb in zip(seen_s, seen_1) for a, b in zip(ga, gb))
    assert all(torch.equal(a, b) for a, b in zip(w_s, w_1))


def test_the_plan_recomputes_large_batches_and_slices_dynamic_sampling_on_the_fast_layout_only():
    from reasonrl.rl.layout import FAST, PLAIN, RECOMPUTE_ABOVE, Plan, batch_tokens

    chain = make_job({"task": "chain", "n_range": [8, 9], "k_min": 7, "k_max": 7}, {})
    hop = make_job({"n_range": [15, 16], "k_min": 7, "k_max": 7}, {})
    assert batch_tokens(chain) == 32 * 8 * 37 > RECOMPUTE_ABOVE >= batch_tokens(hop) == 32 * 8 * 12
    assert plan_for(chain).recompute and not plan_for(hop).recompute
    at = dict(k_min=3, k_max=3, B=64)  # responses of up to 8 characters: 64 x 8 x 8 = 4,096
    assert batch_tokens(make_job(at, {})) == RECOMPUTE_ABOVE and not plan_for(make_job(at, {})).recompute
    assert plan_for(make_job(at, {"B": 65})).recompute
    assert not plan_for(chain, shared=False).recompute  # the plain layout is the reference
    assert plan_for(make_job({}, {"dynamic_sampling": True, "B": 5})).slice_groups == 5
    assert plan_for(hop).slice_groups is None
    assert plan_for(make_job({}, {"dynamic_sampling": True}), shared=False).slice_groups is None
    for change in ({"recompute": True}, {"slice_groups": 2}):
        with pytest.raises(ValueError, match="fast layout"):
            Plan(layout=PLAIN, keep_prefill=False, kl_groups=8, **change)
        assert Plan(layout=FAST, keep_prefill=False, kl_groups=8, **change)


# ----------------------------------------------------------------------------- training


def _grads(model):
    return [p.grad.clone() for p in model.parameters()]


def _close(a, b, tol=TOL):
    """Every tensor pair within tol, absolutely, or relative to the tensor's largest entry when that exceeds 1."""
    return all((x - y).abs().max().item() <= tol * max(1.0, y.abs().max().item()) for x, y in zip(a, b))


@pytest.mark.parametrize("G", [1, 4])
def test_shared_token_logprobs_and_gradients_equal_full(G):
    model = copy.deepcopy(_warm()).train()
    probs = _problems(5, seed=6)
    rng = random.Random(1)
    resps = [[p.trace[: rng.randint(0, p.k)] + "|" + p.answer + "$"[: rng.randint(0, 1)] for _ in range(G)]
             for p in probs]
    pairs = [(p.prompt, r) for p, rs in zip(probs, resps) for r in rs]
    X, M = encode_pairs(pairs)
    m = M[:, 1:]
    lp_full, ent_full = token_logprobs(model, X)  # (N, T-1)
    prompts = torch.full((len(probs), max(len(p.prompt) for p in probs)), PAD_ID)
    for i, p in enumerate(probs):
        prompts[i, : len(p.prompt)] = torch.tensor(encode(p.prompt))
    R = max(len(r) for _, r in pairs)
    resp = torch.full((len(pairs), R), PAD_ID)
    for i, (_, r) in enumerate(pairs):
        resp[i, : len(r)] = torch.tensor(encode(r))
    lens = torch.tensor([len(p.prompt) for p in probs])
    lp, ent = shared_token_logprobs(model, prompts, lens, resp.view(len(probs), G, R))
    # the same tokens: response column j of row i is full column len(prompt_i) - 1 + j
    for i, (p, r) in enumerate(pairs):
        a = len(p) - 1
        assert (lp[i, : len(r)] - lp_full[i, a: a + len(r)]).abs().max() <= TOL
        assert (ent[i, : len(r)] - ent_full[i, a: a + len(r)]).abs().max() <= TOL
        assert (lp[i, len(r):] == 0).all()
    # a loss that weighs every token differently: log-probs and entropies, all masked response tokens
    w = torch.randn(len(pairs), generator=_gen(3))
    mr = (resp != PAD_ID).float()
    model.zero_grad()
    ((lp_full * w[:, None] + 0.1 * ent_full) * m).sum().div(m.sum()).backward()
    g_full = _grads(model)
    model.zero_grad()
    ((lp * w[:, None] + 0.1 * ent) * mr).sum().div(mr.sum()).backward()
    assert _close(_grads(model), g_full)


class RecordingSGD(torch.optim.SGD):
    """SGD that keeps a copy of the (clipped) gradients of every step."""

    def __init__(self, params, lr):
        super().__init__(params, lr=lr)
        self.seen = []

    def step(self, closure=None):
        self.seen.append([p.grad.clone() for g in self.param_groups for p in g["params"]])
        return super().step(closure)


def _run_step(shared: bool, lr: float, plan_changes: dict | None = None, **overrides):
    """One rl_step from the warm policy; plan_changes (optional) replace fields of the plan's."""
    # GRPO on the random reward: every group has nonzero advantages, so every row carries gradient
    base = dict(B=6, G=4, n_range=[3, 5], k_max=3, steps=1, reward="random")
    if overrides.get("method", "grpo") != "grpo":
        base["reward"] = "true"
    job = make_job(base, overrides)
    ref = copy.deepcopy(_warm()).requires_grad_(False)
    policy = copy.deepcopy(_warm())
    with torch.no_grad():  # policy and reference differ, so the KL terms are not zero
        for p in policy.parameters():
            p.add_(0.02 * torch.randn(p.shape, generator=_gen(9)))
    plan = plan_for(job, shared)
    ctx = Context(job=job, policy=policy, ref=ref, verifier=None, rng=random.Random(7), sample_gen=_gen(8),
                  reward_gen=_gen(10), shared_prefix=shared,
                  plan=dataclasses.replace(plan, **(plan_changes or {})))
    opt = RecordingSGD(policy.parameters(), lr)
    record, batch = rl_step(ctx, opt, 0)
    return record, batch, opt.seen, list(policy.parameters()), ctx.sample_gen


@pytest.mark.parametrize("overrides", [
    {}, {"method": "rft"}, {"method": "sft"},
    {"num_iterations": 3, "eps_high": 0.28},
    {"beta": 0.5, "kl_estimator": "k3"}, {"beta": 0.5, "kl_estimator": "k2", "loss_agg": "seq_mean_token_mean"},
    {"beta": 0.5, "kl_in": "reward", "kl_estimator": "k1"},
    {"num_iterations": 2, "beta": 0.3, "loss_agg": "seq_mean_token_sum", "advantage": "rloo"},
    {"method": "rft", "num_iterations": 2, "beta": 0.3},
    {"temperature": 0.7, "num_iterations": 2, "beta": 0.3},
])
def test_rl_step_fast_equals_plain(overrides):
    lr = 2.0 if overrides.get("num_iterations", 1) > 1 else 0.5  # big steps, so that later iterations clip
    rec_p, batch_p, seen_p, w_p, gen_p = _run_step(False, lr, **overrides)
    rec_f, batch_f, seen_f, w_f, gen_f = _run_step(True, lr, **overrides)
    assert batch_f.responses == batch_p.responses
    assert torch.equal(gen_f.get_state(), gen_p.get_state())
    assert rec_f.keys() == rec_p.keys()
    for k in rec_p:
        assert abs(rec_f[k] - rec_p[k]) <= TOL * max(1.0, abs(rec_p[k])), k
    assert len(seen_f) == len(seen_p) == overrides.get("num_iterations", 1)
    for gf, gp in zip(seen_f, seen_p):  # every iteration's gradient
        assert _close(gf, gp)
    assert _close(w_f, w_p)
    if overrides.get("num_iterations", 1) > 1 and overrides.get("method") != "rft":
        assert rec_p["losses/clip_frac"] > 0  # the clipped branch was exercised
    if overrides.get("beta"):
        assert rec_p["losses/kl"] > 0
    if overrides.get("method") == "rft":  # some rows dropped, some kept: the row selection was exercised
        assert 0 < float(batch_p.true.sum()) < len(batch_p.true)


def test_groups_must_share_their_prompt():
    from reasonrl.rl.batch import Batch
    from reasonrl.rl.layout import shared_prefix

    rng = random.Random(0)
    a, b = sample_problem(rng, (4, 5)), sample_problem(rng, (6, 7))
    batch = Batch(problems=[a, b], responses=["a$", "b$"], proxy=torch.zeros(2), true=torch.zeros(2), group=2,
                  zero_frac=0.0)
    with pytest.raises(ValueError, match="groups of G"):
        shared_prefix(batch, "cpu", 1.0)


@pytest.mark.parametrize("shared", [True, False])
def test_loss_logprobs_are_those_sampled_from_at_temperature(monkeypatch, shared):
    """At T = 0.7 the log-probs entering the loss, and the entropy record, are those of the distribution each
    response token was drawn from (the probabilities handed to torch.multinomial)."""
    import reasonrl.rl.algorithm as algorithm

    draws, seen = [], []
    multinomial = torch.multinomial

    def recording_multinomial(probs, n, generator=None):
        out = multinomial(probs, n, generator=generator)
        draws.append((probs.clone(), out[:, 0].clone()))
        return out

    surrogate = algorithm.clipped_surrogate

    def recording_surrogate(logp, old_logp, *args):
        seen.append(logp.detach().clone())
        return surrogate(logp, old_logp, *args)

    monkeypatch.setattr(torch, "multinomial", recording_multinomial)
    monkeypatch.setattr(algorithm, "clipped_surrogate", recording_surrogate)
    record, batch, *_ = _run_step(shared, 0.5, temperature=0.7)
    (logp,) = seen
    expect_lp, expect_ent = [], []
    for i, (prob, resp) in enumerate(zip(batch.problems, batch.responses)):
        ids = encode(resp)
        col = 0 if shared else len(prob.prompt) - 1  # the column of response token 0 in the layout
        for t, tok in enumerate(ids):
            probs, drawn = draws[t]
            assert int(drawn[i]) == tok  # the recorded draw is this response's token
            p = probs[i] / probs[i].sum()
            expect_lp.append(float(p[tok].log()))
            expect_ent.append(float(-(p * p.clamp(min=1e-30).log()).sum()))
            assert abs(float(logp[i, col + t]) - expect_lp[-1]) <= TOL
    assert abs(record["rollout/entropy"] - sum(expect_ent) / len(expect_ent)) <= TOL
    # the check can tell the temperatures apart: the untempered log-probs (p_T ** T renormalised) differ
    p = draws[0][0][0] / draws[0][0][0].sum()
    untempered = p ** 0.7 / (p ** 0.7).sum()
    tok = encode(batch.responses[0])[0]
    assert abs(float(untempered[tok].log()) - float(p[tok].log())) > 100 * TOL
