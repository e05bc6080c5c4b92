"""The RL job: every knob of one run, validated before any work starts.

`rl:` in params.yaml holds the defaults and is their one source (tests/test_config_defaults.py keeps
the dataclass defaults below equal to it); each run overrides some of them. Named variants are checked
against their registries (`advantage in ADVANTAGES`), never against a repeated list of names, so adding a
variant is adding one function to one registry. `job_for` validates a pipeline run in one place: the
`rl:` section on its own, the top-level `method`, the run group, the run name, its init and its reward.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..config import ConfigError, check, from_dict
from ..errors import suggest
from ..tasks import DEFAULT, distribution, get_task
from .variants import ADVANTAGES, KL_ESTIMATORS, LOSS_AGG, METHODS, OPTIMIZERS, REWARDS

# Where a learned reward's checkpoint comes from: reward -> verifiers.<name> (stage verifier@<name>).
VERIFIER_REWARDS = ("orm", "prm_full")
KL_PLACEMENTS = ("loss", "reward")  # kl_in: per token in the loss | summed per response, off the advantage
GREEDY_EVALS = ("val_in", "val_edge", "val_far")  # validation roles: in-training curves choose knobs, never test sets
EVALS = ("none", *GREEDY_EVALS, "think")  # in-training evaluations (rl/run.py make_evaluator)


@dataclass
class Job:
    task: str = DEFAULT  # a task's name (tasks.names()): its init's task (the stage checks the checkpoint agrees)
    init: str = "base_cot"  # starting checkpoint models/<init>.pt (base_<name> or mixed_<name>)
    method: str = "grpo"  # key of variants.METHODS: grpo (policy gradient) | rft (own correct samples) | sft (gold)
    reward: str = "true"  # key of variants.REWARDS: true | verified | random | shuffled | orm, prm_full (verifiers)
    guard: bool = False  # zero the reward of malformed responses
    len_pen: float = 0.0  # reward -= len_pen * response length (characters)
    overlong: int = 0  # soft penalty over the last `overlong` characters of the length budget (0 = off)
    advantage: str = "grpo"  # key of variants.ADVANTAGES: grpo (mean, / std) | dr_grpo (mean) | rloo | none | zero
    loss_agg: str = "token_mean"  # key of variants.LOSS_AGG: how per-token losses become one number
    num_iterations: int = 1  # updates per rollout batch (mu); ratios are clipped when mu > 1
    eps_low: float = 0.2  # PPO ratio clipped below at 1 - eps_low
    eps_high: float = 0.2  # ... and above at 1 + eps_high (> eps_low: DAPO's clip-higher)
    beta: float = 0.0  # KL coefficient towards the starting model
    kl_estimator: str = "k3"  # key of variants.KL_ESTIMATORS, in either placement
    kl_in: str = "loss"  # one of KL_PLACEMENTS: where the KL penalty goes
    dynamic_sampling: bool = False  # drop zero-variance groups and resample prompts
    max_resample: int = 4  # extra sampling rounds allowed per step to fill the batch
    rollouts: int | None = None  # policy samples the run may draw; null: steps x B x G (equal rollouts)
    optimizer: str = "adam"  # key of variants.OPTIMIZERS: adam (AdamW, no weight decay) | sgd (plain); constant lr
    lr: float = 1e-4  # learning rate of the optimizer, constant
    grad_clip: float = 1.0  # each update's gradient is clipped to this norm (as pre-training's grad_clip)
    steps: int = 80  # updates
    B: int = 32  # prompts per step
    G: int = 8  # samples per prompt
    n_range: tuple[int, int] = (4, 16)  # the task's spec: sizes of training problems (hop: ring sizes), inclusive
    k_min: int = 1  # ... and difficulties (hop counts), uniform in k_min..min(n - 1, k_max)
    k_max: int = 7  # the largest difficulty
    temperature: float = 1.0  # sampling temperature
    seed: int = 0  # seeds problems, samples and the random reward
    eval: str = "none"  # one of EVALS: the evaluation every eval_every steps
    eval_every: int = 10  # steps between evaluations (params.yaml rl.eval_every)

    def __post_init__(self):
        for key, names in choices().items():
            value = getattr(self, key)
            near = suggest(str(value), list(names))
            check(value in names, key, f"{value!r} is not one of {list(names)}",
                  f"did you mean {near!r}?" if near else None)
        get_task(self.task, "task").check_spec(self.spec)
        check(self.method != "grpo" or self.G >= 2, "G", f"must be at least 2 for group advantages, got {self.G}")
        check(self.G >= 1, "G", f"must be at least 1, got {self.G}")
        check(self.B >= 1, "B", f"must be at least 1, got {self.B}")
        check(self.steps >= 1, "steps", f"must be at least 1, got {self.steps}")
        check(self.lr > 0, "lr", f"must be positive, got {self.lr}")
        check(self.grad_clip > 0, "grad_clip", f"must be positive, got {self.grad_clip}")
        check(self.num_iterations >= 1, "num_iterations", f"must be at least 1, got {self.num_iterations}")
        check(0 <= self.eps_low < 1, "eps_low", f"must be in [0, 1), got {self.eps_low}")
        check(self.eps_high >= 0, "eps_high", f"must be >= 0, got {self.eps_high}")
        check(self.beta >= 0, "beta", f"must be >= 0, got {self.beta}")
        check(self.len_pen >= 0, "len_pen", f"must be >= 0, got {self.len_pen}")
        check(self.overlong >= 0, "overlong", f"must be >= 0, got {self.overlong}")
        check(self.temperature > 0, "temperature", f"must be positive for sampling, got {self.temperature}")
        check(self.eval_every >= 1, "eval_every", f"must be at least 1, got {self.eval_every}")
        check(self.max_resample >= 0, "max_resample", f"must be >= 0, got {self.max_resample}")
        check(self.rollouts is None or self.rollouts >= self.B * self.G, "rollouts",
              f"must pay for one step of B x G = {self.B * self.G} samples, got {self.rollouts}")
        check(self.method == "grpo" or self.reward == "true", "reward",
              f"{self.method} trains on correct/gold answers and uses the true reward only")

    @property
    def spec(self) -> dict:
        """The distribution of its training problems, as the task reads it."""
        return distribution(get_task(self.task), self.n_range, self.k_min, self.k_max)

    @property
    def response_budget(self) -> int:
        """The most characters a response of this job can have: sample_responses' max_new for its hardest problem."""
        return get_task(self.task).max_budget(self.spec)

    @property
    def verifier(self) -> str | None:
        return self.reward if self.reward in VERIFIER_REWARDS else None

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["n_range"] = list(self.n_range)
        return d


