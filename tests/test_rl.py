import copy
import functools
import math

import pytest
import torch

from reasonrl.config import ConfigError
from reasonrl.model import ModelConfig, TinyReasoner
from reasonrl.pretrain import PhaseConfig, train_phase
from reasonrl.rl import ADVANTAGES, KL_ESTIMATORS, LOSS_AGG, make_job, train_rl
from reasonrl.rl.train import clipped_surrogate

R = torch.tensor([[1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.01, 0.0]])


def test_grpo_advantages_hand_built():
    raw = ADVANTAGES["grpo"](R, std_norm=False)
    std = ADVANTAGES["grpo"](R, std_norm=True)
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


def test_loss_aggregations_hand_built():
    per_token = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    m = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    assert LOSS_AGG["token_mean"](per_token, m).item() == pytest.approx(7 / 3)
    assert LOSS_AGG["seq_mean_token_sum"](per_token, m).item() == pytest.approx(3.5)
    assert LOSS_AGG["seq_mean_token_mean"](per_token, m).item() == pytest.approx(2.75)


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
    (g1,) = torch.autograd.grad(LOSS_AGG["token_mean"](surrogate, m), w, retain_graph=True)
    (g2,) = torch.autograd.grad(LOSS_AGG["token_mean"](-(logp * adv[:, None]), m), w)
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
    monkeypatch.setitem(ADVANTAGES, "grpo", lambda r, std_norm=True: torch.full_like(r, float("nan")))
    with pytest.raises(FloatingPointError, match="step 0"):
        train_rl(_job(), _tiny_policy(), progress=False)


@pytest.mark.parametrize("overrides,key", [
    ({"stpes": 10}, "stpes"), ({"G": 1}, "G"), ({"k_max": 12}, "k_max"), ({"method": "ppo"}, "method"),
    ({"reward": "orm_v2"}, "reward"), ({"kl_estimator": "k4"}, "kl_estimator"), ({"lr": -1.0}, "lr"),
    ({"method": "rft", "reward": "orm"}, "reward"),
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
