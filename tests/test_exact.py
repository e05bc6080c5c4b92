"""Tests of the exact toy (reasonrl/exact.py), its study (reasonrl/studies/exact.py) and its two stages."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from reasonrl import exact as E
from reasonrl import exact_gradients as G
from reasonrl.config import ConfigError, from_dict
from reasonrl.io import read_json, write_json
from reasonrl.studies import exact as X
from reasonrl.studies import exact_report

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def toy() -> E.Toy:
    return X.build_toy(X.Config())


def _away_from_ref(toy: E.Toy, seed: int = 5, scale: float = 0.3) -> E.ToyPolicy:
    # a policy that differs from the reference, so the KL terms have non-zero gradients
    policy = E.clone_policy(toy.ref).requires_grad_(True)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in policy.parameters():
            p.add_(scale * torch.randn(p.shape, generator=gen, dtype=p.dtype))
    return policy


# ---------------------------------------------------------------------------------------------------- world

def test_enumeration_is_complete_and_ordered():
    w = E.world()
    assert (w.n, w.p) == (19531, 3906)
    assert [E.show(i) for i in (0, 1, 5, 6, 7, 3906, 19530)] == [
        "<empty>", "so", "tapestry", "so so", "so and", "so so so so so so", " ".join(["tapestry"] * 6)]
    # every response is distinct, and each decision count is len + 1 except at the maximum length
    assert len({tuple(r) for r in w.seqs.tolist()}) == w.n
    assert torch.equal(w.dec_mask.sum(1), torch.where(w.lengths < 6, w.lengths + 1, w.lengths))
    # the child of prefix s by token v is the response s followed by v
    s = torch.arange(w.p)
    for v in range(E.V):
        c = w.child[:, v]
        assert torch.equal(w.lengths[c], w.lengths[s] + 1)
        assert torch.equal(w.seqs[c, w.lengths[s]], torch.full((w.p,), v))


def test_distributions_normalise_and_paths_agree(toy):
    assert toy.data_lp.exp().sum().item() == pytest.approx(1.0, abs=1e-12)
    assert toy.ref_lp.exp().sum().item() == pytest.approx(1.0, abs=1e-12)
    assert toy.sft_kl < 1e-3  # the reference fits its data
    idx = torch.tensor([0, 1, 17, 3905, 3906, 19530])
    assert torch.allclose(E.sequence_logprob(toy.ref, idx), toy.ref_lp[idx], atol=1e-12)


def test_sampling_is_seeded_and_matches_exact_lengths(toy):
    a = E.sample(toy.ref, 20000, torch.Generator().manual_seed(1))
    b = E.sample(toy.ref, 20000, torch.Generator().manual_seed(1))
    assert torch.equal(a, b)
    w = E.world()
    emp = torch.bincount(w.lengths[a], minlength=7).double() / len(a)
    exact = torch.zeros(7, dtype=torch.float64).index_add_(0, w.lengths, toy.ref_lp.exp())
    # binomial standard error at n = 20000 is at most 0.0036; allow 4 of them
    assert (emp - exact).abs().max().item() < 0.015


def test_reward_model_inherits_the_crowds_biases(toy):
    wts = dict(zip(E.TOKENS, toy.rm_weights.tolist()))
    # gold charges 0.25 per filler token; the crowd's length bonus makes the reward model pay for them
    assert wts["so"] > 0 and wts["and"] > 0
    assert min(wts["delve"], wts["tapestry"]) > max(wts["so"], wts["and"])  # fancy is over-rewarded
    assert wts["fact"] > max(wts["delve"], wts["tapestry"])


# ---------------------------------------------------------------------------------------------------- estimators

def test_advantages_by_hand():
    r = torch.tensor([1.0, 2.0, 3.0, 6.0], dtype=torch.float64)
    assert G.advantages(r, "none").tolist() == [1.0, 2.0, 3.0, 6.0]
    assert G.advantages(r, "mean").tolist() == [-2.0, -1.0, 0.0, 3.0]
    assert torch.allclose(G.advantages(r, "rloo"), torch.tensor([-8 / 3, -4 / 3, 0.0, 4.0], dtype=torch.float64))
    std = math.sqrt((4 + 1 + 0 + 9) / 3)  # unbiased group standard deviation
    assert torch.allclose(G.advantages(r, "grpo"),
                          torch.tensor([-2.0, -1.0, 0.0, 3.0], dtype=torch.float64) / (std + 1e-6))


def test_exact_gradient_matches_finite_differences(toy):
    policy = _away_from_ref(toy)
    beta = 0.7
    grad, _ = G.exact_gradient(policy, toy, beta)
    params = list(policy.parameters())
    offsets = torch.tensor([0] + [p.numel() for p in params]).cumsum(0)
    eps = 1e-6
    for k, (pi, flat) in enumerate([(0, 3), (1, 10), (2, 100), (4, 7), (5, 2)]):
        p = params[pi]
        with torch.no_grad():
            p.view(-1)[flat] += eps
            up = E.exact_objective(E.all_logprobs(policy), toy, beta).item()
            p.view(-1)[flat] -= 2 * eps
            down = E.exact_objective(E.all_logprobs(policy), toy, beta).item()
            p.view(-1)[flat] += eps
        fd = (up - down) / (2 * eps)
        auto = grad[offsets[pi] + flat].item()
        # float64 central differences: truncation O(eps^2) and rounding ~1e-16 / eps, both far below 1e-7
        assert auto == pytest.approx(fd, abs=1e-7, rel=1e-5), f"case {k}"


def test_mean_baseline_is_rloo_shrunk_by_b_minus_1_over_b(toy):
    policy, batch = _away_from_ref(toy), 8
    g_mean = G.sampled_gradient(policy, toy, 1.0, batch, torch.Generator().manual_seed(2), "mean")
    g_rloo = G.sampled_gradient(policy, toy, 1.0, batch, torch.Generator().manual_seed(2), "rloo")
    assert torch.allclose(g_mean, g_rloo * (batch - 1) / batch, atol=1e-12)


def _bias_statistic(policy, toy, beta, estimator, batch, trials, seed):
    # |mean - exact|^2 divided by its expectation under unbiasedness, tr(Cov) / trials (estimated)
    g_true, _ = G.exact_gradient(policy, toy, beta)
    gen = torch.Generator().manual_seed(seed)
    gs = torch.stack([G.sampled_gradient(policy, toy, beta, batch, gen, estimator) for _ in range(trials)])
    err = (gs.mean(0) - g_true).pow(2).sum()
    expected = gs.var(0).sum() / trials
    ratio = (gs.mean(0) @ g_true / g_true.pow(2).sum()).item()  # projection of the mean on the exact gradient
    return (err / expected).item(), ratio


def test_rloo_estimator_is_unbiased(toy):
    """The mean of many RLOO estimates approaches the exact gradient.

    For an unbiased estimator E|ḡ − ∇J|² = tr(Cov)/T, so the statistic |ḡ − ∇J|² / (tr(Cov)/T) has
    mean 1 whatever the dimension (measured: 0.55 to 1.1 over seeds at B = 32); we allow 4. A bias b adds
    T·|b|² / tr(Cov) to it, so the test has power against biases of roughly 10% of |∇J| and more:
    the negative control, the batch-mean baseline at B = 2 (expectation exactly ∇J / 2), scores ~19.
    The projection of ḡ on ∇J must also be 1 within 0.1: with relative MSE 0.71 per estimate at B = 32,
    T = 300 gives at most sqrt(0.71 / 300) ≈ 0.05 of error along ∇J (one standard error).
    """
    policy = _away_from_ref(toy)
    stat, ratio = _bias_statistic(policy, toy, 1.0, "rloo", batch=32, trials=300, seed=7)
    assert stat < 4.0 and abs(ratio - 1) < 0.1, (stat, ratio)
    stat2, ratio2 = _bias_statistic(policy, toy, 1.0, "rloo", batch=2, trials=300, seed=8)
    assert stat2 < 4.0, (stat2, ratio2)
    stat_mean, ratio_mean = _bias_statistic(policy, toy, 1.0, "mean", batch=2, trials=300, seed=8)
    assert stat_mean > 10.0 and abs(ratio_mean - 0.5) < 0.1, (stat_mean, ratio_mean)


def test_k3_in_loss_expected_gradient_is_the_per_state_reverse_kl(toy):
    # E_y~pi[∇ sum_t k3_t(y)] by enumeration equals ∇ sum_s stopgrad(d(s)) KL(pi_ref(.|s) || pi(.|s))
    policy, beta = _away_from_ref(toy), 0.5
    ref_tok = E.gather_tokens(toy.ref_table)
    policy.zero_grad()
    E.expected_k3_loss(E.all_token_logprobs(policy), ref_tok).backward()
    enumerated = G.flat_grad(policy)
    policy.zero_grad()
    (-X.k3_expected_surrogate(policy, toy, beta)).backward()
    surrogate_kl = G.flat_grad(policy)
    policy.zero_grad()
    (-(E.all_logprobs(policy).exp() * toy.reward).sum()).backward()
    reward_only = G.flat_grad(policy)
    # -∇surrogate = -∇E[r] + beta ∇(KL part), so the KL part's gradient is the difference over beta
    assert enumerated.abs().max() > 1e-3  # away from the reference the KL gradient is not trivially 0
    assert torch.allclose(enumerated, (surrogate_kl - reward_only) / beta, atol=1e-10)


def test_exact_kl_value_and_gradient(toy):
    policy = _away_from_ref(toy)
    ref_tok = E.gather_tokens(toy.ref_table)
    kl = E.exact_kl(E.all_token_logprobs(policy), ref_tok)
    with torch.no_grad():
        lp = E.all_logprobs(policy)
    assert kl.item() == pytest.approx(E.kl(lp, toy.ref_lp), abs=1e-12) and kl.item() > 0.05
    # k3 is unbiased: its expectation under pi is the same KL
    assert E.expected_k3_loss(E.all_token_logprobs(policy), ref_tok).item() == pytest.approx(kl.item(), rel=1e-10)
    params = list(policy.parameters())
    grad = torch.autograd.grad(kl, params)
    p, flat, eps = params[2], 17, 1e-6
    with torch.no_grad():
        p.view(-1)[flat] += eps
        up = E.exact_kl(E.all_token_logprobs(policy), ref_tok).item()
        p.view(-1)[flat] -= 2 * eps
        down = E.exact_kl(E.all_token_logprobs(policy), ref_tok).item()
        p.view(-1)[flat] += eps
    assert grad[2].view(-1)[flat].item() == pytest.approx((up - down) / (2 * eps), abs=1e-8)
    # the expected gradient of a k3 loss is not the gradient of the KL: it ignores how pi(y) itself moves
    k3_grad = torch.autograd.grad(E.expected_k3_loss(E.all_token_logprobs(policy), ref_tok), params)
    flat_kl = torch.cat([g.reshape(-1) for g in grad])
    assert torch.cat([g.reshape(-1) for g in k3_grad]).sub(flat_kl).norm() > 0.1 * flat_kl.norm()


def test_exact_kl_on_three_sequences_by_hand():
    # sequences "a", "b", "ab": pi = (0.5, 0.3, 0.2), pi_ref = (0.25, 0.25, 0.5), per-token factors below
    tok = torch.log(torch.tensor([[0.5, 1.0], [0.3, 1.0], [0.5, 0.4]], dtype=torch.float64))
    ref = torch.log(torch.tensor([[0.25, 1.0], [0.25, 1.0], [0.625, 0.8]], dtype=torch.float64))
    want = 0.5 * math.log(2) + 0.3 * math.log(1.2) + 0.2 * math.log(0.4)
    assert E.exact_kl(tok, ref).item() == pytest.approx(want, abs=1e-12)


# ---------------------------------------------------------------------------------------------------- optimum

def test_optimum_beats_reference_and_its_perturbations(toy):
    gen = torch.Generator().manual_seed(3)
    for beta in (3.0, 1.0, 0.3):
        opt = E.optimal_logprobs(toy.ref_lp, toy.reward, beta)
        j_opt = E.exact_objective(opt, toy, beta).item()
        # closed form: J(pi*) = beta log E_ref[exp(r / beta)]
        assert j_opt == pytest.approx(beta * torch.logsumexp(toy.ref_lp + toy.reward / beta, 0).item(), abs=1e-9)
        assert j_opt > E.exact_objective(toy.ref_lp, toy, beta).item()
        for _ in range(10):
            other = torch.log_softmax(opt + 0.1 * torch.randn(opt.shape, generator=gen, dtype=opt.dtype), 0)
            j = E.exact_objective(other, toy, beta).item()
            assert j < j_opt
            # and the gap is exactly beta KL(pi || pi*)
            assert j_opt - j == pytest.approx(beta * E.kl(other, opt), rel=1e-8)


def test_rloo_with_kl_in_reward_reaches_the_optimum(toy):
    cfg = X.Config()
    opt = E.optimal_logprobs(toy.ref_lp, toy.reward, 1.0)
    policy = E.clone_policy(toy.ref).requires_grad_(True)
    X.rl_train(policy, toy, 1.0, 400, estimator="rloo", kl_mode="reward_k1", batch=cfg.batch, lr=cfg.lr,
               gen=torch.Generator().manual_seed(cfg.train_seed))
    with torch.no_grad():
        assert E.kl(E.all_logprobs(policy), opt) < 0.01


# ---------------------------------------------------------------------------------------------------- config, stages

def test_config_rejects_unknown_keys_and_bad_values():
    with pytest.raises(ConfigError, match=r"exact\.stpes"):
        from_dict(X.Config, {"stpes": 10}, "exact")
    with pytest.raises(ConfigError, match=r"exact\.table_steps\[0\]"):
        from_dict(X.Config, {"steps": 100, "table_steps": [150]}, "exact")
    with pytest.raises(ConfigError, match=r"exact\.train_estimators\[1\]"):
        from_dict(X.Config, {"train_estimators": ["rloo", "ppo"]}, "exact")
    with pytest.raises(ConfigError, match=r"exact\.batch"):
        from_dict(X.Config, {"batch": 1}, "exact")
    assert from_dict(X.Config, {"lr": "3e-3"}, "exact").lr == 3e-3


TINY = {"sft_steps": 30, "bt_pairs": 300, "grad_trials": 4, "grad_batch": 8, "batch": 16, "steps": 20,
        "log_every": 10, "table_steps": [10, 20], "fixed_point_steps": 20, "sweep_betas": [1.0, 0.3],
        "frontier_betas": [1.0, 0.5], "claim_seeds": 3}


def test_the_claims_seed_interval_by_hand():
    # tails 0.01, 0.02, 0.03: mean 0.02, sd 0.01, its t interval 0.02 ± 4.3027 x 0.01 / sqrt(3) on 2 df
    s = X.seed_kl([0.01, 0.02, 0.03], [3, 4, 5])
    half = 4.302652729911275 * 0.01 / 3 ** 0.5
    assert s.seeds == [3, 4, 5] and s.mean == pytest.approx(0.02)
    assert (s.ci_lo, s.ci_hi) == (pytest.approx(0.02 - half), pytest.approx(0.02 + half))


def test_the_claim_averages_each_seeds_last_quarter_against_an_exact_tolerance(toy):
    cfg = from_dict(X.Config, TINY | {"steps": 40}, "exact")  # logged at 10, 20, 30, 40: the last quarter is 40
    train = X.Trainer(toy, cfg, toy.ref_lp, lambda _msg: None)
    c = X.claim(toy, cfg, train)
    first = train("rloo", "reward_k1", cfg.beta)[0]  # the training demonstration's run is the claim's first seed
    assert c.from_step == 30 and c.estimators["rloo"].tail_kl[0] == first.kl_opt[-1]
    assert c.estimators["rloo"].seeds == [cfg.train_seed, cfg.train_seed + 1, cfg.train_seed + 2]
    assert len(set(c.estimators["rloo"].tail_kl)) == 3  # each seed samples its own batches
    opt = E.optimal_logprobs(toy.ref_lp, toy.reward, cfg.beta)
    assert c.tolerance == pytest.approx(E.kl(E.optimal_logprobs(toy.ref_lp, toy.reward, 1.1 * cfg.beta), opt))
    assert 0 < c.tolerance < E.kl(toy.ref_lp, opt)  # closer to pi* than the reference is


def test_gradient_quality_measures_and_their_intervals_by_hand():
    # three estimates against the exact gradient (2, 0), |∇J|² = 4: cosines 1, 0, 1/sqrt(2); squared errors
    # 1, 5, 2 (relative 1/4, 5/4, 1/2); components along ∇J <g, ∇J> / 4 = 1/2, 0, 1/2
    gs = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype=torch.float64)
    q = X.quality_of(gs, torch.tensor([2.0, 0.0], dtype=torch.float64))
    t = 4.302652729911275  # the 0.975 quantile of t with 2 df; each interval: mean ± t sd / sqrt(3)
    for got, ci, xs in ((q.cosine, q.cosine_ci, [1, 0, 0.5 ** 0.5]), (q.rel_mse, q.rel_mse_ci, [0.25, 1.25, 0.5]),
                        (q.along, q.along_ci, [0.5, 0, 0.5])):
        half = t * float(np.std(xs, ddof=1)) / 3 ** 0.5
        assert got == pytest.approx(sum(xs) / 3) and ci == pytest.approx([sum(xs) / 3 - half, sum(xs) / 3 + half])
    assert (q.rel_mse, q.along) == (pytest.approx(2 / 3), pytest.approx(1 / 3))


def test_results_round_trip_and_the_report_writes_its_outputs(tmp_path):
    cfg = from_dict(X.Config, TINY, "exact")
    res = X.run(cfg)
    write_json(tmp_path / X.RESULTS, dataclasses.asdict(res))
    assert exact_report.load_results(tmp_path / X.RESULTS) == res  # every nested dataclass comes back
    exact_report.report(cfg, tmp_path)
    for path in exact_report.outputs(cfg):
        assert (tmp_path / path).stat().st_size > 0, path
    written = {p.name for p in (tmp_path / X.OUT).iterdir()}
    assert written == {Path(p).name for p in exact_report.outputs(cfg)} | {"results.json"}
    for line in (tmp_path / X.OUT / "gradient_quality.md").read_text().splitlines():
        if line.startswith("| estimator"):  # a pipe inside a cell would split it: four columns, five pipes
            assert line.count("|") == 5, line
    man = read_json(tmp_path / "reports/exact/manifest.json")
    assert [f["file"] for f in man["figures"]] == [f"exact/{n}.png" for n in X.FIGURES]
    gold = next(r.gold for r in res.sweep.rows if r.policy == "RL" and r.beta == 0.3)
    assert f"β=0.3 {gold:.3g}" in man["figures"][2]["caption"]
    metrics = X.headline_metrics(res)
    assert metrics["sweep_gold_beta0p3_rl"] == gold
    assert metrics["final_kl_opt_rloo"] == res.training.curves["rloo"].kl_opt[-1]
    assert metrics["kl_placement_kl_opt_k3_fixed_point"] == res.kl_placement.rows[1].kl_opt


@pytest.mark.slow
def test_stages_run_on_tiny_params(tmp_path):
    (tmp_path / "params.yaml").write_text(json.dumps({"exact": TINY}))  # JSON is YAML
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    for stage in ("exact", "report_exact"):
        subprocess.run([sys.executable, str(ROOT / f"stages/{stage}.py")], check=True, cwd=tmp_path, env=env)
    metrics = json.loads((tmp_path / X.METRICS).read_text())
    assert {"grad_cosine_rloo", "final_kl_opt_rloo", "sweep_gold_beta0p3_rl"} <= set(metrics)
    cfg = from_dict(X.Config, TINY, "exact")
    assert all((tmp_path / p).stat().st_size > 0 for p in exact_report.outputs(cfg))


def test_params_and_dvc_stages_match_the_defaults_and_the_report():
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    cfg = X.load_config(params)
    assert cfg == X.Config()
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    assert stages["exact"]["params"] == ["threads", "device", "numerics", "exact"]
    files = {key: {next(iter(o)) if isinstance(o, dict) else o for o in stages["report_exact"].get(key, [])}
             for key in ("deps", "outs")}
    assert files["outs"] == set(exact_report.outputs(cfg))
    assert set(exact_report.inputs(cfg)) <= files["deps"]
    exact_outs = {next(iter(o)) for key in ("outs", "metrics") for o in stages["exact"].get(key, [])}
    assert exact_outs == {X.RESULTS, X.METRICS, "reports/timing/exact.json"}


def test_the_exact_claim_holds_only_where_the_whole_seed_interval_is_under_the_tolerance():
    from reasonrl.studies.claims import exact_claim

    m = {"kl_tolerance": 0.004, "tolerance_beta": 0.1, "claim_seeds": 10, "tail_kl_opt_none": 0.003,
         "tail_kl_opt_none_hi": 0.005, "tail_kl_opt_rloo": 0.002, "tail_kl_opt_rloo_hi": 0.0039,
         "final_kl_opt_none": 0.001}  # the last step alone would pass `none`: the claim does not read it
    result, verdict, why = exact_claim(m)
    assert verdict == "holds for rloo" and why.endswith("a β 10% larger; reached by rloo")
    assert result == ("mean KL(π‖π*) over the last quarter, 10 seeds [95% CI upper]: none 0.003 [0.005], "
                      "rloo 0.002 [0.0039]")
    assert "under 0.004" in why and "10 sampling seeds" in why
    # the mean under the tolerance but the interval across it: not held
    assert exact_claim(m | {"tail_kl_opt_rloo_hi": 0.0041})[1:] == ("does not hold", why.replace(
        "reached by rloo", "reached by no estimator"))
    every = exact_claim(m | {"tail_kl_opt_none_hi": 0.001})  # every estimator reached it: "holds" alone
    assert every[1] == "holds" and every[2].endswith("reached by plain REINFORCE, rloo")
