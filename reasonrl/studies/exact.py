"""Study `exact`: the four demonstrations on the enumerable toy (reasonrl.exact), each against exact numbers.

a. `gradient_quality`: sampled policy-gradient estimators against the exact gradient at the reference;
b. `training`: REINFORCE with the KL in the reward, exact J and KL(pi || pi*) along the way;
c. `beta_sweep`: the trained policy and the analytic optimum at several beta (over-optimisation);
d. `kl_placement`: KL in the reward (k1) or in the loss (k3), against pi* and the k3 fixed point.

Stage `exact` runs them (`run`), writing `Results` to RESULTS and `headline_metrics` to METRICS; stage
`report_exact` draws figures, tables and the index's manifest from RESULTS (reasonrl.studies.exact_report).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from scipy import stats
from torch import nn

from ..config import check, from_dict
from ..exact import (
    DTYPE,
    END,
    FACT,
    FANCY,
    TOKENS,
    Toy,
    ToyPolicy,
    all_logprobs,
    clone_policy,
    exact_objective,
    gather_tokens,
    kl,
    log_table,
    make_toy,
    optimal_logprobs,
    sample,
    show,
    world,
)
from ..exact_gradients import BASELINES, KL_MODES, exact_gradient, flat_grad, sampled_gradient, surrogate_loss
from .exact_results import (
    Claim,
    Curve,
    FrontierPoint,
    GradientQuality,
    KLPlacement,
    Likely,
    Measured,
    PlacementRow,
    Quality,
    SeedKL,
    Stats,
    Sweep,
    SweepRow,
    Training,
    WorldSummary,
)

SECTION = "exact"
OUT = "reports/exact"
RESULTS = f"{OUT}/results.json"
METRICS = "reports/metrics/exact.json"
FIGURES = ("gradient_quality", "training", "beta_sweep", "kl_placement")  # a figure and a table each
TABLES = ("world", *FIGURES)
CI = 0.95  # the gradient measures' intervals over the trials


@dataclass
class Config:
    """The `exact:` section of params.yaml."""
    world_seed: int = 0  # policy initialisation, crowd pair sampling and labels
    hidden: int = 64  # width of the policy MLP
    sft_steps: int = 300  # full-batch Adam steps fitting the reference to the data distribution
    sft_lr: float = 0.01
    bt_pairs: int = 4000  # crowd comparisons used to fit the reward model
    crowd_length_bonus: float = 0.5  # labellers' extra utility per token
    crowd_fancy_bonus: float = 0.5  # labellers' extra utility per fancy token
    beta: float = 1.0  # KL coefficient of demonstrations a, b and d
    grad_seed: int = 11
    grad_trials: int = 200
    grad_batch: int = 32
    grad_estimators: list[str] = field(default_factory=lambda: list(BASELINES))
    train_seed: int = 3
    batch: int = 128
    lr: float = 1.0e-3
    steps: int = 400
    log_every: int = 25
    table_steps: list[int] = field(default_factory=lambda: [25, 50, 100, 200, 400])
    train_estimators: list[str] = field(default_factory=lambda: ["none", "rloo", "grpo"])
    claim_seeds: int = 10  # b: sampling seeds per estimator (train_seed + 0, 1, ...) the claim is judged over
    tolerance_beta: float = 0.1  # b: the claim's tolerance is KL(pi*_{beta (1 + this)} || pi*_beta)
    sweep_betas: list[float] = field(default_factory=lambda: [3.0, 1.0, 0.3])
    sweep_estimator: str = "rloo"
    frontier_betas: list[float] = field(  # analytic optimum only (free): the reward/gold-vs-KL frontier
        default_factory=lambda: [round(10 ** (1 - i / 20), 4) for i in range(41)])
    kl_estimators: list[str] = field(default_factory=lambda: ["rloo", "grpo"])  # KL-placement comparison
    fixed_point_steps: int = 1500  # full-batch Adam steps to the k3-in-loss fixed point
    fixed_point_lr: float = 0.01

    def __post_init__(self) -> None:
        for key in ("hidden", "sft_steps", "bt_pairs", "grad_trials", "steps", "log_every", "fixed_point_steps",
                    "sft_lr", "lr", "beta", "fixed_point_lr", "tolerance_beta"):
            check(getattr(self, key) > 0, key, "must be positive")
        for key in ("grad_batch", "batch"):
            check(getattr(self, key) >= 2, key, "must be at least 2 (leave-one-out needs a partner)")
        for key in ("crowd_length_bonus", "crowd_fancy_bonus"):
            check(math.isfinite(getattr(self, key)), key, "must be finite")
        check(self.steps % self.log_every == 0, "steps", "must be a multiple of log_every")
        check(self.claim_seeds >= 2, "claim_seeds", "must be at least 2 (an interval over seeds needs two)")
        check(self.steps >= 4, "steps", "must be at least 4: the claim averages the logged steps of the last quarter")
        for i, s in enumerate(self.table_steps):
            check(0 < s <= self.steps and s % self.log_every == 0, f"table_steps[{i}]",
                  f"{s} must be a multiple of log_every in (0, steps]")
        names = list(BASELINES)
        for key in ("grad_estimators", "train_estimators", "kl_estimators"):
            check(len(getattr(self, key)) > 0, key, "must not be empty")
            for i, name in enumerate(getattr(self, key)):
                check(name in BASELINES, f"{key}[{i}]", f"{name!r} is not one of {names}")
        check(self.sweep_estimator in BASELINES, "sweep_estimator", f"is not one of {names}")
        for key in ("sweep_betas", "frontier_betas"):
            check(len(getattr(self, key)) > 0, key, "must not be empty")
            for i, b in enumerate(getattr(self, key)):
                check(b > 0, f"{key}[{i}]", "must be positive")


def build_toy(cfg: Config) -> Toy:
    """The reference policy and the rewards of these params."""
    return make_toy(seed=cfg.world_seed, hidden=cfg.hidden, sft_steps=cfg.sft_steps, sft_lr=cfg.sft_lr,
                      bt_pairs=cfg.bt_pairs, length_bonus=cfg.crowd_length_bonus, fancy_bonus=cfg.crowd_fancy_bonus)


@dataclass
class Results:
    config: Config
    tokens: list[str]
    world: WorldSummary
    gradient_quality: GradientQuality
    training: Training
    sweep: Sweep
    kl_placement: KLPlacement
    claim: Claim


# ----------------------------------------------------------------------------- measuring and training

def exact_stats(lp: torch.Tensor, toy: Toy) -> Stats:
    """The expectations of `Stats` under pi = exp(lp) (N,)."""
    w = world()
    p = lp.exp()
    return Stats(reward=float(p @ toy.reward), gold=float(p @ toy.gold), kl_ref=kl(lp, toy.ref_lp),
                 length=float(p @ w.lengths.to(DTYPE)), fancy=float(p @ w.counts[:, list(FANCY)].sum(1)),
                 points=float(p @ w.counts[:, FACT]), entropy=float(-(p * lp).sum()))


def measured(lp: torch.Tensor, toy: Toy, beta: float) -> Measured:
    opt_lp = optimal_logprobs(toy.ref_lp, toy.reward, beta)
    return Measured(**dataclasses.asdict(exact_stats(lp, toy)), J=float(exact_objective(lp, toy, beta)),
                    kl_opt=kl(lp, opt_lp))


def top(lp: torch.Tensor, toy: Toy, k: int = 3) -> list[Likely]:
    """The k most likely responses: what a policy actually writes."""
    p, idx = lp.exp().topk(k)
    return [Likely(show(int(i)), float(q), float(toy.reward[i]), float(toy.gold[i])) for q, i in zip(p, idx)]


def rl_train(policy: ToyPolicy, toy: Toy, beta: float, steps: int, *, estimator: str, kl_mode: str,
             batch: int, lr: float, gen: torch.Generator, log_every: int = 0,
             on_log: Callable[[int, ToyPolicy], None] | None = None) -> ToyPolicy:
    """On-policy REINFORCE with Adam, one update per `batch` samples, `steps` times; calls `on_log(step,
    policy)` at step 0 and every `log_every` steps. Trains `policy` in place."""
    opt = torch.optim.Adam(policy.parameters(), lr=lr)
    for step in range(steps + 1):
        if step:
            loss = surrogate_loss(policy, toy, sample(policy, batch, gen), beta, estimator, kl_mode)
            opt.zero_grad()
            loss.backward()
            opt.step()
        if on_log is not None and (step == 0 or log_every and step % log_every == 0):
            on_log(step, policy)
    return policy


def k3_expected_surrogate(policy: ToyPolicy, toy: Toy, beta: float) -> torch.Tensor:
    """A scalar whose gradient is the expected ascent direction of KL-in-loss (k3) training: E over pi of
    the per-token k3 gradient at prefix s is ∇ KL(pi_ref(.|s) || pi(.|s)) (expected_k3_loss, per prefix),
    and prefixes are visited with probability d_pi(s), not differentiated, so the direction is
    ∇ sum_y pi(y) r(y) - beta sum_s stopgrad(d_pi(s)) ∇ KL(pi_ref(.|s) || pi(.|s))."""
    table = log_table(policy)  # (P, V + 1)
    lp = gather_tokens(table).sum(1)  # (N,)
    reach = (lp[: table.shape[0]] - table[:, END]).detach().exp()  # (P,) chance of writing prefix s
    kl_s = (toy.ref_table.exp() * (toy.ref_table - table)).sum(1)  # (P,)
    return (lp.exp() * toy.reward).sum() - beta * (reach * kl_s).sum()


def k3_fixed_point(toy: Toy, beta: float, steps: int, lr: float) -> tuple[ToyPolicy, float]:
    """Where KL-in-loss (k3) training converges in expectation: full-batch Adam on its exact direction,
    from the reference. Returns the policy and the norm of the remaining direction."""
    policy = clone_policy(toy.ref).requires_grad_(True)
    opt = torch.optim.Adam(policy.parameters(), lr=lr)
    for _ in range(steps):
        opt.zero_grad()
        (-k3_expected_surrogate(policy, toy, beta)).backward()
        opt.step()
    opt.zero_grad()
    k3_expected_surrogate(policy, toy, beta).backward()
    return policy, float(flat_grad(policy).norm())


class Trainer:
    """RL runs from the reference, each (estimator, KL placement, beta) trained once and shared between the
    demonstrations; at cfg.beta the curves also track the distance to the k3 fixed point `fp_lp`."""

    def __init__(self, toy: Toy, cfg: Config, fp_lp: torch.Tensor, say: Callable[[str], None]):
        self.toy, self.cfg, self.fp_lp, self.say = toy, cfg, fp_lp, say
        self.runs: dict[tuple, tuple[Curve, torch.Tensor]] = {}

    def __call__(self, estimator: str, kl_mode: str, beta: float,
                 seed: int | None = None) -> tuple[Curve, torch.Tensor]:
        """The run's curve and its final log pi (N,); `seed` samples its batches (default: cfg.train_seed)."""
        seed = self.cfg.train_seed if seed is None else seed
        key = (estimator, kl_mode, beta, seed)
        if key not in self.runs:
            self.say(f"train {estimator} {kl_mode} beta={beta:g} seed={seed}")
            toy, cfg, curve = self.toy, self.cfg, Curve()
            opt_lp = optimal_logprobs(toy.ref_lp, toy.reward, beta)

            @torch.no_grad()
            def on_log(step: int, policy: ToyPolicy) -> None:
                lp = all_logprobs(policy)
                st = exact_stats(lp, toy)
                curve.step.append(step)
                curve.J.append(float(exact_objective(lp, toy, beta)))
                curve.kl_opt.append(kl(lp, opt_lp))
                if beta == cfg.beta:
                    curve.kl_fp.append(kl(lp, self.fp_lp))
                for name in ("kl_ref", "reward", "gold", "length"):
                    getattr(curve, name).append(getattr(st, name))

            policy = clone_policy(toy.ref).requires_grad_(True)
            rl_train(policy, toy, beta, cfg.steps, estimator=estimator, kl_mode=kl_mode, batch=cfg.batch,
                     lr=cfg.lr, gen=torch.Generator().manual_seed(seed), log_every=cfg.log_every,
                     on_log=on_log)
            with torch.no_grad():
                self.runs[key] = (curve, all_logprobs(policy))
        return self.runs[key]


