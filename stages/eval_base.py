"""Stage `eval_base@<name>`: greedy accuracy, failure mix and pass@k of base `<name>` on the n = 12 set,
and its per-problem greedy outcomes -> reports/outcomes/base_<name>.csv."""

import sys

from reasonrl.evaluate import EvalConfig, greedy_eval, outcomes_csv, sampling_report
from reasonrl.io import write_json, write_text
from reasonrl.model import load_checkpoint
from reasonrl.pipeline import read_problems, section, stage_setup

name = sys.argv[1]
params, device, _ = stage_setup()
cfg = section(params, "eval", EvalConfig)
model, _ = load_checkpoint(f"models/base_{name}.pt", device)
problems = read_problems("data/n12.jsonl")
greedy, rows = greedy_eval(model, problems, "n12")
report = sampling_report(model, problems, cfg)
write_text(f"reports/outcomes/base_{name}.csv", outcomes_csv(rows))
metrics = {"greedy": {"acc": greedy["acc"], "by_k": greedy["by_k"]}, "failure_mix": greedy["failure_mix"],
           "pass_at_k": report["pass_at_k"], "random_baseline": report["random_baseline"],
           "distinct_answers": report["distinct_answers"], "entropy": report["entropy"], "N": cfg.passk_N}
write_json(f"reports/metrics/eval_base_{name}.json", metrics)
rows = [f"{k},{v:.6f},{report['random_baseline'][k]:.6f}" for k, v in report["pass_at_k"].items()]
write_text(f"reports/eval/passk_base_{name}.csv", "k,pass_at_k,random_baseline\n" + "\n".join(rows) + "\n")
