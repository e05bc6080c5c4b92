"""Reinforcement learning on a task: the job (job.py), the algorithm's step (algorithm.py) with its variant
registries (variants.py), collecting a batch (collect.py, batch.py), the sequence layouts (layout.py), the run's
state (context.py), the loop (train.py), its memory policy (memory.py) and its stage plumbing (run.py).
This package module imports nothing, so importing one of them loads only what that one needs."""
