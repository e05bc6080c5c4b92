"""The RL job: every knob of one run, validated before any work starts.

`rl:` in params.yaml holds the defaults (the reference's values); each run overrides some of them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

from ..config import ConfigError, check, from_dict
from .variants import OPTIMIZERS

Method = Literal["grpo", "rft", "sft"]
Reward = Literal["true", "orm", "prm_full", "random", "shuffled"]
VERIFIER_REWARDS = ("orm", "prm_full")


@dataclass
class Job:
    init: str = "base_cot_L2"  # starting checkpoint: models/<init>.pt
    method: Method = "grpo"  # grpo: policy gradient; rft: likelihood of own correct samples; sft: gold traces
    reward: Reward = "true"
    guard: bool = False  # zero the reward of malformed responses
    len_pen: float = 0.0  # reward -= len_pen * response length (characters)
    overlong: int = 0  # soft penalty over the last `overlong` characters of the length budget (0 = off)
    advantage: Literal["grpo", "rloo", "dr_grpo", "none", "zero"] = "grpo"
    std_norm: bool = True  # grpo advantage divided by the group std
    loss_agg: Literal["token_mean", "seq_mean_token_sum", "seq_mean_token_mean", "dr_grpo"] = "token_mean"
    num_iterations: int = 1  # updates per rollout batch (mu); ratios are clipped when mu > 1
    eps_low: float = 0.2
    eps_high: float = 0.2
    beta: float = 0.0  # KL coefficient towards the starting model
    kl_estimator: Literal["k1", "k2", "k3"] = "k3"
    kl_in: Literal["loss", "reward"] = "loss"
    dynamic_sampling: bool = False  # drop zero-variance groups and resample prompts
    max_resample: int = 4  # extra sampling rounds allowed per step to fill the batch
    optimizer: str = "adam"  # adam (AdamW, no weight decay) | sgd (plain); constant learning rate lr
    lr: float = 1e-3
    steps: int = 200
    B: int = 32  # prompts per step
    G: int = 8  # samples per prompt
    n_range: tuple[int, int] = (4, 12)
    k_max: int = 7
    temperature: float = 1.0
    seed: int = 0
    eval: Literal["none", "n12", "think"] = "none"
    eval_every: int = 25

    def __post_init__(self):
        lo, hi = self.n_range
        check(2 <= lo <= hi <= 16, "n_range", f"need 2 <= lo <= hi <= 16, got {list(self.n_range)}")
        check(1 <= self.k_max < hi, "k_max", f"must be in [1, {hi - 1}] (below the largest ring size {hi})")
        check(self.k_max <= 9, "k_max", "must be at most 9")
        check(self.method != "grpo" or self.G >= 2, "G", f"must be at least 2 for group advantages, got {self.G}")
        check(self.G >= 1 and self.B >= 1, "B", "B and G must be at least 1")
        check(self.steps >= 1, "steps", f"must be at least 1, got {self.steps}")
        check(self.lr > 0, "lr", f"must be positive, got {self.lr}")
        check(self.optimizer in OPTIMIZERS, "optimizer", f"{self.optimizer!r} is not one of {list(OPTIMIZERS)}")
        check(self.num_iterations >= 1, "num_iterations", f"must be at least 1, got {self.num_iterations}")
        check(0 <= self.eps_low < 1, "eps_low", f"must be in [0, 1), got {self.eps_low}")
        check(self.eps_high >= 0, "eps_high", f"must be >= 0, got {self.eps_high}")
        check(self.beta >= 0, "beta", f"must be >= 0, got {self.beta}")
        check(self.len_pen >= 0, "len_pen", f"must be >= 0, got {self.len_pen}")
        check(self.overlong >= 0, "overlong", f"must be >= 0, got {self.overlong}")
        check(self.temperature > 0, "temperature", f"must be positive for sampling, got {self.temperature}")
        check(self.eval_every >= 1, "eval_every", f"must be at least 1, got {self.eval_every}")
        check(self.max_resample >= 0, "max_resample", f"must be >= 0, got {self.max_resample}")
        check(self.method == "grpo" or self.reward == "true", "reward",
              f"{self.method} trains on correct/gold answers and uses the true reward only")

    @property
    def verifier(self) -> str | None:
        return self.reward if self.reward in VERIFIER_REWARDS else None

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["n_range"] = list(self.n_range)
        return d


def make_job(defaults: dict | None = None, overrides: dict | None = None, where: str = "run",
             verifiers: list[str] | None = None) -> Job:
    """The defaults (`rl:` section) with `overrides` on top; any unknown key or bad value raises
    ConfigError naming it. `verifiers`: names that exist; a verifier reward outside them is rejected."""
    merged = {**(defaults or {}), **(overrides or {})}
    job = from_dict(Job, merged, where)
    if verifiers is not None and job.verifier is not None and job.verifier not in verifiers:
        raise ConfigError(f"{where}.reward: verifier {job.verifier!r} is not defined; defined are {verifiers}")
    return job
