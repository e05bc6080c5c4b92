"""benchmarks/peer_trl.py without TRL: the interleaving of the contenders and the torch pin it checks."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import peer_trl  # noqa: E402


class FakeClock:
    """perf_counter and process_time that move only when told (no timed assertion)."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_step_run_before_trl_stays_outside_trl_time(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(peer_trl.time, "perf_counter", clock)
    monkeypatch.setattr(peer_trl.time, "process_time", clock)
    order = []

    def ours():  # reasonrl's step: 100 s on the fake clock
        order.append("ours")
        clock.now += 100.0

    timer = peer_trl.StepTimer(before=ours)
    for trl_step_seconds in (2.0, 3.0):
        timer.begin()
        order.append("trl")
        clock.now += trl_step_seconds
        timer.end()
    assert order == ["ours", "trl", "ours", "trl"]
    assert timer.seconds == [2.0, 3.0] and timer.cpu == [2.0, 3.0]


def test_reasonrl_steps_runs_one_pipeline_step_per_call():
    ours = peer_trl.ReasonrlSteps(steps=2)
    ours()
    ours()
    assert len(ours.seconds) == len(ours.cpu) == 2
    assert ours.ctx.rollouts == 2 * peer_trl.B * peer_trl.G  # two real steps of B x G samples


def test_torch_pin_is_the_one_pyproject_names():
    tomllib = pytest.importorskip("tomllib")
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pinned = next(d.split("==")[1] for d in deps if d.replace(" ", "").startswith("torch=="))
    assert peer_trl.torch_pin() == pinned
