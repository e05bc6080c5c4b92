"""benchmarks/peer_trl.py without TRL: the interleaving of the contenders, the ratios it prints, and the torch
build it checks."""

import math
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import peer_trl  # noqa: E402


class FakeClock:
    """A clock that moves only when told (no timed assertion)."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_step_run_before_trl_stays_outside_trl_time(monkeypatch):
    wall, cpu = FakeClock(), FakeClock()
    monkeypatch.setattr(peer_trl.time, "perf_counter", wall)
    monkeypatch.setattr(peer_trl.time, "process_time", cpu)
    order = []

    def ours():  # reasonrl's step: 100 s of wall clock, 90 of CPU
        order.append("ours")
        wall.now += 100.0
        cpu.now += 90.0

    timer = peer_trl.StepTimer(before=ours)
    for trl_wall, trl_cpu in ((2.0, 1.5), (3.0, 2.5)):
        timer.begin()
        order.append("trl")
        wall.now += trl_wall
        cpu.now += trl_cpu
        timer.end()
    assert order == ["ours", "trl", "ours", "trl"]
    assert timer.seconds == [2.0, 3.0] and timer.cpu == [1.5, 2.5]


def fake_trl(steps, careful, before, count):
    """What trl_steps does with TRL's step callback: before(), then the step, timed or (the last) counted; each
    step of TRL's runs one (2 x 3) @ (3 x 4) product, 48 FLOPs."""
    timer = peer_trl.StepTimer(before, timed=steps)
    for _ in range(steps + count):
        timer.begin()
        torch.ones(2, 3) @ torch.ones(3, 4)
        timer.end()
    return timer


def test_interleaved_runs_reasonrl_step_k_right_before_trl_step_k_then_counts_one_each(monkeypatch):
    log = []

    def ours(self):  # the pipeline's step: one (5 x 2) @ (2 x 1) product, 20 FLOPs; TRL's work: (4 x 2) @ (2 x 1)
        self.timer.begin()
        log.append("ours" if self.ctx.ref is not None else "noref")
        torch.ones(5 if self.ctx.ref is not None else 4, 2) @ torch.ones(2, 1)
        self.timer.end()

    monkeypatch.setattr(peer_trl.ReasonrlSteps, "__call__", ours)

    def trl(steps, careful, before, count):
        assert careful and count
        return fake_trl(steps, careful, lambda: (before(), log.append("trl")), count)

    runs = peer_trl.interleaved(3, trl)
    assert log == ["ours", "noref", "trl", "noref", "ours", "trl"] * 2  # three timed triples, then the counted one
    assert len(runs["reasonrl_steps"]) == len(runs["reasonrl_noref_steps"]) == len(runs["trl_fp32_steps"]) == 3
    assert runs["reasonrl_flops_per_step"] == 20 and runs["reasonrl_noref_flops_per_step"] == 16
    assert runs["trl_fp32_flops_per_step"] == 48

    def short(steps, careful, before, count):  # TRL timed fewer steps than reasonrl ran: no comparison
        before()
        return fake_trl(steps - 1, careful, before, count)

    with pytest.raises(RuntimeError, match=r"interleaving: 3 \+ 1 reasonrl steps \(timed \+ counted\) against "
                                           r"2 \+ 1 TRL steps"):
        peer_trl.interleaved(3, short)

    def uncounted(steps, careful, before, count):  # TRL ran no counted step: its FLOPs would be nan
        before()
        return fake_trl(steps, careful, before, False)

    with pytest.raises(RuntimeError, match=r"3 \+ 1 reasonrl steps \(timed \+ counted\) against 3 \+ 0 TRL"):
        peer_trl.interleaved(3, uncounted)


def test_a_counted_step_is_not_timed_and_a_timed_one_not_counted(monkeypatch):
    wall, cpu = FakeClock(), FakeClock()
    monkeypatch.setattr(peer_trl.time, "perf_counter", wall)
    monkeypatch.setattr(peer_trl.time, "process_time", cpu)
    timer = peer_trl.StepTimer(timed=1)
    for rows in (1, 2, 3, 5):  # a (rows x 4) @ (4 x 8) product per step, 64 rows FLOPs
        timer.begin()
        torch.ones(rows, 4) @ torch.ones(4, 8)
        wall.now += rows
        cpu.now += rows * 0.5
        timer.end()
    assert timer.seconds == [1.0] and timer.cpu == [0.5]
    assert timer.counted == 3 and timer.flops_per_step() == 64 * (2 + 3 + 5) / 3
    assert math.isnan(peer_trl.StepTimer().flops_per_step())  # nothing counted


