import copy
import functools
import math

import pytest
import torch

from reasonrl.config import ConfigError
from reasonrl.model import ModelConfig, TinyReasoner
from reasonrl.pretrain import PhaseConfig, train_phase
from reasonrl.rl.algorithm import clipped_surrogate
from reasonrl.rl.job import make_job
from reasonrl.rl.train import train_rl
from reasonrl.rl.variants import ADVANTAGES, KL_ESTIMATORS, LOSS_AGG

R = torch.tensor([[1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.01, 0.0]])


def test_grpo_advantages_hand_built():
    raw = ADVANTAGES["dr_grpo"](R)  # the same baseline without the std
    std = ADVANTAGES["grpo"](R)
    assert raw[1].abs().max() == 0 and std[1].abs().max() == 0  # all-same group: no signal
    assert raw[2, 2].item() == pytest.approx(0.0075, abs=1e-7)
    assert std[2, 2].item() > 1.4  # a 0.01 difference blown up by the tiny std
    # row 0: mean 0.25, unbiased std 0.5, eps 1e-4
    assert std[0].tolist() == pytest.approx([0.75 / 0.5001, -0.25 / 0.5001, -0.25 / 0.5001, -0.25 / 0.5001])


def test_rloo_and_dr_grpo_hand_built():
    rloo = ADVANTAGES["rloo"](R)
    assert rloo[0].tolist() == pytest.approx([1.0, -1 / 3, -1 / 3, -1 / 3])
    assert rloo[1].abs().max() == 0
    dr = ADVANTAGES["dr_grpo"](R)
    assert dr[0].tolist() == pytest.approx([0.75, -0.25, -0.25, -0.25])
    assert ADVANTAGES["none"](R).tolist() == R.tolist()
    assert ADVANTAGES["zero"](R).tolist() == [[0.0] * 4] * 3


def test_loss_aggregations_hand_built():
    per_token = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    m = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    assert LOSS_AGG["token_mean"](per_token, m, 5).item() == pytest.approx(7 / 3)
    assert LOSS_AGG["seq_mean_token_sum"](per_token, m, 5).item() == pytest.approx(3.5)
    assert LOSS_AGG["seq_mean_token_mean"](per_token, m, 5).item() == pytest.approx(2.75)
    # Dr. GRPO: (1 + 2 + 4) / (2 sequences x max_len 5), whatever the batch's token count
    assert LOSS_AGG["dr_grpo"](per_token, m, 5).item() == pytest.approx(0.7)
    assert LOSS_AGG["dr_grpo"](per_token, torch.ones(2, 3), 5).item() == pytest.approx(2.1)


def test_kl_estimators_on_known_distributions():
    p = torch.tensor([0.5, 0.5])  # the sampling policy
    q = torch.tensor([0.25, 0.75])  # the reference
    d = q.log() - p.log()
    kl = 0.5 * math.log(2) + 0.5 * math.log(0.5 / 0.75)  # 0.143841
    assert (p * KL_ESTIMATORS["k1"](d)).sum().item() == pytest.approx(kl, abs=1e-6)
    assert (p * KL_ESTIMATORS["k3"](d)).sum().item() == pytest.approx(kl, abs=1e-6)
    k2 = 0.5 * (0.5 * math.log(0.5) ** 2 + 0.5 * math.log(1.5) ** 2)  # 0.161214
    assert (p * KL_ESTIMATORS["k2"](d)).sum().item() == pytest.approx(k2, abs=1e-6)
    assert (KL_ESTIMATORS["k3"](d) >= 0).all() and (KL_ESTIMATORS["k1"](d) < 0).any()


def test_clipped_surrogate_and_clip_fraction():
    old = torch.zeros(3, 1)
    logp = torch.log(torch.tensor([[1.5], [0.5], [1.0]]))
    loss, clipped = clipped_surrogate(logp, old, torch.tensor([1.0, -1.0, 1.0]), 0.2, 0.2)
    assert loss[:, 0].tolist() == pytest.approx([-1.2, 0.8, -1.0])
    assert clipped[:, 0].tolist() == [True, True, False]
    _, clipped_high = clipped_surrogate(logp, old, torch.tensor([1.0, -1.0, 1.0]), 0.2, 0.6)
    assert clipped_high[:, 0].tolist() == [False, True, False]  # clip-higher leaves room upwards


def test_single_iteration_equals_plain_reinforce_gradient():
    torch.manual_seed(0)
    w = torch.randn(4, 6, requires_grad=True)
    adv, m = torch.tensor([1.0, -0.5, 0.0, 2.0]), (torch.rand(4, 6) > 0.3).float()
    logp = torch.log_softmax(w, -1)
    surrogate, clipped = clipped_surrogate(logp, logp.detach(), adv, 0.2, 0.28)
    (g1,) = torch.autograd.grad(LOSS_AGG["token_mean"](surrogate, m, 6), w, retain_graph=True)
    (g2,) = torch.autograd.grad(LOSS_AGG["token_mean"](-(logp * adv[:, None]), m, 6), w)
    assert torch.equal(g1, g2) and not clipped.any()


