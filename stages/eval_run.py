"""Stage `eval@<run>`: greedy accuracy, failure mix, pass@k, distinct answers and entropy of an RL
run's final policy on the n = 12 set -> reports/metrics/run_<run>.json, and its per-problem greedy
outcomes -> reports/outcomes/rl_<run>.csv (what the studies' paired intervals resample)."""

import sys

from reasonrl.evaluate import EvalConfig, greedy_eval, outcomes_csv, sampling_report
from reasonrl.io import write_json, write_text
from reasonrl.model import load_checkpoint
from reasonrl.pipeline import read_problems, section, stage_setup

name = sys.argv[1]
params, device, _ = stage_setup()
cfg = section(params, "eval", EvalConfig)
model, meta = load_checkpoint(f"models/rl_{name}.pt", device)
problems = read_problems("data/n12.jsonl")
greedy, rows = greedy_eval(model, problems, "n12")
report = sampling_report(model, problems, cfg)
write_text(f"reports/outcomes/rl_{name}.csv", outcomes_csv(rows))
write_json(f"reports/metrics/run_{name}.json", {
    "greedy": {"acc": greedy["acc"], "by_k": greedy["by_k"]}, "failure_mix": greedy["failure_mix"],
    "pass_at_k": report["pass_at_k"], "distinct_answers": report["distinct_answers"],
    "entropy": report["entropy"], "N": cfg.passk_N, "train_seconds": round(meta["seconds"], 2)})
