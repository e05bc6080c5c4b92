"""Stage `eval@<stem>` (and eval_base@, eval_orm@, eval_prm@, eval_headline@): greedy accuracy, failure
mix, pass@k, distinct answers and entropy of any checkpoint models/<stem>.pt on the n = 12 set ->
<out>/<stem>.json, the pass@k curve <out>/passk_<stem>.csv and the per-problem greedy outcomes
<out>/outcomes_<stem>.csv (what the studies' paired intervals resample).

    python stages/eval.py <stem> <out>          # e.g. base_cot_L2 reports/eval, rl_grpo_s0 reports/eval
"""

import time

from reasonrl.evaluate import EvalConfig, greedy_eval, outcomes_csv, sampling_report
from reasonrl.io import write_json, write_text
from reasonrl.model import load_checkpoint
from reasonrl.pipeline import read_problems, section, stage_args, stage_setup

t0 = time.perf_counter()
params, device, _ = stage_setup()
stem, out = stage_args("<stem> <out>")
cfg = section(params, "eval", EvalConfig)
model, _ = load_checkpoint(f"models/{stem}.pt", device)
problems = read_problems("data/n12.jsonl")
greedy, rows = greedy_eval(model, problems, "n12")
report = sampling_report(model, problems, cfg)
write_json(f"{out}/{stem}.json", {
    "greedy": {"acc": greedy["acc"], "by_k": greedy["by_k"]}, "failure_mix": greedy["failure_mix"],
    "pass_at_k": report["pass_at_k"], "random_baseline": report["random_baseline"],
    "distinct_answers": report["distinct_answers"], "entropy": report["entropy"], "N": cfg.passk_N})
rows_k = [f"{k},{v:.6f},{report['random_baseline'][k]:.6f}" for k, v in report["pass_at_k"].items()]
write_text(f"{out}/passk_{stem}.csv", "k,pass_at_k,random_baseline\n" + "\n".join(rows_k) + "\n")
write_text(f"{out}/outcomes_{stem}.csv", outcomes_csv(rows))
write_json(f"reports/timing/eval_{stem}.json", {"seconds": round(time.perf_counter() - t0, 2)})