# ----------------------------------------------------------------------------- the demonstrations

def world_summary(toy: Toy, cfg: Config) -> WorldSummary:
    w = world()
    return WorldSummary(w.n, w.p, toy.sft_kl, toy.crowd_agreement, dict(zip(TOKENS, toy.rm_weights.tolist())),
                        measured(toy.ref_lp, toy, cfg.beta), top(toy.ref_lp, toy), exact_stats(toy.data_lp, toy))


def quality_of(gs: torch.Tensor, g_true: torch.Tensor) -> Quality:
    """The three measures of (trials, D) sampled gradients against the exact one (D,), each a mean over the
    trials with its 95% t interval (their Monte Carlo error; the trials are independent batches)."""
    sq = g_true.pow(2).sum()
    per_trial = {"cosine": nn.functional.cosine_similarity(gs, g_true[None], dim=1),  # (trials,)
                 "rel_mse": ((gs - g_true) ** 2).sum(1) / sq,  # (trials,)
                 # each estimate's component along the exact gradient, in its units: 1 on average when the
                 # estimator is unbiased along it (a length would be inflated by the noise, by tr(cov) / trials)
                 "along": gs @ g_true / sq}  # (trials,)
    out = {}
    for name, x in per_trial.items():
        x = x.numpy()
        lo, hi = stats.t.interval(CI, len(x) - 1, loc=x.mean(), scale=stats.sem(x))
        out |= {name: float(x.mean()), f"{name}_ci": [float(lo), float(hi)]}
    return Quality(**out)