@functools.cache
def _warm_policy():
    """A tiny policy with a little supervised training, so that some samples are right and some wrong."""
    cfg = ModelConfig(d_model=32, n_heads=2, n_layers=1)
    model = TinyReasoner(cfg, generator=torch.Generator().manual_seed(0))
    train_phase(model, PhaseConfig(steps=80, batch_size=32, lr=3e-3, warmup=5, n_range=(3, 4)), 1.0)
    return model.eval()


def _tiny_policy():
    return copy.deepcopy(_warm_policy())


def _job(**kw):
    base = dict(steps=3, B=4, G=4, n_range=[3, 4], k_max=2, eval_every=2)
    return make_job(base, kw)


@pytest.mark.parametrize("overrides", [
    {"method": "grpo"}, {"method": "rft"}, {"method": "sft"}, {"reward": "random"},
    {"reward": "true", "guard": True, "len_pen": 0.01, "overlong": 3},
    {"advantage": "rloo"}, {"advantage": "dr_grpo", "loss_agg": "seq_mean_token_sum"},
    {"num_iterations": 2, "eps_high": 0.28}, {"beta": 0.1, "kl_estimator": "k3"},
    {"beta": 0.1, "kl_in": "reward", "kl_estimator": "k1"}, {"dynamic_sampling": True, "reward": "random"},
    {"optimizer": "sgd", "lr": 0.1}, {"reward": "shuffled"}, {"loss_agg": "dr_grpo", "advantage": "dr_grpo"},
])
def test_three_steps_change_the_parameters(overrides):
    policy = _tiny_policy()
    before = [p.detach().clone() for p in policy.parameters()]
    job = _job(**overrides)
    hist = train_rl(job, policy, progress=False)
    assert len(hist["steps"]) == 3
    assert any(not torch.equal(a, b) for a, b in zip(before, policy.parameters()))
    for rec in hist["steps"]:
        assert all(math.isfinite(v) for v in rec.values())


def test_same_job_gives_identical_history_and_weights():
    job = _job(reward="random", num_iterations=2, beta=0.05)
    a, b = _tiny_policy(), _tiny_policy()
    ha, hb = train_rl(job, a, progress=False), train_rl(job, b, progress=False)
    strip = [{k: v for k, v in r.items() if k != "time/seconds"} for r in ha["steps"]]
    assert strip == [{k: v for k, v in r.items() if k != "time/seconds"} for r in hb["steps"]]
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))


def test_fooled_examples_when_proxy_disagrees_with_truth():
    hist = train_rl(_job(reward="random"), _tiny_policy(), progress=False)
    fooled = [ex for e in hist["examples"] for ex in e["fooled"]]
    assert fooled and all(ex["proxy"] > 0.9 for ex in fooled)
    assert all(ex["response"] != ex["gold"] for ex in fooled)


def test_evaluate_callback_schedule():
    calls = []
    train_rl(_job(steps=5, eval_every=2), _tiny_policy(), evaluate=lambda m: calls.append(1) or {"acc": 0.0},
             progress=False)
    assert len(calls) == 4  # steps 0, 2, 4 and the last (5)


def test_nan_loss_stops_naming_the_step(monkeypatch):
    monkeypatch.setitem(ADVANTAGES, "grpo", lambda r: torch.full_like(r, float("nan")))
    with pytest.raises(FloatingPointError, match="step 0"):
        train_rl(_job(), _tiny_policy(), progress=False)


@pytest.mark.parametrize("overrides,key", [
    ({"stpes": 10}, "stpes"), ({"G": 1}, "G"), ({"k_max": 12}, "k_max"), ({"method": "ppo"}, "method"),
    ({"reward": "orm_v2"}, "reward"), ({"kl_estimator": "k4"}, "kl_estimator"), ({"lr": -1.0}, "lr"),
    ({"method": "rft", "reward": "orm"}, "reward"), ({"optimizer": "rmsprop"}, "optimizer"),
])
def test_bad_jobs_are_rejected_naming_the_key(overrides, key):
    with pytest.raises(ConfigError, match=f"run.{key}"):
        make_job({}, overrides, "run")


def test_unknown_key_lists_the_valid_ones():
    with pytest.raises(ConfigError, match="valid keys are .*num_iterations"):
        make_job({}, {"iterations": 2})


