"""`reasonrl repro`'s progress: stages done / total, the running ones and the time left, from the timing
files of the last run; one updating line on a terminal, plain lines elsewhere. The end-to-end check runs
`reasonrl repro -j 2` on the synthetic pipeline of tests/test_parallel.py under a pseudo-terminal."""

from __future__ import annotations

import io
import json
import os
import pty
import select
import subprocess
import sys
import time

import pytest
import yaml
from test_parallel import REPRO, TIMEOUT, env, make_repo  # noqa: F401  (env: a fixture)

from reasonrl.runner import progress as P


def write_lock(root, entries: dict[str, list[str]]) -> None:
    """A dvc.lock whose stages have these outs."""
    stages = {s: {"cmd": "x", "outs": [{"path": p, "md5": "0"} for p in outs]} for s, outs in entries.items()}
    (root / "dvc.lock").write_text(yaml.safe_dump({"schema": "2.0", "stages": stages}))


def test_expected_seconds_from_timing_files_plus_dvc_overhead(tmp_path):
    write_lock(tmp_path, {"base@a": ["models/a.pt", "reports/timing/base_a.json", "reports/metrics/base_a.json"],
                          "eval@a": ["reports/timing/eval_a.json"], "report": ["reports/r.md"]})
    (tmp_path / "reports/timing").mkdir(parents=True)
    (tmp_path / "reports/metrics").mkdir(parents=True)
    (tmp_path / "reports/timing/base_a.json").write_text(json.dumps({"seconds": 100.0, "steps_per_second": 3}))
    (tmp_path / "reports/timing/eval_a.json").write_text(json.dumps({"seconds": 30.0}))
    (tmp_path / "reports/metrics/base_a.json").write_text(json.dumps({"seconds": 999.0}))  # not a timing file
    lock = str(tmp_path / "dvc.lock")
    got = P.expected_seconds(str(tmp_path), {s: (lock, s) for s in ("base@a", "eval@a", "report", "new@b",
                                                                     "eval@b")})
    # the report ran before without a timing file among its outs: UNTIMED_S; new@b, with no lock entry, takes
    # the median of 100 and 30; eval@b, new too, takes its kind's: eval@a's 30
    assert got == {"base@a": 105.0, "eval@a": 35.0, "report": P.UNTIMED_S + 5.0, "new@b": 70.0, "eval@b": 35.0}
    (tmp_path / "reports/timing/eval_a.json").unlink()  # declared but unreadable: not untimed, an unseen stage
    got = P.expected_seconds(str(tmp_path), {s: (lock, s) for s in ("eval@a", "report")})
    assert got == {"eval@a": 105.0, "report": P.UNTIMED_S + 5.0}
    assert P.expected_seconds(str(tmp_path), {"x": (str(tmp_path / "nolock"), "x")}) == {"x": P.UNKNOWN_S + 5.0}
    (tmp_path / "empty.lock").write_text("schema: '2.0'\n")  # a lock without stages yet
    assert P.expected_seconds(str(tmp_path), {"x": (str(tmp_path / "empty.lock"), "x")}) == {"x": P.UNKNOWN_S + 5.0}


