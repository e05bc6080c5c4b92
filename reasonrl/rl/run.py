"""Running one RL job end to end: load its inputs, train, and shape its outputs.

Used by the `rl` stages and by `reasonrl train`; paths are passed in, never built here.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import yaml

from ..checkpoint import load_checkpoint, save_checkpoint
from ..config import ConfigError, check
from ..errors import guessed_stage, suggest
from ..evaluate import greedy_accuracy, think_profile
from ..io import atomic_path, write_json
from ..pipeline import data_path, read_problems
from ..runtime import stage_setup, write_timing
from ..tasks import Problem, get_task
from .job import GREEDY_EVALS, Job, make_job
from .memory import map_large_blocks, memory_hooks
from .train import train_rl

JOB_KEYS = {f.name for f in dataclasses.fields(Job)}  # what --set may give

THINK_SAMPLES = 16  # samples per problem of the think-profile evaluation during training
THINK_SEED = 3  # the think-profile evaluation's own sampling seed: the same samples at every evaluation


def make_evaluator(job: Job, eval_problems: dict[str, list[Problem]]):
    """The in-training evaluation `job.eval` asks for, or None."""
    if job.eval in GREEDY_EVALS:
        problems = eval_problems[job.eval]
        return lambda policy: greedy_accuracy(policy, problems)
    if job.eval == "think":
        problems = eval_problems["think"]
        return lambda policy: think_profile(policy, problems, THINK_SAMPLES, seed=THINK_SEED)
    return None


def check_init_fits(job: Job, max_len: int, init_path, eval_problems: dict[str, list[Problem]], where: str) -> None:
    """ConfigError naming `<where>.init` unless every rollout and evaluation sequence of `job` fits the
    starting model's max_len: found before step 1, not at it."""
    need = get_task(job.task).longest(job.spec, "sampled")
    if job.eval != "none" and eval_problems.get(job.eval):
        probs = eval_problems[job.eval]
        need = max(need, max(len(p.prompt) for p in probs) + max(p.budget for p in probs))
    check(max_len >= need, f"{where}.init", f"{Path(init_path).as_posix()} has max_len {max_len}, shorter than "
          f"the longest prompt + response of this run ({need})",
          "train the init with a larger model.max_len, or lower n_range / k_max")


def run_job(job: Job, init_path: str | Path, verifier_path: str | Path | None,
            eval_problems: dict[str, list[Problem]], device="cpu", progress: bool = True, where: str = "rl"):
    """Train `job` from the checkpoint at init_path, under the stages' memory policy; returns (policy, history)."""
    policy, _ = load_checkpoint(init_path, device)
    check(policy.cfg.task == job.task, f"{where}.task", f"{job.task!r}, but {Path(init_path).as_posix()} is a "
          f"{policy.cfg.task!r} model", f"set task to {policy.cfg.task}, or start from a {job.task} model")
    check_init_fits(job, policy.cfg.max_len, init_path, eval_problems, where)
    verifier = None
    if job.verifier is not None:
        from ..verifiers import load_verifier

        verifier = load_verifier(verifier_path, device)
    map_large_blocks()
    hist = train_rl(job, policy, verifier, make_evaluator(job, eval_problems), progress=progress,
                    hooks=memory_hooks(job, verifier is not None))
    return policy, hist


def without_timing(record: dict) -> dict:
    """A step record less its `time/` entries: wall-clock seconds differ on every rerun, so they stay out of
    the history and the summary (a study input, a DVC plot) and go only to timing()."""
    return {k: v for k, v in record.items() if not k.startswith("time/")}


def history_csv(hist: dict) -> str:
    """The per-step records as CSV (one row per step; columns as in the records, less the `time/` ones)."""
    cols = list(without_timing(hist["steps"][0]))
    rows = [",".join(f"{r[c]:.6g}" if isinstance(r[c], float) else str(r[c]) for c in cols) for r in hist["steps"]]
    return ",".join(cols) + "\n" + "\n".join(rows) + "\n"


def summary(job: Job, hist: dict) -> dict:
    last = hist["steps"][-1]
    return {"job": job.to_dict(), "final": {k: v for k, v in without_timing(last).items() if k != "step"},
            "evals": hist["evals"], "examples": hist["examples"]}


def timing(hist: dict) -> dict:
    """Wall-clock seconds of a run: kept out of the checkpoint, the history and the summary. Per step taken: a
    run with a rollout budget (dynamic sampling) can stop before job.steps."""
    n = len(hist["steps"])
    return {"seconds": round(hist["seconds"], 2), "seconds_per_step": round(hist["seconds"] / n, 4),
            "steps_per_second": round(n / hist["seconds"], 3)}


