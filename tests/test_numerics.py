"""The `numerics` param pins the math libraries' code paths, and the pinning takes effect.

A computation in fresh processes: two settings that pick different GEMM kernels give different bytes,
the same setting twice gives the same bytes, and the code paths each process reports are the asked ones.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from reasonrl import numerics
from reasonrl.checkpoint import load_blob, save_checkpoint
from reasonrl.errors import ConfigError
from reasonrl.model import ModelConfig, TinyReasoner

ROOT = Path(__file__).resolve().parents[1]

# One training step of a small model plus a bare odd-shaped matmul: every dispatcher the stages meet.
PROBE = """
import hashlib, json, sys
import torch
from reasonrl import numerics
took = numerics.pin(sys.argv[1])
torch.set_num_threads(1)
from reasonrl.model import ModelConfig, TinyReasoner
g = torch.Generator().manual_seed(0)
model = TinyReasoner(ModelConfig(d_model=64, n_heads=2, n_layers=2, max_len=48), generator=g)
x = torch.randint(3, 20, (16, 40), generator=g)
loss = model(x).logsumexp(-1).mean()
loss.backward()
a, b = torch.randn(67, 129, generator=g), torch.randn(129, 93, generator=g)
h = hashlib.md5((a @ b).numpy().tobytes())
for p in model.parameters():
    h.update(p.grad.numpy().tobytes())
print(json.dumps({"md5": h.hexdigest(), "took": took}))
"""


def probe(setting: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in numerics.VARIABLES}
    out = subprocess.run([sys.executable, "-c", PROBE, setting], cwd=ROOT, env=env, capture_output=True, text=True,
                         check=True, timeout=120).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_pinning_takes_effect_in_a_fresh_process():
    avx2, again, compatible = probe("avx2"), probe("avx2"), probe("compatible")
    assert avx2["md5"] == again["md5"]
    assert avx2["md5"] != compatible["md5"]  # MKL's SSE2 branch sums without FMA: other last bits
    assert avx2["took"]["aten"] == compatible["took"]["aten"] == "AVX2"
    assert avx2["took"]["onednn"] == "AVX2"
    assert compatible["took"]["mkl"] == "COMPATIBLE"
    assert avx2["took"]["mkl"] in ("AVX2", "AUTO")  # AUTO: MKL refused its AVX2 branch (a non-Intel CPU)


def test_pinning_after_a_computation_is_refused():
    code = "import torch; torch.ones(4).sum(); from reasonrl import numerics; numerics.pin('avx2')"
    env = {k: v for k, v in os.environ.items() if k not in numerics.VARIABLES}
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    if probe("native")["took"]["aten"] == "AVX2":
        pytest.skip("this CPU's own capability is AVX2: nothing to tell apart")
    assert proc.returncode != 0
    assert "numerics: avx2 was pinned after the first computation (ATen already runs" in proc.stderr


def test_mkl_started_before_the_pin_is_refused():
    # MKL starts at its first call (here the CNR query itself) and reads MKL_CBWR then; no tensor is computed,
    # so ATen's check passes and MKL's must catch it
    code = ("from reasonrl import numerics; numerics._torch_cpu_library().mkl_serv_cbwr_get(1); "
            "numerics.pin('avx2')")
    env = {k: v for k, v in os.environ.items() if k not in numerics.VARIABLES}
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "numerics: avx2 was pinned after the first computation (MKL started without it)" in proc.stderr


def test_a_second_setting_in_one_process_is_refused():
    # conftest pinned the default before any test computed
    assert numerics.current() == numerics.DEFAULT
    assert numerics.pin(numerics.DEFAULT)["aten"] == "AVX2"  # the same setting again is fine
    with pytest.raises(ConfigError, match=r"^numerics: compatible was pinned after the first computation "
                                          r"\(this process already pinned avx2\)"):
        numerics.pin("compatible")
    assert os.environ["MKL_CBWR"] == "AVX2"  # refused before it touched the environment


def test_a_cpu_without_avx2_is_one_error_naming_the_param(monkeypatch):
    monkeypatch.setattr(numerics, "effective", lambda: {"aten": "DEFAULT", "mkl": "AUTO", "onednn": "AVX2"})
    with pytest.raises(ConfigError, match=r"^numerics: avx2 needs a CPU with AVX2, and this one has only DEFAULT"):
        numerics.pin("avx2")
    assert os.environ["ATEN_CPU_CAPABILITY"] == "avx2"  # the variables stay as the pinned setting left them


def test_an_unknown_setting_names_the_key():
    with pytest.raises(ConfigError, match=r"^numerics: must be one of avx2, compatible, native, got 'avx512'"):
        numerics.check_numerics("avx512")


def test_native_removes_the_variables(monkeypatch):
    monkeypatch.setattr(numerics, "effective", lambda: {"aten": "AVX512", "mkl": "OFF", "onednn": "native"})
    monkeypatch.setattr(numerics, "_pinned", None)
    for name in numerics.VARIABLES:
        monkeypatch.setenv(name, "x")
    numerics.pin("native")
    assert not set(numerics.VARIABLES) & set(os.environ)
    assert numerics.current() == "native"


def test_a_checkpoint_stores_the_setting(tmp_path):
    model = TinyReasoner(ModelConfig(d_model=32, n_heads=2, n_layers=1, max_len=32), torch.Generator().manual_seed(0))
    save_checkpoint(tmp_path / "m.pt", model, {"kind": "base"})
    assert load_blob(tmp_path / "m.pt")["numerics"] == numerics.DEFAULT


def test_the_machine_line_names_cpu_and_torch():
    line = numerics.machine()
    assert f"torch {torch.__version__}" in line and "CPU capability AVX2" in line