def gradient_quality(toy: Toy, cfg: Config) -> GradientQuality:
    """a. Cosine to the exact gradient, relative MSE and the component along it, per estimator at the
    reference. Every estimator sees the same batches (a generator seeded with grad_seed each)."""
    policy = clone_policy(toy.ref).requires_grad_(True)
    g_true, obj = exact_gradient(policy, toy, cfg.beta)
    quality = {}
    for name in cfg.grad_estimators:
        gen = torch.Generator().manual_seed(cfg.grad_seed)
        gs = torch.stack([sampled_gradient(policy, toy, cfg.beta, cfg.grad_batch, gen, name)
                          for _ in range(cfg.grad_trials)])  # (trials, D)
        quality[name] = quality_of(gs, g_true)
    return GradientQuality(cfg.beta, cfg.grad_trials, cfg.grad_batch, float(g_true.norm()), obj, quality)


def training(toy: Toy, cfg: Config, train: Trainer) -> Training:
    """b. REINFORCE with the KL in the reward, per estimator, towards the analytic optimum."""
    opt = measured(optimal_logprobs(toy.ref_lp, toy.reward, cfg.beta), toy, cfg.beta)
    return Training(cfg.beta, float(exact_objective(toy.ref_lp, toy, cfg.beta)), opt.J, opt.kl_ref, opt.gold,
                    cfg.table_steps, {e: train(e, "reward_k1", cfg.beta)[0] for e in cfg.train_estimators})