def write_outputs(policy, job: Job, hist: dict, model_path, history_path, summary_path) -> dict:
    """Write the checkpoint, the history and the summary; return the summary."""
    save_checkpoint(model_path, policy, {"kind": "rl", "job": job.to_dict()})
    with atomic_path(history_path) as tmp:
        tmp.write_text(history_csv(hist))
    s = summary(job, hist)
    write_json(summary_path, s)
    return s


# ----------------------------------------------------------------------------- `reasonrl train`

def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a key of the rl: defaults (YAML value), e.g. --set method=rft --set beta=0.05")
    p.add_argument("--params", default="params.yaml",
                   help="params file holding the rl: defaults (default: %(default)s)")
    p.add_argument("--out", default="runs/oneoff",
                   help="folder for model.pt, history.csv, summary.json and timing.json (default: %(default)s)")
    p.add_argument("--models", default="models",
                   help="folder holding <init>.pt and verifier_<name>.pt (default: %(default)s)")
    p.add_argument("--data", default="data",
                   help="folder holding the in-training evaluation sets (<task>_val_edge.jsonl, ..., "
                        "<task>_think.jsonl; default: %(default)s)")


def parse_sets(items: list[str]) -> dict:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set {item}", "expected KEY=VALUE", "e.g. --set beta=0.05")
        try:
            out[key.strip()] = yaml.safe_load(value)
        except yaml.YAMLError:
            raise ConfigError(f"--set {item}", "the value is not YAML", "quote strings: --set init=base_x") from None
    return out


def as_typed(overrides: dict, call, *args, **kwargs):
    """`call(...)`, with a `--set.<key>` of its ConfigErrors named as the user typed it: `--set <key>` when a --set
    gave the key, else `rl.<key>` (the defaults')."""
    try:
        return call(*args, **kwargs)
    except ConfigError as e:
        if e.where.startswith("--set."):
            key = e.where[len("--set."):]
            where = f"--set {key}" if key.split(".")[0].split("[")[0] in overrides else f"rl.{key}"
            raise ConfigError(where, e.what, e.fix) from None
        raise


def run(args) -> int:
    params, device, _ = stage_setup(args.params)  # numerics, threads and device as every stage sets them
    check(isinstance(params.get("rl"), dict), "rl", "missing or not a mapping",
          f"{args.params} needs the rl: defaults section")
    overrides = parse_sets(args.set)
    for key in overrides:  # `threads`, `device`, `numerics`: params of their own, which make_job would not know
        check(key in JOB_KEYS or isinstance(params.get(key), dict) or key not in params, f"--set {key}",
              f"a top-level param of {args.params}, not a key of rl:", f"set it in {args.params}, or pass --params")
    job = as_typed(overrides, make_job, params["rl"], overrides, "--set", list(params.get("verifiers") or {}))
    files = {role: Path(data_path(job.task, role, args.data)) for role in (*GREEDY_EVALS, "think")}
    sets = {role: read_problems(path) for role, path in files.items() if path.exists()}
    check(job.eval == "none" or job.eval in sets, "--set eval" if "eval" in overrides else "rl.eval",
          f"{job.eval} needs {files.get(job.eval)}",
          f"run `dvc repro data@{job.task}` or pass --data")
    init = Path(args.models) / f"{job.init}.pt"
    if not init.exists() and guessed_stage(init) is None:  # no pipeline checkpoint's name (those: rebuild them)
        stems = [p.stem for p in Path(args.models).glob("*.pt") if not p.stem.startswith("verifier_")]
        near = f"base_{job.init}" if f"base_{job.init}" in stems else suggest(job.init, stems)  # init=cot: base_cot
        check(near is None, "--set init" if "init" in overrides else "rl.init", f"no {init.as_posix()}",
              f"did you mean {near!r}? init names a checkpoint by its file stem")
    verifier = Path(args.models) / f"verifier_{job.verifier}.pt" if job.verifier else None
    policy, hist = as_typed(overrides, run_job, job, init, verifier, sets, device, where="--set")
    out = Path(args.out)
    s = write_outputs(policy, job, hist, out / "model.pt", out / "history.csv", out / "summary.json")
    t = timing(hist)
    write_timing(out / "timing.json", t)
    print(f"trained {job.method} (reward {job.reward}) for {len(hist['steps'])} steps in {t['seconds']:.1f} s "
          f"({t['seconds_per_step']:.3f} s/step)")
    for key in ("reward/proxy", "reward/true", "rollout/entropy", "rollout/length", "losses/kl"):
        print(f"  final {key:<16} {s['final'][key]:.4f}")
    if hist["evals"]:
        first, last = hist["evals"][0], hist["evals"][-1]
        if "acc" in last:
            print(f"  eval acc        {first['acc']:.3f} at step 0 -> {last['acc']:.3f} at step {last['step']}")
    print(f"outputs in {out}/")
    return 0
