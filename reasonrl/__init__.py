"""reasonrl: a reproducible pipeline for training reasoning with reinforcement learning."""

__version__ = "0.1.0"
