"""Reinforcement learning on hop world: jobs, variant registries and the training loop."""

from .job import Job, make_job
from .train import METHODS, train_rl
from .variants import ADVANTAGES, KL_ESTIMATORS, LOSS_AGG, REWARDS

__all__ = ["ADVANTAGES", "KL_ESTIMATORS", "LOSS_AGG", "METHODS", "REWARDS", "Job", "make_job", "train_rl"]