def test_verifier_reward_needs_an_existing_verifier():
    with pytest.raises(ConfigError, match="verifier 'orm' is not defined"):
        make_job({}, {"reward": "orm"}, verifiers=["prm_full"])
    assert make_job({}, {"reward": "orm"}, verifiers=["orm"]).verifier == "orm"


# ----------------------------------------------------------------------------- mechanisms of the studies


def test_kl_in_the_reward_is_subtracted_after_the_advantage():
    from reasonrl.rl.algorithm import KLPenalty
    from reasonrl.rl.batch import Batch
    from reasonrl.rl.variants import group_weights

    job = make_job({}, {"beta": 0.5, "kl_in": "reward", "kl_estimator": "k1"})
    kl = KLPenalty.of(job)
    assert (kl.where, kl.needs_reference) == ("reward", True)
    # per token k1 = log pi - log pi_ref: log(0.5 / 0.25) = log 2 on one token, times beta 0.5
    pen = kl.per_token(torch.tensor([[math.log(0.5)]]), torch.tensor([[math.log(0.25)]]))
    assert pen.item() == pytest.approx(0.5 * math.log(2))
    loss_term = kl.in_loss(torch.zeros(1, 1), torch.zeros(1, 1), lambda x, m: 1 / 0, torch.ones(1, 1))
    assert loss_term.item() == 0.0  # in the reward, the loss gets nothing (and never aggregates)
    assert KLPenalty.of(make_job({}, {"beta": 0.0, "kl_in": "reward"})).where == "none"
    assert KLPenalty.of(make_job({}, {"beta": 0.1, "kl_in": "loss"})).where == "loss"
    batch = Batch(problems=[], responses=[], proxy=torch.zeros(8), true=torch.zeros(8), group=4, zero_frac=0.0)
    r = torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0])
    kl_seq = torch.tensor([0.01, 0.02, 0.03, 0.04, 0.01, 0.02, 0.03, 0.04])
    w = group_weights(r, batch, kl_seq, job.advantage)
    # group 1: the std-normalised task advantage (mean 0.25, std 0.5 + 1e-4), then minus the penalty as it is
    assert w[:4].tolist() == pytest.approx([0.75 / 0.5001 - 0.01, -0.25 / 0.5001 - 0.02, -0.25 / 0.5001 - 0.03,
                                            -0.25 / 0.5001 - 0.04])
    # group 2, all correct: no std blows the penalty up; a fifth of it stays a fifth
    assert w[4:].tolist() == pytest.approx([-0.01, -0.02, -0.03, -0.04])
    fifth = group_weights(r, batch, kl_seq / 5, job.advantage)
    assert fifth[4:].tolist() == pytest.approx([-0.002, -0.004, -0.006, -0.008])


def test_optimizers_sgd_is_plain_and_adam_is_adamw():
    from reasonrl.rl.variants import OPTIMIZERS

    for name, expect in (("sgd", 1.0 - 0.1 * 2.0), ("adam", 1.0 - 0.1)):  # Adam's first step: lr * sign(grad)
        p = torch.nn.Parameter(torch.tensor([1.0]))
        opt = OPTIMIZERS[name]([p], 0.1)
        p.grad = torch.tensor([2.0])
        opt.step()
        assert p.item() == pytest.approx(expect, abs=1e-6), name
    assert isinstance(OPTIMIZERS["adam"]([p], 0.1), torch.optim.AdamW)


def test_shuffled_reward_permutes_the_true_rewards_with_the_run_generator():
    from types import SimpleNamespace

    from reasonrl.rl.variants import REWARDS
    from reasonrl.tasks.hop import sample_problem

    rng = __import__("random").Random(0)
    probs = [sample_problem(rng, (4, 6)) for _ in range(6)]
    resps = [p.trace + "|" + p.answer + "$" if i in (0, 1, 4) else "a$" for i, p in enumerate(probs)]
    true = REWARDS["true"](probs, resps, None)
    assert true.tolist() == [1.0, 1.0, 0.0, 0.0, 1.0, 0.0]
    ctx = SimpleNamespace(reward_gen=torch.Generator().manual_seed(0))
    perm = torch.randperm(6, generator=torch.Generator().manual_seed(0))
    shuffled = REWARDS["shuffled"](probs, resps, ctx)
    assert shuffled.tolist() == true[perm].tolist() == [0.0, 0.0, 0.0, 1.0, 1.0, 1.0]
    again = REWARDS["shuffled"](probs, resps, SimpleNamespace(reward_gen=torch.Generator().manual_seed(0)))
    assert again.tolist() == shuffled.tolist()


