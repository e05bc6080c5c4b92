"""The machinery that runs the pipeline: `reasonrl repro` and the console script (docs/parallel.md).

The science (tasks, rl, model, evaluate, studies, stats, io, config, errors, numerics, pipeline, ...) never imports
this package, so no stage's outputs or deps depend on how the pipeline was launched (tests/test_imports.py). The
runner imports the science, not the reverse: numerics.machine() for its log line, errors for the console script's
one-line errors (stage setup installs the same excepthook itself).

Each module against what DVC 3.67, Dask and the stdlib already do; its docstring says what it buys, and
docs/performance.md ("Measurements the code cites") how much:
- parallel: DVC runs one stage at a time and Dask runs tasks; here the start order and the stop (stages side by side).
- plan: DVC's own graph and order (`plan_repro`); the stale closure before any stage runs and `Schedule` are not
  DVC's (the reports sooner, the same makespan).
- progress: tqdm draws the line; the time left from timing files is what tqdm's rate cannot say before a finish.
- lockfile: DVC's own reader and dumper, without the round trip (a cheaper lock update per stage).
- warm, zygotes: no library forks a stage's `python -c` and its command from a preloaded interpreter (a stage's
  cost beyond its work a fraction of a cold start's).
- malloc: tcmalloc under the stages (a cheaper RL step, a lower peak).
- experiment: `dvc exp run -S`'s overrides and `dvc exp save`, DVC's own, around the parallel run (less time than
  `dvc exp run`'s serial run); values spliced in place where DVC's writer would rewrite params.yaml.
- cli: argparse, importing only the chosen command.
- dvc_adapter: every use of DVC's Python code, each entry point saying what it relies on, tested against the pinned
  DVC; another version stops `reasonrl repro` and `reasonrl exp run` at their start (issue 71).
"""
