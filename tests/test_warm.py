"""Warm stage processes (reasonrl.runner.warm): a stage forked from a zygote sees what a fresh interpreter sees."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from pipeline_util import alive

from reasonrl.runner import warm, zygotes

ROOT = Path(__file__).resolve().parents[1]


def pythonpath(*first: Path) -> str:
    """`first`, then this checkout: a zygote imports the reasonrl under test, not another installed copy."""
    return os.pathsep.join([*map(str, first), str(ROOT)])

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="zygotes fork")


def _probe(python: str, env: dict, cwd: Path) -> list:
    return json.loads(subprocess.run([python, "-c", warm._PROBE], env=env, cwd=cwd, capture_output=True, text=True,
                                     check=True).stdout)


def test_only_a_plain_python_script_of_the_stages_folder_on_this_interpreter_is_forked(tmp_path, monkeypatch):
    ours, other = tmp_path / "ours", tmp_path / "other"
    ours.mkdir()
    other.mkdir()
    (tmp_path / "stages").mkdir()
    # a wrapper, not a link: a link to a virtualenv's python, outside the virtualenv, starts its base interpreter
    (ours / "python").write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} \"$@\"\n")
    (ours / "python").chmod(0o755)
    (other / "python").write_text("#!/bin/sh\necho /opt/another/python\n")
    (other / "python").chmod(0o755)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True)
    env = {"PATH": str(ours), "PYTHONPATH": "/lib"}
    monkeypatch.setattr(warm, "_started_env", {"PYTHONPATH": "/lib"})
    monkeypatch.setattr(warm, "_started_path", [str(tmp_path / "stages"), *_probe(sys.executable, env, tmp_path)[1]])
    monkeypatch.setattr(warm, "_interpreters", {})
    cwd = str(tmp_path)
    assert warm.script_command("python stages/rl.py runs grpo_s0", env, cwd) == ["stages/rl.py", "runs", "grpo_s0"]
    assert warm.script_command("python stages/base.py bases.cot base_cot", env, cwd) == [
        "stages/base.py", "bases.cot", "base_cot"]
    assert warm.script_command("python rl.py runs x", env, str(tmp_path / "stages")) == ["rl.py", "runs", "x"]
    # the last: another folder first on its import path
    for cmd in ("python stages/rl.py > out.txt", "python stages/a.py && python stages/b.py",
                "python -m reasonrl.runner.cli", "python stages/$X.py", "sh stages/rl.py", "python",
                "python stages/data", "python 'stages/a b.py'", "python scripts/other.py"):
        assert warm.script_command(cmd, env, cwd) is None, cmd
    assert warm.script_command("python stages/rl.py", {**env, "PATH": str(other)}, cwd) is None  # not a python
    venv = {**env, "PATH": str(tmp_path / "venv" / "bin")}  # its python links to this one; its own site-packages
    assert warm.script_command("python stages/rl.py", venv, cwd) is None
    assert warm.script_command("python stages/rl.py", {**env, "PYTHONPATH": "/elsewhere"}, cwd) is None
    assert warm.script_command("python stages/rl.py", {"PATH": str(ours)}, cwd) is None  # PYTHONPATH dropped


@pytest.fixture(scope="module")
def zygote(tmp_path_factory):
    root = tmp_path_factory.mktemp("zygote")
    (root / "stages").mkdir()
    (root / "stages" / "s.py").write_text("import helper_mod\nimport json\n")
    (root / "helper_mod.py").write_text("X = 1\n")
    env = {**os.environ, "PYTHONPATH": pythonpath(root), "MARK": "zygote", "ONLY_IN_ZYGOTE": "1"}
    z = zygotes.Zygote(str(root), env)
    yield z, root, env
    z.close()


def run_child(z: zygotes.Zygote, code: str, cwd: Path, env: dict, argv=()) -> tuple[int, str]:
    read, write = os.pipe()
    z.start(code, list(argv), str(cwd), env, write)
    os.close(write)
    with open(read) as f:
        out = f.read()
    return z.returncode(None), out


def test_a_child_has_the_arguments_directory_and_environment_it_was_given(zygote, tmp_path):
    z, _, env = zygote
    code = ("import os, sys, json; print(json.dumps([sys.argv, os.getcwd(), os.environ['MARK'], "
            "os.environ.get('ONLY_IN_ZYGOTE'), sys.path[0], 'helper_mod' in sys.modules, sys.stdin.read()]))")
    child_env = {k: v for k, v in env.items() if k != "ONLY_IN_ZYGOTE"} | {"MARK": "child"}
    rc, out = run_child(z, code, tmp_path, child_env, ["repro", "-s", "a@b"])
    assert rc == 0
    assert json.loads(out) == [["-c", "repro", "-s", "a@b"], str(tmp_path), "child", None, "", True, ""]


@pytest.mark.parametrize("code, status, says", [
    ("pass", 0, ""),
    ("import sys; sys.exit()", 0, ""),
    ("raise SystemExit(3)", 3, ""),
    ("raise SystemExit('no such run')", 1, "no such run"),
    ("raise ValueError('oops')", 1, "ValueError: oops"),
    ("import atexit; atexit.register(print, 'bye'); raise SystemExit(4)", 4, "bye"),
    ("raise KeyboardInterrupt", -signal.SIGINT, "KeyboardInterrupt"),
    ("import threading, time; threading.Thread(target=lambda: (time.sleep(0.3), print('late'))).start()", 0, "late"),
])
def test_a_child_exits_as_an_interpreter_would(zygote, tmp_path, code, status, says):
    z, _, env = zygote
    rc, out = run_child(z, code, tmp_path, env)
    assert rc == status
    assert says in out
    if not says:
        assert out == ""


def test_a_child_that_cannot_start_fails_alone(zygote, tmp_path):
    z, _, env = zygote
    rc, out = run_child(z, "print('never')", tmp_path / "missing", env)
    assert rc == 1 and "never" not in out and "FileNotFoundError" in out
    assert run_child(z, "print('next')", tmp_path, env) == (0, "next\n")


def test_a_file_a_child_left_open_is_written_out(zygote, tmp_path):
    z, _, env = zygote
    assert run_child(z, f"f = open({str(tmp_path / 'out.txt')!r}, 'w'); f.write('kept')", tmp_path, env) == (0, "")
    assert (tmp_path / "out.txt").read_text() == "kept"


def test_children_do_not_share_the_zygote_s_random_state(zygote, tmp_path):
    """`random` reseeds itself in a forked child (os.register_at_fork), as a fresh interpreter seeds it."""
    z, _, env = zygote
    draws = {run_child(z, "import random; print(random.random())", tmp_path, env)[1] for _ in range(3)}
    assert len(draws) == 3


def test_a_child_leads_its_own_process_group_and_can_be_stopped(zygote, tmp_path):
    z, _, env = zygote
    read, write = os.pipe()
    pid = z.start("import time; print('up', flush=True); time.sleep(60)", [], str(tmp_path), env, write)
    os.close(write)
    with open(read) as f:
        assert f.readline() == "up\n"
        assert os.getpgid(pid) == pid
        os.killpg(pid, signal.SIGKILL)
    assert z.returncode(30) == -signal.SIGKILL


def test_a_zygote_whose_modules_changed_on_disk_is_stale(tmp_path):
    (tmp_path / "stages").mkdir()
    (tmp_path / "stages" / "s.py").write_text("import helper_mod\n")
    (tmp_path / "helper_mod.py").write_text("X = 1\n")
    env = {**os.environ, "PYTHONPATH": pythonpath(tmp_path)}
    z = zygotes.Zygote(str(tmp_path), env)
    try:
        assert run_child(z, "import helper_mod; print(helper_mod.X)", tmp_path, env) == (0, "1\n")
        st = (tmp_path / "helper_mod.py").stat()
        (tmp_path / "helper_mod.py").write_text("X = 2\n")  # same size, and the old mtime put back (`cp -p`)
        os.utime(tmp_path / "helper_mod.py", ns=(st.st_atime_ns, st.st_mtime_ns))
        with pytest.raises(zygotes.Stale):
            run_child(z, "pass", tmp_path, env)
    finally:
        z.close()


def test_a_zygote_that_does_not_answer_is_stopped_and_its_worker_starts_cold(tmp_path, monkeypatch):
    (tmp_path / "stages").mkdir()
    (tmp_path / "hang").mkdir()  # an interpreter start that does not end in time, as an import stuck on a lock
    (tmp_path / "hang" / "sitecustomize.py").write_text(
        "import os, subprocess, time\n"
        "if os.environ.get('HANG_HELPER'):  # a helper process, as an import may start one\n"
        "    open(os.environ['HANG_HELPER'], 'w').write(str(subprocess.Popen(['sleep', '60']).pid))\n"
        "    time.sleep(30)\n")
    env = {**os.environ, "PYTHONPATH": pythonpath(tmp_path / "hang"), "HANG_HELPER": str(tmp_path / "helper.pid")}
    monkeypatch.setattr(zygotes, "START_S", 1.0)
    made = []

    class Counted(zygotes.Zygote):
        def __init__(self, *args):
            super().__init__(*args)
            made.append(self)

    monkeypatch.setattr(zygotes, "Zygote", Counted)
    t0 = time.monotonic()
    try:
        assert zygotes.forked("print(1)", [], str(tmp_path), env) is None  # the worker's cue to start cold
        assert time.monotonic() - t0 >= 1.0
        (stuck,) = made  # one wait, not a second one for a fresh zygote
        assert stuck.proc.poll() is not None  # stopped, not left sleeping
        helper = int((tmp_path / "helper.pid").read_text())
        time.sleep(0.2)
        assert not alive(helper)
        assert zygotes.zygote(str(tmp_path), env) is None  # and no zygote is tried again for this root
    finally:
        zygotes._failed.clear()
        zygotes._close_all()


@pytest.mark.parametrize("reaped", [False, True])
def test_a_child_announced_after_the_wait_ran_out_is_stopped_unless_already_reaped(reaped):
    import socket

    zyg = zygotes.Zygote.__new__(zygotes.Zygote)
    zyg.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    zyg.proc = subprocess.Popen(["sleep", "60"], start_new_session=True)  # stands in for the zygote
    child = subprocess.Popen(["sleep", "60"], start_new_session=True)  # the stage it forked
    theirs.send(json.dumps({"pid": child.pid}).encode())
    if reaped:  # its exit was reported too: the pid is free for another process, which must not be killed
        theirs.send(json.dumps({"returncode": 0}).encode())
    try:
        zyg._stop()
        assert zyg.proc.poll() is not None
        if reaped:
            time.sleep(0.3)  # time for a kill to land
            assert child.poll() is None
        else:
            assert child.wait(5) == -signal.SIGKILL
    finally:
        child.kill()
        child.wait()
        theirs.close()


def test_zygotes_are_kept_per_thread_root_and_environment(tmp_path):
    (tmp_path / "stages").mkdir()
    env = dict(os.environ)
    a = zygotes.zygote(str(tmp_path), env)
    try:
        assert zygotes.zygote(str(tmp_path), env) is a
        b = zygotes.zygote(str(tmp_path), {**env, "MARK": "other"})
        assert b is not a
        c = zygotes.zygote(str(tmp_path), env, fresh=True)
        assert c is not a and a.proc.poll() is not None  # the replaced one was closed
    finally:
        zygotes._close_all()


SHOW = """import json, os, sys
SHELL = {"PWD", "OLDPWD", "SHLVL", "_", "PS1", "PS2"}  # set, or dropped (bash -c: the prompts of an activated
# virtualenv), by the shell DVC runs a command through; a fork skips it
root = os.environ["DVC_ROOT"]
seen = {"argv": sys.argv, "cwd": os.path.relpath(os.getcwd(), root), "name": __name__,
        "file": os.path.relpath(__file__, root), "path0": os.path.relpath(sys.path[0], root),
        "stage": os.environ["DVC_STAGE"], "env": sorted(set(os.environ) - SHELL)}