def seed_kl(values: list[float], seeds: list[int]) -> SeedKL:
    """The mean of per-seed values with its two-sided CI t interval over the seeds (df = seeds - 1)."""
    x = torch.tensor(values, dtype=torch.float64).numpy()
    lo, hi = stats.t.interval(CI, len(x) - 1, loc=x.mean(), scale=stats.sem(x))
    return SeedKL(seeds, [float(v) for v in x], float(x.mean()), float(lo), float(hi))


def claim(toy: Toy, cfg: Config, train: Trainer) -> Claim:
    """b, judged over sampling seeds: per estimator, KL(pi || pi*) averaged over the last quarter's logged steps of
    each seed's run, and the tolerance the claim holds it to (exact, from the toy: no training)."""
    opt_lp = optimal_logprobs(toy.ref_lp, toy.reward, cfg.beta)
    tolerance = kl(optimal_logprobs(toy.ref_lp, toy.reward, cfg.beta * (1 + cfg.tolerance_beta)), opt_lp)
    from_step = cfg.steps - cfg.steps // 4
    seeds = [cfg.train_seed + i for i in range(cfg.claim_seeds)]
    by_estimator = {}
    for e in cfg.train_estimators:
        tails = []
        for s in seeds:
            curve, _ = train(e, "reward_k1", cfg.beta, s)
            tail = [v for step, v in zip(curve.step, curve.kl_opt) if step > from_step]
            tails.append(sum(tail) / len(tail))
        by_estimator[e] = seed_kl(tails, seeds)
    return Claim(cfg.beta, cfg.tolerance_beta, float(tolerance), from_step, by_estimator)


