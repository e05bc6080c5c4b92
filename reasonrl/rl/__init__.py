"""Reinforcement learning on a task: the job (job.py), the algorithm's step, collecting its batch included
(algorithm.py), with its variant registries (variants.py): GRPO end to end is those two. Around them: the batch
(batch.py), the sequence layouts and the run's plan, its memory and speed policy (layout.py), the run's state
(context.py), the records (records.py), the loop (train.py), its memory hooks (memory.py) and its stage
plumbing (run.py). This package module imports nothing, so importing one of them loads only what that one needs."""
