"""Build the numerics reference set in a fresh clone of this commit and print the md5 of each output, with
the machine line: compare the output with the table of docs/runlogs/machines.md made on other machines.

    python scripts/reference_md5s.py [--rev HEAD] [--keep DIR] [-j 2]
    python scripts/reference_md5s.py --lock dvc.lock     # the same list as a dvc.lock records it, no build

The reference set (docs/runlogs/machines.md): the data, `base@cot`, one RL stage of each method
(grpo, rft, sft from base_cot), the base's evaluation and the exact toy, each built with the committed
params (full size) under the `numerics` setting of params.yaml. About 10 minutes on two cores.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAGES = ["data@hop", "base@cot", "rl@grpo_s0", "rl@rft_s0", "rl@sft_s0", "eval_base@cot", "exact"]
OUTPUTS = ["data/hop_edge.jsonl", "models/base_cot.pt", "models/rl_grpo_s0.pt", "models/rl_rft_s0.pt",
           "models/rl_sft_s0.pt", "reports/eval/hop/base_cot.json", "reports/eval/hop/outcomes_base_cot.csv",
           "reports/rl/hop/grpo_s0.csv", "reports/exact/results.json"]


def md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def recorded(lock_text: str) -> dict[str, str]:
    """{output: its md5 in this dvc.lock text} for every reference output the lock records."""
    import yaml

    stages = (yaml.load(lock_text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}).get("stages", {})
    md5s = {o["path"]: o["md5"] for entry in stages.values() for o in entry.get("outs") or [] if "md5" in o}
    return {out: md5s[out] for out in OUTPUTS if out in md5s}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rev", default="HEAD", help="the commit to build (default: HEAD)")
    ap.add_argument("--keep", help="build here and keep it (default: a temporary folder)")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--lock", help="print what this dvc.lock records for the reference set instead (no build)")
    args = ap.parse_args()
    if args.lock:
        md5s = recorded(Path(args.lock).read_text())
        for out in OUTPUTS:
            print(f"{md5s.get(out, '(not in the lock)')}  {out}")
        return
    where = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="reference_"))
    subprocess.run(["git", "clone", "-q", str(ROOT), str(where)], check=True)
    subprocess.run(["git", "checkout", "-q", args.rev], cwd=where, check=True)
    # the clone's own library, whatever reasonrl is installed
    env = {**os.environ, "PYTHONPATH": str(where)}
    repro = subprocess.run([sys.executable, "-m", "reasonrl.runner.cli", "repro", "-j", str(args.jobs), *STAGES],
                           cwd=where, env=env, capture_output=True, text=True)
    machine = [line.split("] ", 1)[-1] for line in repro.stderr.splitlines() + repro.stdout.splitlines()
               if "] machine " in line]
    if repro.returncode != 0:
        sys.exit(f"reasonrl repro failed ({repro.returncode}):\n{repro.stderr[-3000:]}")
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=where, capture_output=True, text=True).stdout
    timing = json.loads((where / "reports/timing/base_cot.json").read_text())  # what the stage itself ran
    print(f"commit {rev.strip()}; {machine[0] if machine else 'machine line not found'}")
    print(f"base@cot ran on: {timing['machine']}; code paths {timing['numerics']}")
    for out in OUTPUTS:
        print(f"{md5(where / out)}  {out}")


if __name__ == "__main__":
    main()