def test_verified_reward_checks_every_trace_step():
    from reasonrl.rl.context import Context
    from reasonrl.rl.variants import REWARDS
    from reasonrl.tasks.hop import sample_problem

    rng = __import__("random").Random(0)
    probs = [sample_problem(rng, (4, 6)) for _ in range(4)]
    ctx = Context.__new__(Context)  # the reward reads only the context's check, no run state
    wrong_step = [p.trace[:-1] + ("a" if p.trace[-1] != "a" else "b") for p in probs]
    resps = [probs[0].trace + "|" + probs[0].answer + "$",  # right trace, right answer
             wrong_step[1] + "|" + probs[1].answer + "$",  # a wrong last step, the right answer
             "|" + probs[2].answer + "$",  # the right answer, no trace
             probs[3].trace + "|" + ("a" if probs[3].answer != "a" else "b") + "$"]  # right trace, wrong answer
    assert REWARDS["true"](probs, resps, None).tolist() == [1.0, 1.0, 1.0, 0.0]
    assert REWARDS["verified"](probs, resps, ctx).tolist() == [1.0, 0.0, 0.0, 0.0]


def test_zero_advantage_moves_nothing_without_kl():
    policy = _tiny_policy()
    before = [p.detach().clone() for p in policy.parameters()]
    hist = train_rl(_job(advantage="zero"), policy, progress=False)
    assert all(torch.equal(a, b) for a, b in zip(before, policy.parameters()))
    assert all(r["losses/pg"] == 0 for r in hist["steps"])


def _scripted_sampler(rounds):
    """A sample_responses stand-in: round i answers problem j right when rounds[i][j][g] is 1."""
    calls = iter(rounds)

    def sample_responses(policy, probs, G, temperature, gen, shared=True, keep=None):
        script = next(calls)
        return [[p.trace + "|" + p.answer + "$" if ok else "a$" for ok in s] for p, s in zip(probs, script)]

    return sample_responses


def test_dynamic_sampling_records_the_unfiltered_samples_and_keeps_the_budget(monkeypatch):
    import reasonrl.rl.algorithm as algorithm

    # round 1: group A mixed, B all right; round 2: C all right, D mixed -> trains on A and D
    monkeypatch.setattr(algorithm, "sample_responses", _scripted_sampler([[[1, 0], [1, 1]], [[1, 1], [0, 1]]]))
    job = make_job({}, {"steps": 2, "B": 2, "G": 2, "n_range": [3, 4], "k_max": 2, "dynamic_sampling": True})
    hist = train_rl(job, _tiny_policy(), progress=False)
    assert len(hist["steps"]) == 1  # the 2 x 2 x 2 = 8 rollouts of the budget went into step 1
    rec = hist["steps"][0]
    assert rec["rollout/count"] == 8
    assert rec["reward/true"] == pytest.approx(6 / 8)  # all 8 samples
    assert rec["filtered/true"] == pytest.approx(2 / 4)  # A and D
    assert rec["rollout/zero_var_frac"] == pytest.approx(2 / 4)  # B and C
    assert rec["filtered/zero_var_frac"] == 0.0
    # the budget also caps the resampling: with 4 rollouts in all, round 2 is not drawn; only A is trained on
    monkeypatch.setattr(algorithm, "sample_responses", _scripted_sampler([[[1, 0], [0, 0]]]))
    hist = train_rl(make_job(job.to_dict(), {"steps": 1}), _tiny_policy(), progress=False)
    assert hist["steps"][0]["rollout/count"] == 4 and hist["steps"][0]["filtered/true"] == 0.5
    assert hist["steps"][0]["reward/true"] == 0.25


@pytest.mark.parametrize("clip", [1e-3, 3e-3])
def test_the_update_clips_the_gradient_to_the_jobs_grad_clip(clip):
    """One plain SGD step at lr 1 moves the weights by exactly the clipped gradient: `grad_clip` in norm."""
    policy = _tiny_policy()
    before = [p.detach().clone() for p in policy.parameters()]
    hist = train_rl(_job(method="sft", optimizer="sgd", lr=1.0, steps=1, grad_clip=clip), policy, progress=False)
    moved = torch.sqrt(sum(((p.detach() - b) ** 2).sum() for p, b in zip(policy.parameters(), before)))
    assert hist["steps"][0]["losses/grad_norm"] > 10 * clip  # the norm recorded is the one before the clip
    assert moved.item() == pytest.approx(clip, rel=1e-4)
    with pytest.raises(ConfigError, match="grad_clip: must be positive"):
        make_job({}, {"grad_clip": 0.0})


def test_every_method_collects_its_rows_through_a_known_collector():
    from reasonrl.rl.algorithm import COLLECT
    from reasonrl.rl.variants import METHODS

    assert {m.rollouts for m in METHODS.values()} <= set(COLLECT)
    assert [name for name, m in METHODS.items() if m.rollouts == "gold"] == ["sft"]
