"""Reinforcement learning on a task: the job (job.py), the variant registries (variants.py), collecting a
batch (collect.py), the sequence layouts (layout.py), the loop (train.py) and its stage plumbing (run.py).
This package module imports nothing, so importing one of them loads only what that one needs."""
