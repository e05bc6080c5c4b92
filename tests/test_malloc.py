"""The allocator (reasonrl.runner.malloc): tcmalloc preloaded where it is installed, glibc's malloc otherwise, and
the RL step's heap trims only where they have something to do."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reasonrl.rl import memory
from reasonrl.runner import malloc

ROOT = Path(__file__).resolve().parents[1]
installed = pytest.mark.skipif(malloc.library() is None,
                               reason="tcmalloc is not installed (apt install libtcmalloc-minimal4)")


def _run(code: str, *args: str, options: tuple[str, ...] = (), **env: str) -> list[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", malloc.SWITCH, malloc._RESTARTED)}
    proc = subprocess.run([sys.executable, *options, "-c", code, *args], env={**base, "PYTHONPATH": str(ROOT), **env},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.split()


def test_environ_adds_the_library_after_what_was_preloaded_unless_an_allocator_is_there(monkeypatch):
    monkeypatch.setattr(malloc, "library", lambda env=None: "/lib/libtcmalloc_minimal.so.4")
    assert malloc.environ({"A": "1"}) == {"A": "1", "LD_PRELOAD": "/lib/libtcmalloc_minimal.so.4"}
    out = malloc.environ({"LD_PRELOAD": "/x/libother.so"})
    assert out["LD_PRELOAD"] == "/x/libother.so:/lib/libtcmalloc_minimal.so.4"
    assert malloc.environ(out) == out  # already listed: not twice
    for theirs in ("/usr/lib/libjemalloc.so.2", "libasan.so.8:/x/libother.so", "/opt/libtcmalloc.so.4"):
        assert malloc.environ({"LD_PRELOAD": theirs}) == {"LD_PRELOAD": theirs}  # the user's choice stands
    monkeypatch.setattr(malloc, "library", lambda env=None: None)
    assert malloc.environ({"A": "1"}) == {"A": "1"}


def test_the_switch_keeps_the_system_malloc(monkeypatch):
    monkeypatch.setenv(malloc.SWITCH, "system")
    assert malloc.library() is None
    monkeypatch.delenv(malloc.SWITCH)
    assert malloc.library({malloc.SWITCH: "system"}) is None  # the environment asked about decides
    assert "LD_PRELOAD" not in malloc.environ({malloc.SWITCH: "system"})


@installed
def test_restart_runs_the_process_again_on_tcmalloc_with_its_arguments(tmp_path):
    log = tmp_path / "runs"
    code = (f"import os, sys; open({str(log)!r}, 'a').write('run\\n'); from reasonrl.runner import malloc; "
            "malloc.restart(); print(malloc.active(), sys.flags.utf8_mode, malloc._RESTARTED in os.environ, "
            "*sys.argv[1:])")
    assert _run(code, "a", "b c", options=("-X", "utf8")) == ["tcmalloc", "1", "False", "a", "b", "c"]
    assert log.read_text().count("run") == 2  # the process, and once more under tcmalloc with its options
    assert _run(code, **{malloc.SWITCH: "system"}) == ["system", "0", "False"]


def test_restart_tries_once_when_the_preload_does_not_take(tmp_path):
    log = tmp_path / "runs"
    code = (f"open({str(log)!r}, 'a').write('run\\n'); from reasonrl.runner import malloc; "
            "malloc.library = lambda env=None: '/nonexistent/libtcmalloc_minimal.so.4'; malloc.restart(); "
            "print(malloc.active())")
    assert _run(code) == ["system"]
    assert log.read_text().count("run") == 2  # no loop: the second process does not restart again


def test_glibc_trims_its_heap_for_every_run_kind(monkeypatch):
    monkeypatch.setattr(memory, "tcmalloc_release", lambda: None)
    for sampled_forward in (False, True):
        trim = memory.heap_trimmer(sampled_forward)
        assert isinstance(trim, functools.partial) and trim.func.__name__ == "malloc_trim"


@installed
def test_under_tcmalloc_only_runs_with_a_forward_over_everything_sampled_release_memory():
    code = ("from reasonrl.runner import malloc; from reasonrl.rl.memory import heap_trimmer; "
            "f = [heap_trimmer(False), heap_trimmer(True)]; f[1](); "
            "print(malloc.active(), *[getattr(g, '__name__', None) or g.func.__name__ for g in f])")
    assert _run(code, LD_PRELOAD=malloc.library()) == ["tcmalloc", "_nothing", "MallocExtension_ReleaseFreeMemory"]
    assert _run(code) == ["system", "malloc_trim", "malloc_trim"]


def test_the_run_kind_decides_the_trim(monkeypatch):
    from reasonrl.rl.job import make_job

    asked, policy_trim = [], object()
    monkeypatch.setattr(memory, "heap_trimmer", lambda sampled_forward: asked.append(sampled_forward) or policy_trim)
    for over, verifier in (({}, False), ({"dynamic_sampling": True}, False), ({}, True)):
        assert memory.memory_hooks(make_job({}, over), verifier).between_phases is policy_trim
    assert asked == [False, True, True]


def test_under_glibc_every_run_maps_its_large_blocks():
    """mallopt's fixed 1 MB threshold is process-wide: set in a fresh process under glibc, never under tcmalloc."""
    code = "from reasonrl.rl.memory import map_large_blocks; print(map_large_blocks())"
    assert _run(code) == ["True"]
    # what it sets: glibc's dynamic threshold rises to 4 MB when a 4 MB mapped block is freed, so a 2 MB block
    # then comes from the heap; set to 1 MB after that, it is a mapping of its own (mallinfo2's hblks), and a
    # 512 KB one still comes from the heap (as it would not under glibc's fixed default of 128 KB)
    probe = ("import ctypes, sys; from reasonrl.rl.memory import map_large_blocks\n"
             "class Info(ctypes.Structure): _fields_ = [(n, ctypes.c_size_t) for n in ('arena ordblks smblks hblks "
             "hblkhd usmblks fsmblks uordblks fordblks keepcost').split()]\n"
             "libc = ctypes.CDLL('libc.so.6'); libc.malloc.restype = ctypes.c_void_p; libc.mallinfo2.restype = Info\n"
             "libc.free(ctypes.c_void_p(libc.malloc(4 << 20)))\n"
             "if sys.argv[1] == 'mapped': map_large_blocks()\n"
             "before = libc.mallinfo2().hblks\n"
             "for size in (2 << 20, 512 << 10):\n"
             "    p = libc.malloc(size); print(libc.mallinfo2().hblks - before); libc.free(ctypes.c_void_p(p))")
    assert _run(probe, "dynamic") == ["0", "0"] and _run(probe, "mapped") == ["1", "0"]
    if malloc.library() is not None:
        assert _run(code, LD_PRELOAD=malloc.library()) == ["False"]


