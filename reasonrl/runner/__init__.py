"""The machinery that runs the pipeline: `reasonrl repro` and the console script (docs/parallel.md).

The science (tasks, rl, model, evaluate, studies, stats, io, config, errors, numerics, pipeline, ...) never
imports this package, so no stage's outputs depend on how it was launched, and no stage's deps name a runner
file (tests/test_imports.py). This package may import the science, not the reverse.
"""
