"""The RL training loop: `job.steps` steps of the algorithm (algorithm.py) on one policy, with its evaluations and
its records.

A run may draw steps x B x G policy samples (`rollout_budget`); dynamic sampling spends them faster and ends
in fewer steps, so its arm costs the same rollouts as the others.
"""

from __future__ import annotations

import copy
import random
import time
from collections.abc import Callable

import torch
from tqdm import tqdm

from .algorithm import rl_step, rollout_budget
from .context import Context, Hooks
from .job import Job
from .records import fooled_examples
from .variants import OPTIMIZERS

# The run's random streams start this far from job.seed: pre-training draws its problems from
# random.Random(seed), so an RL run from base_<s> with the same seed would otherwise train on the base's problems.
PROBLEMS_SEED_OFFSET = 100  # random.Random: the training problems
SAMPLES_SEED_OFFSET = 100  # torch.Generator: the policy's samples (a stream of another kind than the problems')
REWARD_SEED_OFFSET = 200  # torch.Generator: the random reward's coins, apart from the samples' stream


def train_rl(job: Job, policy: torch.nn.Module, verifier=None,
             evaluate: Callable[[torch.nn.Module], dict] | None = None, progress: bool = True,
             shared_prefix: bool = True, hooks: Hooks | None = None):
    """Train `policy` in place; returns the history {"steps", "evals", "examples", "seconds"}.

    `evaluate(policy)` (optional) is called at step 0, every eval_every steps and at the end.
    shared_prefix=False runs the plain reference computation (same numbers up to float summation order).
    `hooks`: what runs between the step's phases and after each step (the stages pass the memory policy,
    rl/memory.py); by default nothing. Raises FloatingPointError naming the step if the loss becomes NaN or
    infinite.
    """
    if job.verifier is not None and verifier is None:
        raise ValueError(f"reward={job.reward!r} needs a verifier")
    policy.eval()
    torch.manual_seed(job.seed)  # nothing should draw from it; pinned so that a stray draw is still repeatable
    device = next(policy.parameters()).device
    ctx = Context(job=job, policy=policy, ref=copy.deepcopy(policy).eval().requires_grad_(False), verifier=verifier,
                  rng=random.Random(job.seed + PROBLEMS_SEED_OFFSET),
                  sample_gen=torch.Generator(device).manual_seed(job.seed + SAMPLES_SEED_OFFSET),
                  reward_gen=torch.Generator().manual_seed(job.seed + REWARD_SEED_OFFSET), shared_prefix=shared_prefix,
                  hooks=hooks or Hooks())
    opt = OPTIMIZERS[job.optimizer](policy.parameters(), job.lr)
    hist = {"steps": [], "evals": [], "examples": []}
    t0 = time.perf_counter()
    if evaluate:
        hist["evals"].append({"step": 0, **evaluate(policy)})
    bar = tqdm(range(job.steps), desc=f"rl {job.method}", disable=not progress, mininterval=2.0, leave=False)
    for step in bar:
        ts = time.perf_counter()
        record, batch = rl_step(ctx, opt, step)
        ctx.hooks.between_phases()
        record = {"step": step + 1, **record, "time/seconds": time.perf_counter() - ts}
        hist["steps"].append(record)
        bar.set_postfix(true=f"{record['reward/true']:.3f}", refresh=False)  # a redraw now: a stale count
        # the run ends after `steps` steps or when its rollout budget cannot pay for another round
        last = step == job.steps - 1 or ctx.rollouts + job.B * job.G > rollout_budget(job)
        due = (step + 1) % job.eval_every == 0 or last
        if job.reward != "true" and job.method == "grpo" and (due or step == 0):
            hist["examples"].append({"step": step + 1, "fooled": fooled_examples(batch)})
        if evaluate and due:
            hist["evals"].append({"step": step + 1, **evaluate(policy)})
        if last:
            break
    hist["seconds"] = time.perf_counter() - t0
    policy.eval()
    return hist