def test_the_stages_run_the_loop_under_the_memory_policy(monkeypatch, tmp_path):
    """The loop trims nothing by itself (the algorithm has no memory policy): run_job, which the rl stages and
    `reasonrl train` call, hands it the policy's hooks."""
    import torch

    from reasonrl.checkpoint import save_checkpoint
    from reasonrl.model import ModelConfig, TinyReasoner
    from reasonrl.rl import run
    from reasonrl.rl.job import make_job

    save_checkpoint(tmp_path / "init.pt", TinyReasoner(ModelConfig(d_model=16, n_heads=2, n_layers=1),
                                                       generator=torch.Generator().manual_seed(0)), {})
    seen = {}
    monkeypatch.setattr(run, "memory_hooks", lambda job, verifier: ("the policy's", job.B, verifier))
    monkeypatch.setattr(run, "map_large_blocks", lambda: seen.setdefault("mapped", True))
    monkeypatch.setattr(run, "train_rl", lambda *a, hooks=None, **k: seen.setdefault("hooks", hooks))
    run.run_job(make_job({}, {"B": 3}), tmp_path / "init.pt", None, {})
    assert seen == {"hooks": ("the policy's", 3, False), "mapped": True}


@pytest.mark.slow  # a DVC repo and a Dask cluster
@installed
def test_the_runners_stages_run_on_tcmalloc_unless_switched_off(tmp_path):
    """`reasonrl repro` (warm: the stage's `dvc repro` is forked from a zygote) preloads tcmalloc into every
    stage's command; REASONRL_MALLOC=system in the runner's environment keeps glibc's malloc."""
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", malloc.SWITCH)} | {
        "PYTHONPATH": str(ROOT), "DVC_NO_ANALYTICS": "1", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    for cmd in (["git", "init", "-q"], ["dvc", "init", "-q"]):
        subprocess.run(cmd, cwd=repo, env=env, check=True, capture_output=True)
    (repo / "stages").mkdir()  # `python stages/<x>.py`: a command the warm runner forks from its zygote
    (repo / "stages" / "probe.py").write_text("import pathlib\nfrom reasonrl.runner import malloc\n"
                                              "pathlib.Path('probe.txt').write_text(malloc.active())\n")
    (repo / "dvc.yaml").write_text("stages:\n  probe:\n    cmd: python stages/probe.py\n    outs: [probe.txt]\n")
    repro = [sys.executable, "-m", "reasonrl.runner.cli", "repro", "-j", "1"]
    for switch, expected in ((None, "tcmalloc"), ("system", "system")):
        (repo / "dvc.lock").unlink(missing_ok=True)
        (repo / "probe.txt").unlink(missing_ok=True)
        run_env = env | ({malloc.SWITCH: switch} if switch else {})
        out = subprocess.run(repro, cwd=repo, env=run_env, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
        assert (repo / "probe.txt").read_text().strip() == expected
        assert f"malloc {expected}" in out.stdout + out.stderr  # the run log's machine line says which


@installed
def test_reasonrl_train_restarts_on_tcmalloc_and_a_caller_passing_argv_does_not():
    code = ("import sys; from reasonrl.runner import malloc, cli; print(malloc.active(), flush=True); "
            "sys.argv = ['reasonrl', 'train', '--help']; cli.main({})")
    first = _run(code.format("None"))
    assert first[:2] == ["system", "tcmalloc"] and "usage:" in first  # run again, under tcmalloc
    assert _run(code.format("['train', '--help']"))[:2] == ["system", "usage:"]  # no restart