def test_stages_holding_their_committed_outputs_and_the_dry_line(tmp_path):
    """`--dry` also states the time where the stale stages that would reproduce the lock's bytes and already hold
    their outputs come out unchanged (a fresh clone's committed evaluations): deps present with the lock's md5 or
    missing behind a stale upstream, params as locked, every stale upstream reproducing; only files are hashed."""
    import hashlib

    from reasonrl.runner.parallel import dry_estimate
    from reasonrl.runner.plan import Plan

    files = {"src.py": b"code", "a.txt": b"a", "b.txt": b"b", "c.txt": b"c"}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "params.yaml").write_text("x: {y: 1}\nz: 3\n")
    md5 = {name: hashlib.md5(data).hexdigest() for name, data in files.items()}
    f = lambda name, digest=None: {"path": name, "md5": digest or md5.get(name, md5["a.txt"])}  # noqa: E731
    stages = {  # name: (stale upstream, deps, outs, params)
        "model": ([], [f("src.py")], [f("model.pt")], {"x.y": 1}),  # its out is missing: it runs, reproducing
        "held": (["model"], [f("model.pt")], [f("a.txt"), f("b.txt")], {"x.y": 1, "z": 3}),
        "other_out": (["model"], [f("model.pt")], [f("c.txt", md5["a.txt"])], {}),  # present, another md5
        "folder": (["model"], [f("model.pt")], [{"path": "a.txt", "md5": md5["a.txt"] + ".dir", "nfiles": 1}], {}),
        "new_param": (["model"], [f("model.pt")], [f("a.txt")], {"x.y": 2}),
        "edited": ([], [f("src.py", md5["a.txt"])], [f("b.txt")], {}),  # its own dep changed
        "after_edit": (["edited"], [f("b.txt")], [f("c.txt")], {}),  # so its upstream's output will change
        "lost_source": ([], [f("gone.py")], [f("a.txt")], {}),  # missing, and no stale upstream to make it
    }
    lock = {k: {"cmd": "x", "deps": d, "outs": o, **({"params": {"params.yaml": p}} if p else {})}
            for k, (_, d, o, p) in stages.items()}
    (tmp_path / "dvc.lock").write_text(yaml.safe_dump({"schema": "2.0", "stages": lock}))
    locks = {s: (str(tmp_path / "dvc.lock"), s) for s in stages}
    plan = Plan(str(tmp_path), "", {s: up for s, (up, *_) in stages.items()}, locks)
    assert P.holding_outputs(plan) == {"held"}
    # eight untimed stages, 4 + 5 s each: 72 s; with `held` unchanged (0.5 + 5 s): 68.5 s
    assert dry_estimate(plan, 1) == ("8 stale stages: about 72 s of stage time (68 s where the stage that holds "
                                     "its committed outputs comes out unchanged: their upstream rebuilt to the "
                                     "lock's bytes, as on the CPU kind that made them), from the stages' last timing "
                                     "files (a median, or 4 s, where one has none), as a run first estimates its "
                                     "time left")
    assert dry_estimate(plan, 2).startswith("8 stale stages: about 72 s of stage time, 36 s at -j 2 (34 s at -j 2 ")
    (tmp_path / "params.yaml").write_text("x: {y: 1}\nz: 4\n")
    assert P.holding_outputs(plan) == set()
    assert dry_estimate(plan, 1) == ("8 stale stages: about 72 s of stage time, from the stages' last timing files "
                                     "(a median, or 4 s, where one has none), as a run first estimates its time left")


def test_time_left_counts_pending_and_what_running_stages_still_need():
    now = [0.0]
    out = io.StringIO()  # not a terminal: no bar
    prog = P.Progress({"a": 100.0, "b": 60.0, "c": 40.0}, workers=2, file=out, clock=lambda: now[0])
    assert prog.bar is None and prog.left() == 100.0  # (100 + 60 + 40) / 2
    prog.start("a")
    now[0] = 30.0
    assert prog.left() == (70 + 60 + 40) / 2
    now[0] = 130.0  # past its estimate: a running stage adds nothing
    assert prog.left() == (60 + 40) / 2
    assert prog.finish("a") == "[1/3, about 50 s left]"
    assert prog.finish("a") == "[1/3, about 50 s left]"  # counted once
    assert prog.status() == "running: none; about 50 s left"
    prog.start("b")
    prog.start("c")
    assert prog.status().startswith("running: b, c; about")
    prog.write("a line")
    assert out.getvalue() == "a line\n"


