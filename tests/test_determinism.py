"""Same params, same numbers, however a stage is launched (issue #12).

A tiny base and a tiny RL run go through the real stage scripts as subprocesses with the thread
environment variables unset, set to 1 and set to 2: every output but the wall-clock timings in
reports/timing/ (the checkpoints, the metrics, the RL history and summary) must be the same bytes.
A run with `threads: 2` in params is expected to differ, which shows that the comparison can see a
thread-count change at all (so a stage that obeyed the environment again would fail here).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from reasonrl.runner import malloc

pytestmark = pytest.mark.slow  # seven stage subprocesses: about 40 s of CPU

ROOT = Path(__file__).resolve().parents[1]
THREAD_VARS = ("TORCH_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

PARAMS = """
threads: {threads}
device: cpu
data:
  hop:
    in: {{ns: [8], ks: [3], count: 4, seed: 21}}
    edge: {{ns: [12], ks: [3, 4], count: 4, seed: 21}}
    far: {{ns: [16], ks: [9], count: 2, seed: 21}}
    think: {{ns: [8], ks: [2], count: 2, seed: 31}}
    val_in: {{ns: [12], ks: [3, 4], count: 4, seed: 41}}
    val_edge: {{ns: [16], ks: [3], count: 2, seed: 41}}
    val_far: {{ns: [16], ks: [9], count: 2, seed: 41}}
bases:
  tiny:
    task: hop
    trace: 1.0
    model: {{d_model: 64, n_heads: 2, n_layers: 1, max_len: 96, tied_head: true}}
    train: {{steps: 30, batch_size: 32, lr: 1.0e-3, warmup: 5, min_lr_frac: 0.1, weight_decay: 0.01,
            grad_clip: 1.0, n_range: [4, 8], seed: 0}}
method: grpo
rl:
  init: base_tiny
  method: grpo
  reward: "true"
  guard: false
  len_pen: 0.0
  overlong: 0
  advantage: grpo
  loss_agg: token_mean
  num_iterations: 2
  eps_low: 0.2
  eps_high: 0.2
  beta: 0.05
  kl_estimator: k3
  kl_in: loss
  dynamic_sampling: false
  max_resample: 4
  lr: 1.0e-3
  steps: 4
  B: 8
  G: 4
  n_range: [4, 8]
  k_max: 5
  temperature: 1.0
  seed: 0
  task: hop
  eval: val_in
  eval_every: 2
runs:
  tiny: {{task: hop, init: base_tiny}}
"""


def _env(env_threads: str | None, tcmalloc: bool) -> dict[str, str]:
    """A stage's environment: this one without its thread variables and preloads, then as asked."""
    env = {k: v for k, v in os.environ.items() if k not in (*THREAD_VARS, "LD_PRELOAD")}
    env["PYTHONPATH"] = str(ROOT)
    if env_threads is not None:
        env.update({k: env_threads for k in THREAD_VARS})
    return malloc.environ(env) if tcmalloc else env


def _stage(cwd: Path, env_threads: str | None, *args: str, tcmalloc: bool = False) -> None:
    env = _env(env_threads, tcmalloc)
    proc = subprocess.run([sys.executable, str(ROOT / "stages" / args[0]), *args[1:]], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]


OUTPUTS = ("models/base_tiny.pt", "reports/metrics/base_tiny.json", "models/rl_tiny.pt", "reports/rl/hop/tiny.json",
           "reports/rl/hop/tiny.csv")


def _launch(data: Path, where: Path, env_threads: str | None, threads: int = 1, rl: bool = True,
            tcmalloc: bool = False) -> dict:
    """Base and RL run in a fresh folder sharing the data; everything they computed."""
    shutil.copytree(data, where)
    (where / "params.yaml").write_text(PARAMS.format(threads=threads))
    _stage(where, env_threads, "base.py", "bases.tiny", "base_tiny", tcmalloc=tcmalloc)
    if rl:
        _stage(where, env_threads, "rl.py", "runs", "tiny", tcmalloc=tcmalloc)
    out = {path: (where / path).read_bytes() for path in OUTPUTS if rl or "rl" not in path}
    for name in ("base_tiny", "rl_tiny") if rl else ("base_tiny",):
        blob = torch.load(where / "models" / f"{name}.pt", weights_only=True)
        out[name] = blob["state_dict"]
        out[f"{name} threads"] = blob["threads"]
    assert set(json.loads((where / "reports/timing/base_tiny.json").read_text())) == {
        "seconds", "steps_per_second", "machine", "numerics"}
    return out


