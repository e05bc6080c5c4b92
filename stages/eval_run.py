"""Stage `eval@<run>`: greedy accuracy, failure mix, pass@k, distinct answers and entropy of an RL
run's final policy on the n = 12 set -> reports/metrics/run_<run>.json."""

import sys

from reasonrl.evaluate import EvalConfig, failure_mix, greedy_accuracy, sampling_report
from reasonrl.io import write_json
from reasonrl.model import load_checkpoint
from reasonrl.pipeline import read_problems, section, stage_setup

name = sys.argv[1]
params, device, _ = stage_setup()
cfg = section(params, "eval", EvalConfig)
model, meta = load_checkpoint(f"models/rl_{name}.pt", device)
problems = read_problems("data/n12.jsonl")
report = sampling_report(model, problems, cfg)
write_json(f"reports/metrics/run_{name}.json", {
    "greedy": greedy_accuracy(model, problems), "failure_mix": failure_mix(model, problems),
    "pass_at_k": report["pass_at_k"], "distinct_answers": report["distinct_answers"],
    "entropy": report["entropy"], "N": cfg.passk_N, "train_seconds": round(meta["seconds"], 2)})