def test_time_left_scales_a_kind_by_what_its_finished_stages_took():
    now = [0.0]
    prog = P.Progress({"rl@a": 10.0, "rl@b": 10.0, "rl@c": 20.0, "eval@a": 5.0}, workers=1, file=io.StringIO(),
                      clock=lambda: now[0])
    assert prog.left() == 45.0
    prog.start("rl@a")
    now[0] = 40.0
    # rl@a took 40 s against 10 expected: the other RL stages are now expected at 4x, the eval unchanged
    assert prog.finish("rl@a", 40.0) == "[1/4, about 2 min left]"
    assert prog.left() == 40.0 + 80.0 + 5.0 and prog.estimate("eval@a") == 5.0
    prog.start("rl@b")
    now[0] = 50.0
    assert prog.left() == (40.0 - 10.0) + 80.0 + 5.0  # the running one at its scaled estimate
    prog.finish("rl@b")  # restored from the run-cache, or failed: no seconds, nothing learnt
    assert prog.estimate("rl@c") == 80.0
    prog.finish("rl@c", 10.0)  # (40 + 10) s taken against (10 + 20) expected
    assert prog.taken == {"rl": [50.0, 30.0], "rl@a": [40.0, 10.0], "rl@c": [10.0, 20.0]} and prog.left() == 5.0
    prog.start("eval@a")
    prog.finish("eval@a", 0.0)  # a kind whose stages took no time yet keeps its estimates
    assert prog.estimate("eval@a") == 5.0


def test_an_unseen_stage_takes_its_arms_median_before_its_kinds(tmp_path):
    tmp = tmp_path
    timings = {"rl@grpo_s0": 100.0, "rl@grpo_s1": 120.0, "rl@chain_s0": 400.0, "rl@chain_s1": 500.0,
               "rl@chain_s12": 600.0}
    (tmp / "reports/timing").mkdir(parents=True)
    write_lock(tmp, {s: [f"reports/timing/{s}.json"] for s in timings})
    for s, seconds in timings.items():
        (tmp / f"reports/timing/{s}.json").write_text(json.dumps({"seconds": seconds}))
    lock = str(tmp / "dvc.lock")
    got = P.expected_seconds(str(tmp), {s: (lock, s) for s in ["rl@grpo_s2", "rl@chain_s2", "rl@new_s0", "rl_s1"]})
    # only new stages are stale; the five up to date still teach them. The seeds of an arm: its median (grpo
    # 110, chain 500); a new arm: the kind's (median of all five, 400); `rl_s1` is no foreach stage, so no
    # seed is cut from it: the median of all
    assert {s: got[s] - 5.0 for s in ("rl@grpo_s2", "rl@chain_s2", "rl@new_s0", "rl_s1")} == {
        "rl@grpo_s2": 110.0, "rl@chain_s2": 500.0, "rl@new_s0": 400.0, "rl_s1": 400.0}
    assert [P.arm(s) for s in ("rl@grpo_s3", "rl@grpo_s12", "base@cot", "rl@s1", "report_s1", "sub/dvc.yaml:rl@x_s0",
                               "exp@1/dvc.yaml:train_s2")] == [
        "rl@grpo", "rl@grpo", "base@cot", "rl@s1", "report_s1", "sub/dvc.yaml:rl@x", "exp@1/dvc.yaml:train_s2"]
    assert [P.kind(s) for s in ("rl@grpo_s3", "report", "sub/dvc.yaml:rl@x_s0", "exp@1/dvc.yaml:train")] == [
        "rl", "report", "sub/dvc.yaml:rl", "exp@1/dvc.yaml:train"]


def test_each_dvc_lock_teaches_only_its_own_stages_and_a_malformed_entry_teaches_nothing(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "reports/timing").mkdir(parents=True)
    for name, seconds in (("top", 1000.0), ("sub", 10.0)):
        (tmp_path / f"reports/timing/{name}.json").write_text(json.dumps({"seconds": seconds}))
    write_lock(tmp_path, {"rl@a_s0": ["reports/timing/top.json"]})
    write_lock(tmp_path / "sub", {"rl@a_s0": ["reports/timing/sub.json"]})
    with open(tmp_path / "sub/dvc.lock", "a") as f:  # entries no dvc.lock should hold: skipped, not a crash
        f.write("  broken: 3\n  odd:\n    outs: [7]\n")
    top, sub = str(tmp_path / "dvc.lock"), str(tmp_path / "sub/dvc.lock")
    got = P.expected_seconds(str(tmp_path), {"rl@a_s1": (top, "rl@a_s1"), "sub/dvc.yaml:rl@a_s1": (sub, "rl@a_s1")})
    assert got == {"rl@a_s1": 1005.0, "sub/dvc.yaml:rl@a_s1": 15.0}


