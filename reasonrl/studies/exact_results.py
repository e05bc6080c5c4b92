"""What the exact study's demonstrations return (reasonrl.studies.exact): plain dataclasses, written to
reports/exact/results.json by stage `exact` and read back by stage `report_exact`."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Stats:
    """Exact expectations under one policy."""
    reward: float  # the reward model's score
    gold: float
    kl_ref: float  # KL(pi || pi_ref)
    length: float  # tokens
    fancy: float  # fancy tokens
    points: float  # facts
    entropy: float  # of the whole response, nats


@dataclass
class Measured(Stats):
    """A policy measured exactly at one beta."""
    J: float
    kl_opt: float  # KL(pi || pi*) at that beta


@dataclass
class Likely:
    """One of a policy's most likely responses."""
    text: str
    prob: float
    reward: float
    gold: float


@dataclass
class WorldSummary:
    n_responses: int
    n_prefixes: int
    sft_kl: float  # KL(p_data || pi_ref)
    crowd_agreement: float  # share of crowd labels agreeing with gold, where gold is not indifferent
    rm_weights: dict[str, float]  # the reward model's reward per token
    reference: Measured  # at cfg.beta
    reference_top: list[Likely]
    data: Stats


@dataclass
class Quality:
    """Means over the trials, each with its 95% interval [lo, hi] (Monte Carlo error)."""
    cosine: float  # cosine of an estimate to the exact gradient
    cosine_ci: list[float]
    rel_mse: float  # |g - ∇J|² / |∇J|²
    rel_mse_ci: list[float]
    along: float  # <g, ∇J> / |∇J|²: the estimate's component along ∇J in its units (1: unbiased along it)
    along_ci: list[float]


@dataclass
class GradientQuality:
    beta: float
    trials: int
    batch: int
    exact_norm: float
    J: float
    estimators: dict[str, Quality]


@dataclass
class Curve:
    """Exact measurements of one training run every log_every steps (kl_fp: only at cfg.beta)."""
    step: list[int] = field(default_factory=list)
    J: list[float] = field(default_factory=list)
    kl_opt: list[float] = field(default_factory=list)
    kl_fp: list[float] = field(default_factory=list)  # KL(pi || pi_k3)
    kl_ref: list[float] = field(default_factory=list)
    reward: list[float] = field(default_factory=list)
    gold: list[float] = field(default_factory=list)
    length: list[float] = field(default_factory=list)


@dataclass
class Training:
    beta: float
    J_ref: float
    J_opt: float
    kl_ref_opt: float
    gold_opt: float
    table_steps: list[int]
    curves: dict[str, Curve]  # by estimator


@dataclass
class SeedKL:
    """The claim's measure for one estimator: KL(pi || pi*) averaged over the logged steps of the last quarter of
    training, one value per sampling seed, with the mean's t interval over the seeds."""
    seeds: list[int]
    tail_kl: list[float]  # per seed
    mean: float
    ci_lo: float
    ci_hi: float


@dataclass
class Claim:
    """Does REINFORCE with the KL in the reward reach pi*? Each estimator trained from `claim_seeds` sampling seeds;
    it reaches pi* when its whole interval lies under `tolerance`, the KL from pi* to the optimum at a beta
    `tolerance_beta` larger: a policy that close is nearer to pi* than a 10% change of beta moves the optimum."""
    beta: float
    tolerance_beta: float
    tolerance: float  # KL(pi*_{beta (1 + tolerance_beta)} || pi*_beta)
    from_step: int  # the tail: logged steps after this one
    estimators: dict[str, SeedKL]


@dataclass
class SweepRow(Measured):
    beta: float
    policy: str  # "RL" or "optimal"
    top: list[Likely]


@dataclass
class FrontierPoint(Stats):
    beta: float


@dataclass
class Sweep:
    estimator: str
    rows: list[SweepRow]
    frontier: list[FrontierPoint]  # the analytic optimum at every cfg.frontier_betas


@dataclass
class PlacementRow(Measured):
    policy: str  # "optimal", "k3 fixed point" or "RL"
    estimator: str  # "" unless RL
    kl_mode: str
    kl_fp: float  # KL(pi || pi_k3)


@dataclass
class KLPlacement:
    beta: float
    fixed_point_residual: float  # norm of the expected k3-in-loss update left at pi_k3
    rows: list[PlacementRow]
    curves: dict[str, Curve]  # by "<estimator> <kl_mode>"