print("shown", flush=True)
with open("seen.json", "w") as f:
    json.dump(seen, f, sort_keys=True)
with open("forked.txt", "w") as f:
    f.write(str("reasonrl.runner.warm" in sys.modules))
"""


@pytest.mark.parametrize("safe_path", [False, True])
def test_a_forked_stage_command_sees_what_a_fresh_one_sees(tmp_path, safe_path):
    """The same DVC stage run by `reasonrl repro` warm and `--cold`: the same arguments, directories,
    file names and environment; only the warm one ran in a process that had imported reasonrl.runner.warm. Under
    PYTHONSAFEPATH a fresh script's path starts with PYTHONPATH's first folder, not its own: no stage is forked
    (a fork would put the stages' folder in that folder's place)."""
    env = {**os.environ, "MARK": "x", "DVC_NO_ANALYTICS": "1", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    if safe_path:
        (tmp_path / "first").mkdir()
        env |= {"PYTHONSAFEPATH": "1", "PYTHONPATH": os.pathsep.join(filter(None, [
            str(tmp_path / "first"), env.get("PYTHONPATH")]))}
    seen = {}
    for mode in ("warm", "cold"):
        repo = tmp_path / mode
        (repo / "stages").mkdir(parents=True)
        (repo / "stages" / "show.py").write_text(SHOW)
        (repo / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"show": {
            "cmd": "python stages/show.py one two", "deps": ["stages/show.py"],
            "outs": ["seen.json", "forked.txt"]}}}))
        for cmd in (["git", "init", "-q"], ["dvc", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "x"]):
            subprocess.run(cmd, cwd=repo, env=env, check=True, capture_output=True)
        flags = ["--cold"] if mode == "cold" else []
        t0 = time.monotonic()
        out = subprocess.run([sys.executable, "-m", "reasonrl.runner.cli", "repro", "--log-dir", "logs", *flags],
                             cwd=repo, env=env, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        print(mode, f"{time.monotonic() - t0:.1f}s")
        assert "shown" in (repo / "logs" / "show.log").read_text()  # the stage's output reaches the log
        seen[mode] = json.loads((repo / "seen.json").read_text())
        assert (repo / "forked.txt").read_text() == str(mode == "warm" and not safe_path)
    assert seen["warm"] == seen["cold"]
    assert {"DVC_ROOT", "DVC_STAGE", "PATH", "MARK"} <= set(seen["warm"]["env"])
    del seen["warm"]["env"]
    path0 = os.path.join("..", "first") if safe_path else "stages"
    assert seen["warm"] == {"argv": ["stages/show.py", "one", "two"], "cwd": ".", "name": "__main__",
                            "file": "stages/show.py", "path0": path0, "stage": "show"}


FORK_OR_SHELL = """import json, sys, threading, tqdm
from dvc.stage import run as dvc_run
import reasonrl.runner.warm as w
ran = []
dvc_run._run = lambda executable, cmd, **kw: ran.append("shell")
w.install()
w.script_command = lambda cmd, env, cwd: ["s.py"]
w._changed = lambda seen: False
from dvc.progress import Tqdm
Tqdm(range(2), disable=True)  # DVC's first bar: no monitor thread now
alone = threading.active_count()
dvc_run._run("bash", "python s.py", env={}, cwd=sys.argv[1])  # alone: forked (s.py writes forked.txt)
hold, release = threading.Event(), threading.Event()
def holder():
    with tqdm.tqdm.get_lock():  # as tqdm's monitor does, every 10 s
        hold.set()
        release.wait()