def _same_weights(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("det") / "data_only"
    root.mkdir()
    (root / "params.yaml").write_text(PARAMS.format(threads=1))
    _stage(root, None, "data.py", "hop")
    return root


def test_thread_environment_does_not_change_results(data, tmp_path):
    # unset, and set to a value other than the param's (an equal value is the unset case's computation)
    runs = {env: _launch(data, tmp_path / f"env_{env}", env) for env in (None, "2")}
    ref = runs[None]
    assert ref["base_tiny threads"] == ref["rl_tiny threads"] == 1  # what they computed with is recorded
    for env, got in runs.items():
        for path in OUTPUTS:  # bytes: no wall-clock seconds in checkpoints, metrics, histories or summaries
            assert got[path] == ref[path], f"{path} differs with thread variables = {env}"
    history = [line.split(",") for line in ref["reports/rl/hop/tiny.csv"].decode().splitlines()]
    assert not any(c.startswith("time/") for c in history[0])
    assert history[1][1:] != history[-1][1:]  # the run moved: there was something to compare

    # the `threads` param is what decides: two threads change the last bits of this very computation
    two = _launch(data, tmp_path / "param_2", None, threads=2, rl=False)
    assert two["base_tiny threads"] == 2
    assert not _same_weights(two["base_tiny"], ref["base_tiny"])


def test_a_stage_forked_from_a_zygote_writes_the_bytes_of_a_fresh_one(data, tmp_path):
    """`reasonrl repro` forks stages from a zygote that imported torch and the stages' modules before any
    stage pinned its numerics or seeded anything (reasonrl.runner.warm): the base and the RL run must come out as
    the same bytes as from fresh interpreters."""
    from reasonrl.runner.zygotes import Zygote

    fresh = _launch(data, tmp_path / "fresh", None)
    where = tmp_path / "forked"
    shutil.copytree(data, where)
    (where / "params.yaml").write_text(PARAMS.format(threads=1))
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARS} | {"PYTHONPATH": str(ROOT)}
    zygote = Zygote(str(ROOT), env)
    code = ("import sys, reasonrl.runner.warm as w; sys.argv = sys.argv[1:]; "
            "sys.path[0] = sys.argv[0].rsplit('/', 1)[0]; w._run_path(sys.argv[0])")
    try:
        for args in (("base.py", "bases.tiny", "base_tiny"), ("rl.py", "runs", "tiny")):
            read, write = os.pipe()
            zygote.start(code, [str(ROOT / "stages" / args[0]), *args[1:]], str(where), env, write)
            os.close(write)
            with open(read) as f:
                log = f.read()
            assert zygote.returncode(None) == 0, log[-3000:]
    finally:
        zygote.close()
    for path in OUTPUTS:
        assert (where / path).read_bytes() == fresh[path], f"{path} differs when forked"
    for name in ("base_tiny", "rl_tiny"):
        assert _same_weights(torch.load(where / "models" / f"{name}.pt", weights_only=True)["state_dict"], fresh[name])


@pytest.mark.skipif(malloc.library() is None, reason="tcmalloc is not installed (apt install libtcmalloc-minimal4)")
def test_a_stage_on_tcmalloc_writes_the_bytes_of_one_on_glibc(data, tmp_path):
    """`reasonrl repro` preloads tcmalloc into its stages, and the RL step then trims no heap (reasonrl.runner.malloc):
    the base and the RL run (two updates per batch, so glibc's run trims between them) are the same bytes."""
    probe = subprocess.run([sys.executable, "-c", "from reasonrl.runner import malloc; print(malloc.active())"],
                           env=_env(None, tcmalloc=True), capture_output=True, text=True, check=True)
    assert probe.stdout.strip() == "tcmalloc"  # the environment _stage gives the tcmalloc run does preload it
    glibc = _launch(data, tmp_path / "glibc", None)
    tc = _launch(data, tmp_path / "tcmalloc", None, tcmalloc=True)
    for path in OUTPUTS:
        assert tc[path] == glibc[path], f"{path} differs on tcmalloc"