def test_a_new_arm_takes_its_nearest_siblings_median_before_its_kinds(tmp_path):
    timings = {"passk@cGRPO_edge_s0": 400.0, "passk@cGRPO_edge_s1": 380.0, "passk@base_s0": 70.0,
               "passk@base_s1": 60.0, "passk@GRPO_edge_s0": 72.0, "rl_noeval@chainedge_edge_s0": 150.0,
               "rl_noeval@chainedge_edge_s1": 160.0, "rl_noeval@zero_think2_s0": 200.0}
    (tmp_path / "reports/timing").mkdir(parents=True)
    write_lock(tmp_path, {s: [f"reports/timing/{s}.json"] for s in timings})
    for s, seconds in timings.items():
        (tmp_path / f"reports/timing/{s}.json").write_text(json.dumps({"seconds": seconds}))
    lock = str(tmp_path / "dvc.lock")
    new = ["passk@cGRPO_ver_s0", "rl_noeval@chainver_edge_s0", "passk@cbx_s0"]
    got = P.expected_seconds(str(tmp_path), {s: (lock, s) for s in new})
    # cGRPO_ver shares "cGRPO_" with cGRPO_edge (median 390), chainver "chain" with chainedge (155); cbx shares
    # only "c" (under SIBLING_CHARS = 4) with anything, so it takes the kind's median: 72 of 400, 380, 70, 60, 72
    assert {s: got[s] - P.DVC_OVERHEAD_S for s in new} == {"passk@cGRPO_ver_s0": 390.0,
                                                           "rl_noeval@chainver_edge_s0": 155.0,
                                                           "passk@cbx_s0": 72.0}
    assert P.sibling("rl@grpo_lr9", ["rl@grpo", "rl@grpo_lr", "eval@grpo_lr9"]) == "rl@grpo_lr"  # longest, its kind
    assert P.sibling("rl@grpohi", ["rl@grpo_lr", "rl@grpo"]) == "rl@grpo"  # a tie of 4: the first in sorted order
    assert P.sibling("rl@grpo", ["rl@grpo", "rl@x"]) == "rl@grpo" and P.sibling("report", ["report"]) == "report"


def test_an_arm_with_evidence_scales_by_its_own_not_by_its_kinds():
    now = [0.0]
    prog = P.Progress({"rl@hop_s0": 10.0, "rl@hop_s1": 10.0, "rl@chain_s0": 10.0, "rl@chain_s1": 10.0,
                       "rl@new_s0": 10.0}, workers=1, file=io.StringIO(), clock=lambda: now[0])
    prog.start("rl@chain_s0")
    now[0] = 40.0
    prog.finish("rl@chain_s0", 40.0)  # the chain arm at 4x: its other seed at 4x, the other arms too (the kind)
    assert [prog.estimate(s) for s in ("rl@chain_s1", "rl@hop_s1", "rl@new_s0")] == [40.0, 40.0, 40.0]
    prog.start("rl@hop_s0")
    prog.finish("rl@hop_s0", 10.0)  # the hop arm at 1x: its seed back at 1x; chain keeps 4x; a new arm (50 / 20)
    assert [prog.estimate(s) for s in ("rl@chain_s1", "rl@hop_s1", "rl@new_s0")] == [40.0, 10.0, 25.0]
    prog.start("rl@hop_s1")
    now[0] += 30.0  # a running seed past its estimate is evidence for its arm (30 s against 10)
    assert prog.estimate("rl@hop_s0") == 20.0  # (10 + 30) s against (10 + 10)