threading.Thread(target=holder, daemon=True).start()
hold.wait()
dvc_run._run("bash", "python s.py", env={}, cwd=sys.argv[1])  # another thread: through the shell
release.set()
print(json.dumps([alone, ran]))
"""


def test_a_stage_command_is_forked_only_while_no_other_thread_could_hold_a_lock(tmp_path):
    """A fork copies the locks other threads hold: with tqdm's lock taken (by its monitor, say) a forked stage's
    first bar waits for ever. So DVC's process runs no monitor, and forks only while it has one thread."""
    (tmp_path / "s.py").write_text("import tqdm\nassert tqdm.tqdm.get_lock().acquire(timeout=5)\n"  # not for ever
                                   "tqdm.tqdm.get_lock().release()\nfor _ in tqdm.tqdm(range(2), disable=True): pass\n"
                                   "open('forked.txt', 'a').write(str(tqdm.tqdm.monitor_interval))\n")
    out = subprocess.run([sys.executable, "-c", FORK_OR_SHELL, str(tmp_path)], cwd=tmp_path, capture_output=True,
                         text=True, timeout=60, env={**os.environ, "PYTHONPATH": pythonpath()})
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.splitlines()[-1]) == [1, ["shell"]]
    assert (tmp_path / "forked.txt").read_text() == "10"  # the stage's own bars as in a fresh interpreter