def choices() -> dict:
    """Field -> the names it may take: the registries themselves."""

    return {"method": METHODS, "reward": REWARDS, "advantage": ADVANTAGES, "loss_agg": LOSS_AGG,
            "kl_estimator": KL_ESTIMATORS, "kl_in": KL_PLACEMENTS, "eval": EVALS, "optimizer": OPTIMIZERS}


def make_job(defaults: dict | None = None, overrides: dict | None = None, where: str = "run",
             verifiers: list[str] | None = None, defaults_where: str = "rl") -> Job:
    """The defaults (`rl:` section) with `overrides` on top; any unknown key or bad value raises
    ConfigError naming it: under `where` when the run set it, under `defaults_where` when it came from
    the defaults. `verifiers`: names that exist; a verifier reward outside them is rejected."""
    defaults, overrides = defaults or {}, overrides or {}
    if defaults:
        from_dict(Job, defaults, defaults_where)  # the defaults are valid on their own, whatever a run overrides
    try:
        job = from_dict(Job, {**defaults, **overrides}, where)
    except ConfigError as e:
        key = e.where[len(where) + 1:].split(".")[0].split("[")[0] if e.where.startswith(where + ".") else ""
        if key and key not in overrides and key in defaults:
            raise ConfigError(f"{defaults_where}.{e.where[len(where) + 1:]}", e.what, e.fix) from None
        raise
    if verifiers is not None and job.verifier is not None and job.verifier not in verifiers:
        raise ConfigError(f"{where}.reward", f"verifier {job.verifier!r} is not defined; defined are {verifiers}",
                          f"add verifiers.{job.verifier} to params.yaml or choose another reward")
    return job


# ----------------------------------------------------------------------------- runs of the pipeline

# Run group -> the verifier its stage depends on (None: no verifier). A learned reward lives only in the
# group whose stage depends on that verifier's checkpoint; every other reward lives in `runs` or in
# `runs_noeval` (the same stage without a test-set eval@ stage after it).
RUN_GROUPS = {"runs": None, "runs_noeval": None, "runs_orm": "orm", "runs_prm": "prm_full"}
HEADLINE = "headline"  # the `rl:` defaults with the top-level `method`


def job_for(params: dict, group: str, name: str) -> tuple[Job, str]:
    """(job, where) of run `name` of `group`: every check of a pipeline run. It reads only what the run's
    stage declares in dvc.yaml: `rl`, the run's entry, the verifier names, and for a headline run the
    top-level `method` (only headline runs read it, so `-S method=...` reruns only them)."""
    rl = params.get("rl")
    check(isinstance(rl, dict), "rl", "missing or not a mapping", "params.yaml needs the rl: defaults section")
    verifiers = list(params.get("verifiers") or {})
    from_dict(Job, rl, "rl")  # the rl: section on its own, even where every run overrides a bad key
    groups = [*RUN_GROUPS, HEADLINE]
    near = suggest(group, groups)
    check(group in groups, group, "not a run group",
          (f"did you mean {near!r}? " if near else "") + f"groups are {', '.join(groups)}")
    runs = params.get(group) or {}
    near = suggest(str(name), list(runs))
    check(name in runs, f"{group}.{name}", "no such run",
          (f"did you mean {near!r}? " if near else "") + f"defined runs in {group}: {', '.join(runs) or 'none'}")
    where, overrides = f"{group}.{name}", runs[name]
    check(isinstance(overrides, dict), where, f"expected a mapping of rl: keys, got {overrides!r}")
    for key, why in (("task", "dvc.yaml reads the run's data/<task>_*.jsonl"),
                     ("init", "dvc.yaml depends on models/<init>.pt")):
        check(key in overrides, f"{where}.{key}", "required in every run", f"{why}, so each run names its own")
    verifier = RUN_GROUPS.get(group)
    check(verifier is None or "reward" in overrides, f"{where}.reward", f"required in every run of {group}",
          f"dvc.yaml depends on models/verifier_<reward>.pt: write reward: {verifier}")
    if group == HEADLINE:
        method = params.get("method")
        methods = list(choices()["method"])
        near = suggest(str(method), methods)
        check(method in methods, "method", f"{method!r} is not one of {methods} (the headline runs' method)",
              f"did you mean {near!r}?" if near else None)
        check("method" not in overrides, f"{where}.method", "headline runs take the top-level `method`",
              "remove the key and set `method:` at the top of params.yaml")
        overrides = {"method": method, "eval": "val_edge", **overrides}
    job = make_job(rl, overrides, where, verifiers)
    homes = [g for g, v in RUN_GROUPS.items() if v == job.verifier]
    check(group in homes or (group == HEADLINE and job.verifier is None), f"{where}.reward",
          f"{job.reward!r} is not allowed in {group}",
          f"move the run to {' or '.join(homes)}: that group's stage depends on the reward's checkpoint")
    return job, where