def test_a_running_stage_past_its_estimate_scales_its_kind_before_it_finishes():
    now = [0.0]
    prog = P.Progress({"passk@a": 100.0, "passk@b": 100.0, "passk@c": 100.0, "eval@a": 10.0}, workers=1,
                      file=io.StringIO(), clock=lambda: now[0])
    prog.start("passk@a")
    now[0] = 100.0  # at its estimate, not past it: nothing learnt yet
    assert prog.left() == 0.0 + 100.0 + 100.0 + 10.0
    now[0] = 300.0  # 3x its estimate and still running: the other pass@k stages are expected at 3x
    assert prog.estimate("passk@b") == 300.0 and prog.estimate("eval@a") == 10.0
    assert prog.left() == 0.0 + 300.0 + 300.0 + 10.0
    prog.finish("passk@a", 400.0)  # finished at 4x: the finished record takes over
    assert prog.estimate("passk@b") == 400.0
    prog.start("passk@b")
    now[0] = 500.0  # passk@b 200 s in, under its 100 s x 4: a lower bound below 4x lowers nothing
    assert prog.estimate("passk@c") == 400.0
    now[0] = 900.0  # passk@b 600 s in, past its 400: (400 + 600) s against (100 + 100) expected
    assert prog.estimate("passk@c") == 500.0 and prog.left() == 0.0 + 500.0 + 10.0
    prog.finish("passk@b", 600.0)
    prog.start("passk@b")  # a start event that arrives after its finish: not running again
    assert prog.running == {}
    zero = P.Progress({"x@a": 100.0, "x@b": 100.0}, workers=1, file=io.StringIO(), clock=lambda: now[0])
    zero.start("x@a")
    zero.finish("x@a", 0.0)  # a kind whose finished stage took no time keeps scale 1 ...
    zero.start("x@b")
    now[0] += 150.0  # ... and a running one past it raises it, never lowers it below 1: max(1, 150 / 200)
    assert zero.estimate("x@b") == 100.0


def test_only_a_stage_that_ran_teaches_its_kind():
    from reasonrl.runner.parallel import _Reporter

    seen = []

    class Recording(P.Progress):
        def finish(self, stage, seconds=None):
            seen.append((stage, seconds))
            return "[n]"

    reporter = _Reporter(Recording({"a": 1.0}, workers=1, file=io.StringIO()))
    for status in ("ran", "restored", "unchanged"):
        reporter.report({"stage": status, "status": status, "seconds": 7.0, "worker": "w"})
    reporter.report({"stage": "f", "status": "FAILED", "returncode": 1, "tail": "x"})
    reporter.report({"stage": "s", "status": "skipped", "reason": "x"})
    assert seen == [("ran", 7.0), ("restored", None), ("unchanged", None), ("f", None), ("s", None)]


def test_durations_read_as_a_person_would_say_them():
    assert [P.fmt_duration(s) for s in (4, 89, 90, 725, 3599, 3600, 7500)] == [
        "4 s", "89 s", "2 min", "12 min", "1 h 00 min", "1 h 00 min", "2 h 05 min"]


def read_all(master: int, wait: float = 0.5) -> str:
    chunks = []
    while select.select([master], [], [], wait)[0]:
        try:
            data = os.read(master, 65536)
        except OSError:  # the other end closed
            break
        if not data:
            break
        chunks.append(data)
    return b"".join(chunks).decode(errors="replace")


def read_for(master: int, seconds: float) -> str:
    """What arrives on the terminal in the next `seconds` (a line that redraws itself is never quiet)."""
    chunks, end = [], time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        if select.select([master], [], [], left)[0]:
            chunks.append(os.read(master, 65536))
    return b"".join(chunks).decode(errors="replace")


def test_on_a_terminal_one_line_updates_in_place():
    master, slave = pty.openpty()
    with os.fdopen(slave, "w") as term:
        prog = P.Progress({"a": 10.0, "b": 10.0}, workers=1, file=term, clock=lambda: 0.0)
        assert prog.bar is not None
        prog.start("a")
        prog.finish("a")
        prog.close()
        text = read_all(master)
    os.close(master)
    assert "1/2 stages" in text and "about 10 s left" in text and "running: a" in text
    assert "\r" in text  # the same line is redrawn, not a new line per update


