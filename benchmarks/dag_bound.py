"""The whole DAG against its compute bound: the model FLOPs every stage of a run needed, divided by what
two workers could do at this machine's matmul rate, against the run's measured wall clock.

    python benchmarks/dag_bound.py docs/runlogs/testbed_run_part1.log [more parts of the same build]

Run it in a built workspace (it reads params.yaml, data/*.jsonl and reports/rl/<task>/*.csv). The stages are the
`finished <stage> ... (ran)` lines of the logs; for each, its FLOPs come from the params and the sequence
lengths it worked on, counted as model FLOPs: 2 x the weights of every matrix product per token, plus the
causal attention's two products (4 d per attended position per layer), a forward once per token of each
sequence, a training step three times that, with a prompt shared by a group of samples counted once (as
the fast paths compute it). Padding, repeated work and everything that is not a matrix product count
nothing, so this is a lower bound on the work and the bound below is an upper bound on the speed.

- sequence lengths: evaluation sets and base training from the problems' prompt and gold response (a
  sampled response is taken as long as the gold one), RL rollouts from each run's recorded mean response
  length and rollout count per step (reports/rl/<task>/<run>.csv);
- per stage kind: base / mixed training steps; verifier sampling and training; RL rollout, update(s),
  reference forward (all rows when beta > 0, else the KL record's groups), the learned reward's forward,
  the in-training evaluations; eval@ greedy + passk_N samples + entropy samples on in / edge / far;
  passk@ N samples of each problem it measures (its sets, `eval.problems` of each); data, exact and
  report stages count 0 (no transformer; seconds each).
- the rate: single-thread `torch.mm` at the model's own product shapes (4,096 rows), median of 5, under
  the same numerics pin as the stages.

Prints a markdown table per stage kind and the totals: DAG FLOPs, bound = FLOPs / (2 x rate), wall clock,
and wall / bound.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import statistics
import sys
from collections import Counter, defaultdict
from functools import cache
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # roofline.py's recording of products
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))  # wallclock.py's reading of a log

from wallclock import timeline  # noqa: E402

from reasonrl import numerics  # noqa: E402
from reasonrl.rl.layout import KL_GROUPS  # noqa: E402  (each plan's kl_groups: the KL record's groups at beta 0)
from reasonrl.rl.run import THINK_SAMPLES  # noqa: E402  (samples per problem of a think-profile evaluation)
from reasonrl.studies.answers import EVAL_SETS  # noqa: E402  (what eval@ reads)


class Model:
    """Model FLOPs of a d x L transformer with vocabulary V."""

    def __init__(self, d: int, layers: int, vocab: int):
        self.per_token = layers * 24 * d * d + 2 * d * vocab  # qkv 3d^2, out d^2, MLP 8d^2: x2 FLOPs each
        self.attn = 2 * layers * d  # x 2 products x (positions attended)

    def seq(self, length: float) -> float:
        """One causal forward over `length` tokens."""
        return length * self.per_token + self.attn * length * (length + 1)

    def group(self, prompt: float, response: float, n: int) -> float:
        """n samples of `response` tokens after one shared prompt."""
        return self.seq(prompt) + n * (self.seq(prompt + response) - self.seq(prompt))


def check_against_recorded(m: Model, cfg: dict, length: int = 40) -> tuple[float, float]:
    """(closed form, recorded) FLOPs of one forward over `length` tokens of the params' model: products
    recorded by benchmarks/roofline.py's dispatch mode. Attention is compared at its computed size (SDPA
    computes the full T x T square in a forward without a cache; the closed form counts the causal half)."""
    import torch
    from roofline import MatmulShapes, shape_flops

    from reasonrl.model import ModelConfig, TinyReasoner

    model = TinyReasoner(ModelConfig(**cfg), generator=torch.Generator().manual_seed(0)).eval()
    with torch.inference_mode(), MatmulShapes() as seen:
        model(torch.ones(1, length, dtype=torch.long))
    recorded = shape_flops(seen.shapes, ("matmul",)) + shape_flops(seen.shapes, ("attention",)) * (length + 1) / (
        2 * length)
    return m.seq(length), recorded


@cache
def problems(task: str, role: str, m: int | None = None) -> list[tuple[int, int]]:
    """(prompt, gold response) lengths of data/<task>_<role>.jsonl, or of the m problems a pass@k stage
    measures of it (`passk_eval.subset`; None: all)."""
    from reasonrl.studies.passk_eval import subset
    from reasonrl.tasks import get_task

    t = get_task(task)
    probs = [t.from_dict(json.loads(line)) for line in Path(f"data/{task}_{role}.jsonl").read_text().splitlines()]
    return [(len(p.prompt), len(p.target("cot"))) for p in subset(probs, m)]


def drawn(task: str, spec: dict, trace: float = 1.0, n: int = 2000) -> tuple[float, float]:
    """Mean (prompt, target) lengths of n problems drawn from a difficulty spec, a share `trace` with the
    trace in the target."""
    from reasonrl.tasks import get_task

    t, rng = get_task(task), random.Random(0)
    ps = [t.sample(rng, spec) for _ in range(n)]
    return (statistics.fmean(len(p.prompt) for p in ps),
            statistics.fmean(trace * len(p.target("cot")) + (1 - trace) * len(p.target("direct")) for p in ps))


def spec_of(train: dict) -> dict:
    return {k: train[k] for k in ("n_range", "k_min", "k_max") if train.get(k) is not None}


def base_flops(models: dict, entry: dict) -> float:
    m, train = models[entry["task"]], entry["train"]
    prompt, target = drawn(entry["task"], spec_of(train), entry.get("trace", 1.0))
    return train["steps"] * train["batch_size"] * 3 * m.seq(prompt + target)


def verifier_flops(models: dict, entry: dict, task: str) -> float:
    m, spec = models[task], spec_of(entry)
    prompt, response = drawn(task, spec)
    return (entry["problems"] * m.group(prompt, response, entry["samples"])
            + entry["steps"] * entry["batch_size"] * 3 * m.seq(prompt + response))


def rl_flops(models: dict, job: dict, history: Path, eval_sets: dict) -> float:
    m = models[job["task"]]
    prompt, gold = drawn(job["task"], spec_of(job))
    rows = list(csv.DictReader(history.open())) if history.exists() else []
    steps = rows or [{"rollout/length": gold, "rollout/count": job["B"] * job["G"]}] * job["steps"]
    total = 0.0
    for row in steps:
        length, count = float(row["rollout/length"]), float(row["rollout/count"])
        rollout = count / job["G"] * m.group(prompt, length, job["G"])
        batch = job["B"] * m.group(prompt, length, job["G"])
        ref = batch if job["beta"] > 0 else batch * min(1.0, KL_GROUPS / job["B"])
        # a learned reward scores every drawn sample (dynamic sampling draws more than B x G)
        reward = count * m.seq(prompt + length) if job["reward"] in ("orm", "prm_full") else 0.0
        total += rollout + 3 * job["num_iterations"] * batch + ref + reward
    if job["eval"] != "none":  # at step 0, every eval_every steps and after the last (a budget can end it early)
        n = len(steps)
        evals = 1 + n // job["eval_every"] + (1 if n % job["eval_every"] else 0)
        probs = eval_sets[job["eval"]]
        n = THINK_SAMPLES if job["eval"] == "think" else 1
        total += evals * sum(m.group(p, r, n) for p, r in probs)
    return total


def eval_flops(models: dict, task: str, ev: dict) -> float:
    m = models[task]
    return sum(m.group(p, r, ev["passk_N"]) + (1 + ev["entropy_samples"]) * m.seq(p + r)
               for role in EVAL_SETS for p, r in problems(task, role))


def passk_flops(models: dict, entry: dict, cfg: dict) -> float:
    """N samples of every problem the stage measures: the model's own sets (a second draw: edge alone) and
    `eval.problems` of each (248 of 1,000 in the confirmatory design)."""
    m = models[entry["task"]]
    return sum(m.group(p, r, cfg["eval"]["passk_N"]) for role in entry.get("sets") or cfg["sets"]
               for p, r in problems(entry["task"], role, cfg["eval"].get("problems")))


def stage_flops(params: dict, m: dict) -> dict:
    """stage kind -> (stage -> FLOPs) for every stage kind with model work."""
    rl = params["rl"]

    def job(entry: dict, method: str | None = None) -> dict:
        return {**rl, **entry, **({"method": method} if method else {})}

    def eval_sets(task: str) -> dict:
        return {r: problems(task, r) for r in ("val_in", "val_edge", "val_far", "think")}

    def run(group: dict, name: str, method: str | None = None) -> float:
        j = job(group[name], method)
        return rl_flops(m, j, Path(f"reports/rl/{j['task']}/{name}.csv"), eval_sets(j["task"]))

    def task_of_model(stem: str) -> str:
        for prefix, group in (("base_", params["bases"]), ("mixed_p1_", params["mixed"]["phase1"]),
                              ("mixed_", params["mixed"]["phase2"])):
            if stem.startswith(prefix) and stem[len(prefix):] in group:
                return group[stem[len(prefix):]]["task"]
        name = stem.removeprefix("rl_")
        for g in ("runs", "runs_noeval", "runs_orm", "runs_prm", "headline"):
            if name in params.get(g, {}):
                return job(params[g][name])["task"]
        raise KeyError(stem)

    ev = params["eval"]
    return {
        "base": lambda k: base_flops(m, params["bases"][k]),
        "mixed_p1": lambda k: base_flops(m, params["mixed"]["phase1"][k]),
        "mixed": lambda k: base_flops(m, params["mixed"]["phase2"][k]),
        "verifier": lambda k: verifier_flops(m, params["verifiers"][k],
                                             params["bases"][params["verifiers"][k]["init"]]["task"]),
        "rl": lambda k: run(params["runs"], k),
        "rl_noeval": lambda k: run(params["runs_noeval"], k),
        "rl_orm": lambda k: run(params["runs_orm"], k),
        "rl_prm": lambda k: run(params["runs_prm"], k),
        "rl_headline": lambda k: run(params["headline"], k, params["method"]),
        "eval_base": lambda k: eval_flops(m, params["bases"][k]["task"], ev),
        "eval": lambda k: eval_flops(m, task_of_model(f"rl_{k}"), ev),
        "eval_orm": lambda k: eval_flops(m, task_of_model(f"rl_{k}"), ev),
        "eval_prm": lambda k: eval_flops(m, task_of_model(f"rl_{k}"), ev),
        "eval_headline": lambda k: eval_flops(m, task_of_model(f"rl_{k}"), ev),
        "passk": lambda k: passk_flops(m, params["passk"]["models"][k], params["passk"]),
    }


def matmul_rate(d: int, vocab: int, rows: int = 4096, reps: int = 5) -> float:
    """FLOP/s of single-thread torch.mm over the model's product shapes (timed as roofline.py times a phase's
    limit)."""
    import torch
    from roofline import mm_seconds, shape_flops

    torch.set_num_threads(1)
    shapes = Counter(("matmul", 1, rows, k, n) for k, n in ((d, 3 * d), (d, d), (d, 4 * d), (4 * d, d), (d, vocab)))
    return shape_flops(shapes) / mm_seconds(shapes, reps)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("logs", nargs="+")
    ap.add_argument("--workers", type=int, default=2)
    numerics.add_argument(ap)
    args = ap.parse_args()
    numerics.pin(args.numerics)
    from reasonrl.tasks import get_task, vocab_size

    params = yaml.safe_load(Path("params.yaml").read_text())
    shapes = {b["task"]: b["model"] for b in params["bases"].values()}
    if any(b["model"] != shapes[b["task"]] for b in params["bases"].values()):
        raise SystemExit("the bases of a task differ in shape: count each base's model on its own")
    models = {t: Model(shapes[t]["d_model"], shapes[t]["n_layers"], vocab_size(get_task(t))) for t in shapes}
    for task, shape in shapes.items():
        closed, recorded = check_against_recorded(models[task], {**shape, "task": task})
        if abs(closed - recorded) > 1e-6 * recorded:
            raise SystemExit(f"{task}: closed-form FLOPs {closed:.0f} != recorded {recorded:.0f}")
    counters = stage_flops(params, models)
    shape = shapes["hop"]
    ran, wall = timeline(args.logs)
    kinds: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for stage, seconds in ran:
        kind, _, key = stage.partition("@")
        kinds[kind].append((counters[kind](key) if kind in counters else 0.0, seconds))
    rate = matmul_rate(shape["d_model"], vocab_size(get_task("hop")))
    print(f"matmul rate, one thread: {rate / 1e9:.1f} GFLOP/s ({numerics.machine()}); closed form = recorded "
          f"products on one forward of each task's model\n")
    print("| stage kind | stages | TFLOP | stage seconds | achieved GFLOP/s | share of the rate |")
    print("|---|---:|---:|---:|---:|---:|")
    total_f = total_s = 0.0
    for kind, rows in sorted(kinds.items(), key=lambda kv: -sum(s for _, s in kv[1])):
        f, s = sum(r[0] for r in rows), sum(r[1] for r in rows)
        total_f, total_s = total_f + f, total_s + s
        print(f"| `{kind}` | {len(rows)} | {f / 1e12:,.2f} | {s:,.0f} | {f / s / 1e9:,.1f} | {f / s / rate:.2f} |")
    bound = total_f / (args.workers * rate)
    print(f"| all | {len(ran)} | {total_f / 1e12:,.2f} | {total_s:,.0f} | {total_f / total_s / 1e9:,.1f} | "
          f"{total_f / total_s / rate:.2f} |")
    print(f"\ncompute bound on {args.workers} workers: {bound:,.0f} s ({bound / 60:.1f} min); wall clock "
          f"{wall:,.0f} s ({wall / 60:.1f} min); wall / bound = {wall / bound:.1f}x")


if __name__ == "__main__":
    main()