LAZY_PROBE = """import hashlib, json, os, random, sys, threading, torch
torch.manual_seed(0)
random.seed(0)
for name in sys.argv[1:]:
    __import__(name)
rng = hashlib.md5(torch.get_rng_state().numpy().tobytes()).hexdigest(), random.random()
os.environ.update(ATEN_CPU_CAPABILITY="default", MKL_CBWR="COMPATIBLE", ONEDNN_MAX_CPU_ISA="SSE41")
from reasonrl import numerics
took, threads, before = numerics.effective(), threading.active_count(), "torch._dynamo" in sys.modules
torch.optim.AdamW([torch.nn.Parameter(torch.zeros(2))]).zero_grad()
print(json.dumps([took, threads, rng, before, "torch._dynamo" in sys.modules]))
"""


def test_torch_s_lazy_modules_start_nothing():
    """What an optimizer imports on its first call, which the zygote imports: importing it first leaves the
    math libraries to the variables set afterwards (numerics.pin still decides), starts no thread and draws
    from no generator: a fresh interpreter's view, with and without it."""
    env = {**os.environ, "PYTHONPATH": pythonpath()}
    runs = [json.loads(subprocess.run([sys.executable, "-c", LAZY_PROBE, *first], env=env, capture_output=True,
                                      text=True, check=True, timeout=300).stdout) for first in ((), warm.TORCH_LAZY)]
    (took, threads, rng, before, after), preloaded = runs
    assert took["aten"] == "DEFAULT" and threads == 1  # the variable set after the imports took
    assert not before and after  # without the zygote, an optimizer's first call imports it
    assert preloaded == [took, threads, rng, True, True]


