"""Stage `eval@<stem>` (and eval_base@, eval_orm@, eval_prm@, eval_headline@): greedy and sampled
accuracy, failure mix, pass@k, distinct answers and entropy of any checkpoint models/<stem>.pt on its
task's in, edge and far test sets -> <out>/<stem>.json (one summary per set), the pass@k curves
<out>/passk_<stem>.csv and the per-problem outcomes <out>/outcomes_<stem>.csv (greedy `correct` and
`sampled` pass@1: what the studies' paired intervals resample). Correctness is verified (answer and trace),
the answer-only value beside it under `<name>_answer` (reasonrl/evaluate.py).

    python stages/eval.py <stem> <out>          # e.g. base_cot reports/eval, rl_grpo_s0 reports/eval
"""

import time

from reasonrl.checkpoint import load_checkpoint
from reasonrl.evaluate import EvalConfig, outcomes_csv, set_report
from reasonrl.io import write_json, write_text
from reasonrl.pipeline import data_path, read_problems, section
from reasonrl.runtime import stage_args, stage_setup, write_timing
from reasonrl.tokens import check_sets_fit

SETS = ("in", "edge", "far")  # roles against the bases' training range (params.yaml, data:)

t0 = time.perf_counter()
params, device, _ = stage_setup()
stem, out = stage_args("<stem> <out>")
cfg = section(params, "eval", EvalConfig)
model, _ = load_checkpoint(f"models/{stem}.pt", device)
sets = {name: read_problems(data_path(model.cfg.task, name)) for name in SETS}
check_sets_fit(model.cfg.max_len, f"models/{stem}.pt", sets)
summaries, rows, curve = {}, [], ["set,k,pass_at_k,pass_at_k_answer,random_baseline"]
for name in SETS:
    summaries[name], set_rows = set_report(model, sets[name], name, cfg)
    rows += set_rows
    s = summaries[name]
    curve += [f"{name},{k},{v:.6f},{s['pass_at_k_answer'][k]:.6f},{s['random_baseline'][k]:.6f}"
              for k, v in s["pass_at_k"].items()]
write_json(f"{out}/{stem}.json", {"N": cfg.passk_N, **summaries})
write_text(f"{out}/passk_{stem}.csv", "\n".join(curve) + "\n")
write_text(f"{out}/outcomes_{stem}.csv", outcomes_csv(rows))
write_timing(f"reports/timing/eval_{stem}.json", {"seconds": round(time.perf_counter() - t0, 2)})