def beta_sweep(toy: Toy, cfg: Config, train: Trainer) -> Sweep:
    """c. The trained policy and the analytic optimum at each sweep beta, and the optimum's frontier."""
    rows = []
    for b in cfg.sweep_betas:
        opt_lp = optimal_logprobs(toy.ref_lp, toy.reward, b)
        _, lp = train(cfg.sweep_estimator, "reward_k1", b)
        for name, policy_lp in (("RL", lp), ("optimal", opt_lp)):
            rows.append(SweepRow(**dataclasses.asdict(measured(policy_lp, toy, b)), beta=b, policy=name,
                                 top=top(policy_lp, toy)))
    frontier = [FrontierPoint(**dataclasses.asdict(exact_stats(optimal_logprobs(toy.ref_lp, toy.reward, b), toy)),
                              beta=b) for b in cfg.frontier_betas]
    return Sweep(cfg.sweep_estimator, rows, frontier)


def kl_placement(toy: Toy, cfg: Config, train: Trainer, fp_residual: float) -> KLPlacement:
    """d. KL in the reward (k1) or in the loss (k3), per estimator, against pi* and the k3 fixed point."""
    fp_lp = train.fp_lp

    def row(lp: torch.Tensor, policy: str, estimator: str = "", kl_mode: str = "") -> PlacementRow:
        return PlacementRow(**dataclasses.asdict(measured(lp, toy, cfg.beta)), policy=policy, estimator=estimator,
                            kl_mode=kl_mode, kl_fp=kl(lp, fp_lp))

    rows = [row(optimal_logprobs(toy.ref_lp, toy.reward, cfg.beta), "optimal"), row(fp_lp, "k3 fixed point")]
    curves = {}
    for est in cfg.kl_estimators:
        for mode in KL_MODES:
            curve, lp = train(est, mode, cfg.beta)
            rows.append(row(lp, "RL", est, mode))
            curves[f"{est} {mode}"] = curve
    return KLPlacement(cfg.beta, fp_residual, rows, curves)


def run(cfg: Config, progress: Callable[[str], None] | None = None) -> Results:
    """Every demonstration on the toy these params build."""
    say = progress or (lambda _msg: None)
    say("world: reference policy and reward model")
    toy = build_toy(cfg)
    say("a: gradient quality")
    grad = gradient_quality(toy, cfg)
    say("d: exact fixed point of KL-in-loss (k3)")
    fp_policy, fp_residual = k3_fixed_point(toy, cfg.beta, cfg.fixed_point_steps, cfg.fixed_point_lr)
    with torch.no_grad():
        train = Trainer(toy, cfg, all_logprobs(fp_policy), say)
    results = (training(toy, cfg, train), beta_sweep(toy, cfg, train), kl_placement(toy, cfg, train, fp_residual))
    say("b: the claim over sampling seeds")
    return Results(cfg, list(TOKENS), world_summary(toy, cfg), grad, *results, claim(toy, cfg, train))


def headline_metrics(res: Results) -> dict[str, float]:
    """The key numbers, flat, for METRICS (no dots in the names: dvc metrics uses them for nesting)."""
    m: dict[str, float] = {}
    for name, q in res.gradient_quality.estimators.items():
        m[f"grad_cosine_{name}"] = q.cosine
        m[f"grad_rel_mse_{name}"] = q.rel_mse
    for name, curve in res.training.curves.items():
        m[f"final_kl_opt_{name}"] = curve.kl_opt[-1]
        m[f"final_J_{name}"] = curve.J[-1]
    m["J_opt"] = res.training.J_opt
    for row in res.sweep.rows:
        tag = f"beta{row.beta:g}_{'rl' if row.policy == 'RL' else 'opt'}".replace(".", "p")
        m[f"sweep_reward_{tag}"] = row.reward
        m[f"sweep_gold_{tag}"] = row.gold
    for row in res.kl_placement.rows:
        key = f"{row.estimator}_{row.kl_mode}" if row.policy == "RL" else row.policy.replace(" ", "_")
        m[f"kl_placement_kl_opt_{key}"] = row.kl_opt
    m["reference_gold"] = res.world.reference.gold
    m["kl_tolerance"] = res.claim.tolerance  # the claim's: KL(pi*_{beta (1 + tolerance_beta)} || pi*_beta)
    m["tolerance_beta"] = res.claim.tolerance_beta
    m["claim_seeds"] = len(next(iter(res.claim.estimators.values())).seeds)
    for name, s in res.claim.estimators.items():
        m[f"tail_kl_opt_{name}"] = s.mean
        m[f"tail_kl_opt_{name}_hi"] = s.ci_hi
    return m


# ----------------------------------------------------------------------------- the report

def load_config(params: dict) -> Config:
    return from_dict(Config, params.get(SECTION), SECTION)