@pytest.mark.parametrize("script, later", [("import torch\n", True), ("import json\n", False)])
def test_the_zygote_imports_torch_s_lazy_modules_while_its_first_child_runs(tmp_path, script, later):
    """...where the stages import torch: a DAG of other commands does not pay for them."""
    (tmp_path / "stages").mkdir()
    (tmp_path / "stages" / "s.py").write_text(script)
    env = {**os.environ, "PYTHONPATH": pythonpath()}
    z = zygotes.Zygote(str(tmp_path), env)
    try:
        code = f"import sys; print(all(m in sys.modules for m in {warm.TORCH_LAZY!r}))"
        assert [run_child(z, code, tmp_path, env) for _ in range(2)] == [(0, "False\n"), (0, f"{later}\n")]
        seen = json.loads(run_child(z, "import json, reasonrl.runner.warm as w; print(json.dumps(list(w._seen)))",
                                    tmp_path, env)[1])
        assert any(path.endswith("torch/_dynamo/__init__.py") for path in seen) == later
    finally:
        z.close()


def test_modules_imported_later_are_watched_and_an_edit_while_importing_makes_the_zygote_stale(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(warm.gc, "freeze", lambda: None)  # the zygote's, not this test process's
    (tmp_path / "later_a.py").write_text("X = 1\n")
    # edited while importing, a little after the import began (file times come from a clock a tick coarser)
    (tmp_path / "later_b.py").write_text("import os, time\ntime.sleep(0.05)\nos.utime(__file__, ns=(1, 1))\n")
    known = str(ROOT / "reasonrl" / "runner" / "warm.py")
    seen = {known: (0, 0, 0, 0)}  # as first seen: a later import must not take its stat again
    monkeypatch.setattr(warm, "_seen", seen)
    warm._import_later(["later_a", "no_such_module_xyz"])  # one that fails to import is left to its stage
    assert seen[known] == (0, 0, 0, 0) and str(tmp_path / "later_a.py") in seen
    warm._import_later(["later_b"])
    assert seen == {}  # cleared: the next request gets "stale"