def test_a_counted_step_that_raised_leaves_no_counter_behind():
    timer = peer_trl.StepTimer(timed=0)
    with pytest.raises(RuntimeError, match="the step failed"):
        timer.begin()
        torch.ones(2, 3) @ torch.ones(3, 4)
        raise RuntimeError("the step failed")
    timer.stop()  # what trl_steps does after TRL's train() raised
    torch.ones(7, 7) @ torch.ones(7, 7)  # not counted: the counter is gone
    assert timer.counter.shapes == {("matmul", 1, 2, 3, 4): 1} and timer.counted == 0


def test_summary_drops_the_warm_up_step_and_pairs_the_steps():
    runs = {"reasonrl_steps": [9.0, 0.5, 0.4], "trl_fp32_steps": [30.0, 2.5, 2.4],
            "reasonrl_cpu_steps": [9.0, 0.25, 0.25], "trl_fp32_cpu_steps": [30.0, 1.0, 2.0],
            "reasonrl_flops_per_step": 0.9e9, "trl_fp32_flops_per_step": 7.35e9,
            "reasonrl_noref_steps": [8.0, 0.5, 0.3], "reasonrl_noref_cpu_steps": [8.0, 0.2, 0.1],
            "reasonrl_noref_flops_per_step": 0.7e9}
    res = peer_trl.summary(runs)
    # without a reference: 2.45 / 0.4 s; CPU 1.5 / 0.15; pairs 2.5 / 0.5 and 2.4 / 0.3; 7.35 / 0.7 = 10.5x the work, at
    # 3 GFLOP/s against 0.7 / 0.4 = 1.75, so 1.75 / 3 as long per FLOP
    assert res["reasonrl_noref_s_per_step"] == pytest.approx(0.4) and res["ratio_noref"] == pytest.approx(2.45 / 0.4)
    assert res["ratio_noref_cpu"] == pytest.approx(1.5 / 0.15)
    assert res["pair_ratios_noref"] == pytest.approx([5.0, 8.0])
    assert res["flops_ratio_noref"] == pytest.approx(10.5) and res["reasonrl_noref_gflop_s"] == pytest.approx(1.75)
    assert res["per_flop_ratio_noref"] == pytest.approx(1.75 / 3)
    assert res["reasonrl_s_per_step"] == pytest.approx(0.45) and res["trl_fp32_s_per_step"] == pytest.approx(2.45)
    assert res["ratio"] == pytest.approx(2.45 / 0.45)
    assert res["ratio_cpu"] == pytest.approx(1.5 / 0.25)
    assert res["pair_ratios"] == pytest.approx([5.0, 6.0])
    # 7.35 / 0.9 GFLOP: TRL does 8.17x the work, at 7.35 / 2.45 = 3 GFLOP/s against 0.9 / 0.45 = 2, so it takes
    # 2/3 as long per FLOP: 5.44x = 8.17x * 2/3
    assert res["flops_ratio"] == pytest.approx(7.35 / 0.9)
    assert res["reasonrl_gflop_s"] == pytest.approx(2.0) and res["trl_fp32_gflop_s"] == pytest.approx(3.0)
    assert res["per_flop_ratio"] == pytest.approx(2 / 3)


def test_reasonrl_steps_runs_one_pipeline_step_per_call_with_or_without_a_reference():
    ours, noref = peer_trl.ReasonrlSteps(steps=2), peer_trl.ReasonrlSteps(steps=2, reference=False)
    assert ours.ctx.ref is not None and noref.ctx.ref is None
    for _ in range(2):
        ours()
        noref()
    assert len(ours.seconds) == len(ours.cpu) == len(noref.seconds) == 2
    assert ours.ctx.rollouts == noref.ctx.rollouts == 2 * peer_trl.B * peer_trl.G  # two real steps of B x G samples


@pytest.mark.parametrize("version, cuda, requires, why", [
    ("2.13.0+cpu", None, ["torch==2.13.0", "dvc==3.59.1"], None),
    ("2.13.0", None, ["torch == 2.13.0 ; python_version >= '3.11'"], None),
    ("2.13.0+cpu", None, ["torch==2.13.*"], None),
    ("2.14.1", None, ["numpy", "torch==2.13.0"], "torch 2.14.1 is not the project's torch==2.13.0"),
    ("2.13.0", "13.0", ["torch==2.13.0"], "torch 2.13.0 is a CUDA 13.0 build"),
    ("2.14.1", None, None, None),  # the project is not installed: nothing to compare with
])
def test_torch_mismatch(version, cuda, requires, why):
    got = peer_trl.torch_mismatch(version, cuda, requires)
    assert (got is None) if why is None else got.startswith(why)


def test_the_installed_project_pins_the_torch_of_pyproject():
    tomllib = pytest.importorskip("tomllib")
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pinned = next(d for d in deps if d.replace(" ", "").startswith("torch=="))
    assert pinned in peer_trl.project_requires()
    assert peer_trl.torch_mismatch(pinned.split("==")[1], None, peer_trl.project_requires()) is None
