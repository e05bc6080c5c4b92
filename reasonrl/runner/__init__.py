"""The machinery that runs the pipeline: `reasonrl repro` and the console script (docs/parallel.md).

The science (tasks, rl, model, evaluate, studies, stats, io, config, errors, numerics, pipeline, ...) never imports
this package, so no stage's outputs or deps depend on how the pipeline was launched (tests/test_imports.py). The
runner imports the science, not the reverse: numerics.machine() for its log line, errors for the console script's
one-line errors (stage setup installs the same excepthook itself).

Each module against what DVC 3.67, Dask and the stdlib already do; its docstring has the measured number:
- parallel: DVC runs one stage at a time and Dask runs tasks; here the start order and the stop (1.72x at -j 2).
- plan: DVC's own graph and order (`plan_repro`); the stale closure before any stage runs and `Schedule` are not
  DVC's (six reports at 3.9-4.7 h instead of 8.1 h, the same makespan).
- progress: tqdm draws the line; the time left from timing files is what tqdm's rate cannot say before a finish.
- lockfile: DVC's own reader and dumper, without the round trip (5.3 s less per stage).
- warm, zygotes: no library forks a stage's `python -c` and its command from a preloaded interpreter (0.8-2.2 s
  per stage beyond its work, against 2.9-5.1 s cold).
- malloc: tcmalloc under the stages (the RL step 1.38x).
- experiment: `dvc exp run -S`'s overrides and `dvc exp save`, DVC's own, around the parallel run (the smoke chain's
  experiment 0.81 of `dvc exp run`'s time); values spliced in place where DVC's writer would rewrite params.yaml.
- cli: argparse, importing only the chosen command.
- dvc_adapter: every use of DVC's Python code, each entry point saying what it relies on, tested against the pinned
  DVC; another version stops `reasonrl repro` and `reasonrl exp run` at their start (issue 71).
"""