def test_on_a_terminal_the_line_runs_down_between_events_and_never_shows_a_finished_stage_running(monkeypatch):
    monkeypatch.setattr(P, "REDRAW_S", 0.05)
    now = [0.0]
    master, slave = pty.openpty()
    with os.fdopen(slave, "w") as term:
        prog = P.Progress({"a": 600.0, "b": 600.0}, workers=1, file=term, clock=lambda: now[0])
        prog.start("a")
        first = read_for(master, 0.6)  # at least a few redraws even on a loaded machine
        now[0] = 480.0  # no event: only the redraw can show that a is 8 min in
        later = read_for(master, 0.6)
        prog.finish("a", 480.0)
        done = read_for(master, 0.6)
        prog.close()
        assert not prog._redrawer.is_alive()  # closed: the redraws have stopped
        read_all(master)
    os.close(master)
    assert "0/2 stages" in first and "running: a; about 20 min left" in first
    assert "running: a; about 12 min left" in later  # (120 left of a + 600 of b) / 1 worker
    assert "| , " not in first + later + done  # the status follows the bar, with no stray separator
    frames = done.split("\r")
    assert any("1/2 stages" in f and "running: none; about 10 min left" in f for f in frames)  # b, another kind
    assert not any("1/2 stages" in f and "running: a" in f for f in frames)


def test_no_redraw_starts_before_a_stage_does_nor_after_the_bar_closed():
    master, slave = pty.openpty()
    with os.fdopen(slave, "w") as term:
        prog = P.Progress({"a": 10.0}, workers=1, file=term, clock=lambda: 0.0)
        assert prog._redrawer is None  # a runner that fails before its first stage has nothing to stop
        prog.close()
        prog.start("a")  # a late event after the end
        assert prog._redrawer is None
        read_all(master)
    os.close(master)


def test_on_a_terminal_lines_print_above_the_bar_and_it_closes():
    master, slave = pty.openpty()
    with os.fdopen(slave, "w") as term:
        prog = P.Progress({"a": 10.0}, workers=1, file=term, clock=lambda: 0.0)
        prog.write("[12:00:00] FAILED   a")
        prog.finish("a")
        prog.close()
        assert prog.bar.disable  # closed
        text = read_all(master)
    os.close(master)
    assert "[12:00:00] FAILED   a" in text and "1/1 stages" in text


def test_width_follows_the_terminal_or_stands_in_for_a_zero_size():
    import fcntl
    import struct
    import termios

    master, slave = pty.openpty()
    with os.fdopen(slave, "w") as term:
        assert P._width(term) == {"ncols": 120, "nrows": 20}  # a fresh pty reports 0 x 0
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
        assert P._width(term) == {"dynamic_ncols": True}
    os.close(master)
    assert P._width(io.StringIO()) == {"ncols": 120, "nrows": 20}  # no terminal at all


def run_under_pty(cmd: list[str], cwd) -> tuple[int, str]:
    """Run cmd with stdin, stdout and stderr on a pseudo-terminal; its exit status and everything it wrote."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(cmd, cwd=cwd, stdin=slave, stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)
    chunks, deadline = [], time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        try:
            data = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return proc.wait(TIMEOUT), b"".join(chunks).decode(errors="replace")


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_repro_on_a_terminal_shows_done_over_total_and_time_left(tmp_path, env):  # noqa: F811
    repo = make_repo(tmp_path, seconds=0.5)
    code, text = run_under_pty([sys.executable, "-c", REPRO, "-j", "2"], repo)
    assert code == 0, text
    assert "3/3 stages" in text and "left" in text  # the bar: done / total and the estimate
    assert "start    sleep@a" not in text  # no line per stage on a terminal, only the bar and the summary
    assert "summary" in text and "3 ran" in text


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_repro_piped_writes_plain_lines_with_the_count(tmp_path, env):  # noqa: F811
    repo = make_repo(tmp_path, seconds=0.2)
    out = subprocess.run([sys.executable, "-c", REPRO, "-j", "2"], cwd=repo, capture_output=True, text=True,
                         timeout=TIMEOUT)
    assert out.returncode == 0, out.stderr
    assert "\r" not in out.stderr and "stages |" not in out.stderr  # no bar in a file
    finished = [line for line in out.stderr.splitlines() if "finished " in line]
    assert len(finished) == 3 and finished[-1].endswith("[3/3, about 0 s left]")
    assert "start    sleep@a" in out.stderr


def test_defaults_write_to_stderr_and_count_at_least_one_worker(capsys):
    prog = P.Progress({"a": 10.0, "b": 30.0}, workers=0, clock=lambda: 0.0)
    assert prog.workers == 1 and prog.left() == 40.0
    prog.write("a line")
    assert capsys.readouterr().err == "a line\n"
