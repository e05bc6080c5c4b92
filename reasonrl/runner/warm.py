"""Warm stage processes for `reasonrl repro`: each stage starts as a fork of an interpreter that has
already imported DVC, torch and the stage scripts' modules, instead of two fresh interpreters (DVC's, then
the stage's) that import them again.

A zygote is one such interpreter per worker (`serve`; the worker's side is reasonrl.runner.zygotes), started
with the stages' folder first on its import path, as a fresh `python stages/<x>.py` has it. For each
stage it forks a child that runs
`python -c CODE ARGS` as a fresh interpreter would (the runner's `dvc repro -s <stage>`), in its own
session, with its output on a pipe the worker reads. Inside that child `install` makes DVC run a stage
command `python stages/<x>.py <args>` as a fork too, running the script itself, when `python` there is
this interpreter with the same import path; any other command goes to DVC's shell as before.

What a fork shares with its zygote is only what importing left behind: the zygote computes nothing, so
`numerics.pin` (stage_setup) still finds ATen and MKL unstarted, `random` and numpy's global generator are
reseeded, and the stages seed the generators they draw from (torch's default generator, which this build seeds anew
in every fresh process, keeps the zygote's start: no output depends on it, as tests/test_determinism.py's
fork-against-fresh bytes show). A module file that changed after the zygote imported it (an edit during a long run)
would make a fork run old code under the new code's md5 in dvc.lock: every loaded module's file (inode, ctime,
mtime, size) is checked before each fork, of DVC's process and of the stage's command; a changed one makes the
zygote exit (the next stage gets a new one) and the command run fresh.

What it buys: the time a stage pays beyond its own work, a fraction of a cold start's on the smoke DAG and the
committed one, every output's md5 the same (docs/performance.md, "Per-stage overhead: warm stage processes", and
"Measurements the code cites"). The stdlib's forkserver (multiprocessing) also
forks from a preloaded interpreter, but it runs a Python callable with the environment its one server started
with (the allocator's LD_PRELOAD is read at exec), not a `python -c` with its own arguments, environment,
session and output; it does not see an edited module, and DVC's child could not fork the stage's command from it.
"""

from __future__ import annotations

import ast
import atexit
import builtins
import contextlib
import functools
import gc
import importlib
import importlib.machinery
import json
import logging
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
import types
from pathlib import Path
from typing import NoReturn

from . import dvc_adapter

# The modules that `dvc repro -s` imports before and after it runs a stage (its CLI imports them lazily), and the
# runner's lock update that each one installs
DVC_MODULES = (*dvc_adapter.REPRO_MODULES, "reasonrl.runner.lockfile")
# torch's own lazy imports that stages reach: an optimizer's first call imports torch._dynamo (torch/_compile.py),
# seconds of CPU in every training stage, much of a smoke RL stage (docs/performance.md, "Measurements the code
# cites"). Importing it
# starts neither ATen, MKL nor oneDNN, no thread, and draws from no generator (tests/test_warm.py). The zygote
# imports them while its first child runs, so that no worker's first stage starts later for them (one that ends
# sooner is reported when they are in), and only where the stages' imports brought torch in (a DAG of shell
# commands does not pay their CPU per worker).
TORCH_LAZY = ("torch._dynamo",)
MESSAGE = 1 << 20  # largest request or reply (an environment is a few kB)
SHELL_SPECIAL = set("|&;<>()$`\\\"'*?[]#~{}!\t\n")  # a command holding any of these goes to DVC's shell


def preload(root: str | Path) -> list[str]:
    """Modules a stage imports: DVC's, and every module the scripts in `root`/stages/ import at their top."""
    names = set(DVC_MODULES)
    for script in sorted(Path(root, "stages").glob("*.py")):
        try:
            tree = ast.parse(script.read_text())
        except (OSError, SyntaxError):  # the stage itself will report it when it runs
            continue
        for node in tree.body:
            if isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module)
    return sorted(names)


def _fingerprint() -> dict[str, tuple[int, ...]]:
    """{file: (inode, ctime, mtime, size)} of every loaded module that has a file. The ctime moves on every
    write or replacement, even one that keeps the size and restores the mtime (`cp -p`, `rsync -t`)."""
    found = {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if path:
            with contextlib.suppress(OSError):
                found[path] = _stat(path)
    return found


def _stat(path: str) -> tuple[int, ...]:
    st = os.stat(path)
    return st.st_ino, st.st_ctime_ns, st.st_mtime_ns, st.st_size


def _changed(fingerprint: dict[str, tuple[int, ...]], since_ns: int = 0) -> bool:
    """Whether a file changed from its fingerprint, or had changed at or after `since_ns` (while importing)."""
    for path, seen in fingerprint.items():
        try:
            now = _stat(path)
        except OSError:
            return True
        if now != seen or now[1] >= since_ns > 0:
            return True
    return False


# ---- the zygote's side -------------------------------------------------------------------------------


def serve(fd: int, root: str) -> None:
    """The zygote: import what the stages import, then fork one child per request until the socket closes.
    A request is {code, argv, cwd, env} with the write end of the child's output pipe; the replies are
    {pid} once the child runs and {returncode} (Popen's convention) when it has exited, or {stale}."""
    sock = socket.socket(fileno=fd)
    started_ns = time.time_ns()
    _started_env.update(os.environ)
    _started_path[:] = sys.path  # [the stages' folder (set by Zygote), PYTHONPATH..., the installed ones]
    _import(preload(root))
    with contextlib.suppress(Exception):  # asked here once, so that no stage pays for it
        # the environment DVC gives a stage's command: PATH without pyenv's
        _same_python("python", dvc_adapter.stage_env(None), root)
    # what importing made lives as long as the zygote: kept out of the cyclic collector, whose passes in the
    # children would otherwise walk it (a cost at every full pass: docs/performance.md, "Measurements the code
    # cites") and copy the pages it touches
    gc.freeze()
    _seen.update(_fingerprint())
    if _changed(_seen, started_ns):  # edited while it imported: the first request gets "stale"
        _seen.clear()
    lazy = list(TORCH_LAZY) if "torch" in sys.modules else []  # only where the stages use torch
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(sock, MESSAGE, 1)
        except OSError:
            return
        if not data:
            return
        if not _seen or _changed(_seen):
            sock.send(json.dumps({"stale": True}).encode())
            return
        request = json.loads(data)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(functools.partial(_take_output, sock, fds[0]), request["cwd"], request["env"],
                   ["-c", *request["argv"]], "", functools.partial(_run_code, request["code"]))  # `-c`: "" first
        os.close(fds[0])
        sock.send(json.dumps({"pid": pid}).encode())
        if lazy:
            _import_later(lazy)
            lazy = []
        _, status = os.waitpid(pid, 0)
        sock.send(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}).encode())


def _import(names: list[str]) -> None:
    for name in names:
        with contextlib.suppress(Exception):  # a module that fails to import fails in its stage, as before
            importlib.import_module(name)


def _import_later(names: list[str]) -> None:
    """Import `names` in the zygote after its first fork, watching their files as the first imports' are (a
    file edited while they import makes the next request stale)."""
    since = time.time_ns()
    _import(names)
    gc.freeze()
    new = {path: seen for path, seen in _fingerprint().items() if path not in _seen}  # the others keep their stat
    if _seen and _changed(new, since):
        _seen.clear()
    elif _seen:
        _seen.update(new)


def _take_output(sock: socket.socket, out: int) -> None:
    """A zygote's child: its own session and process group (the worker stops the stage and its command
    together), `out` as stdout and stderr, stdin empty, and no hold on the zygote's socket."""
    sock.close()
    os.setsid()
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(out)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)


def _child(prepare, cwd: str, env: dict[str, str], argv: list[str], path0: str, main) -> NoReturn:
    """In a forked child: `prepare()`, then the directory, environment, arguments and sys.path[0] a fresh
    interpreter would have, run `main` as its main module and exit with its status. A child that could not
    even start says why and exits with 1, never returning into the loop that forked it."""
    try:
        prepare()
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        sys.argv = argv
        sys.path[0] = path0
        os._exit(_run_main(main))
    except BaseException:  # noqa: BLE001
        traceback.print_exc()
    finally:
        os._exit(1)


def _run_main(main) -> int:
    """Run `main` as an interpreter runs its main module and return the exit status it would have: the code
    of a SystemExit, 1 after an uncaught exception (traceback on stderr), death by SIGINT after an uncaught
    KeyboardInterrupt. Then, in an interpreter's order, wait for non-daemon threads, run the atexit
    handlers the code registered (not the parent's: the child ends with os._exit), let go of what the main
    module held (files left open get flushed and closed) and flush logging and the standard streams."""
    atexit._clear()
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:  # a fresh interpreter seeds numpy's global generator from the OS
        numpy_random.seed()
    status, interrupted = 0, False
    try:
        main()
    except SystemExit as e:
        if e.code is None:
            status = 0
        elif isinstance(e.code, int):
            status = e.code
        else:
            print(e.code, file=sys.stderr)
            status = 1
    except BaseException as e:  # noqa: BLE001  (what the interpreter itself does with an uncaught exception)
        sys.excepthook(*sys.exc_info())
        status, interrupted = 1, isinstance(e, KeyboardInterrupt)
    for finish in (threading._shutdown, atexit._run_exitfuncs, _let_go_of_main, logging.shutdown):
        with contextlib.suppress(BaseException):
            finish()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    if interrupted:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    return status


def _let_go_of_main() -> None:
    sys.modules["__main__"].__dict__.clear()
    gc.collect()


# ---- DVC's stage command, forked ---------------------------------------------------------------------


def script_command(cmd: str, env: dict[str, str], cwd: str) -> list[str] | None:
    """`cmd` as [script, args...] when it is `python <script>.py <args>` with nothing the shell would
    interpret, the script lies in the folder the zygote imported from (the stages' folder, sys.path[0] of a
    fresh `python <script>`), and `python` there starts this interpreter with the same import path; else
    None (DVC's shell runs it)."""
    if SHELL_SPECIAL & set(cmd):
        return None
    argv = shlex.split(cmd)
    if len(argv) < 2 or not argv[1].endswith(".py") or argv[1].startswith("-"):
        return None
    folder = os.path.dirname(os.path.abspath(os.path.join(cwd, argv[1])))
    if not _started_path or folder != _started_path[0] or not _same_python(argv[0], env, cwd):
        return None
    return argv[1:]


_started_env: dict[str, str] = {}  # the zygote's environment when it imported its modules
_started_path: list[str] = []  # and its sys.path
_seen: dict[str, tuple[int, ...]] = {}  # the files of the modules it imported (_fingerprint)
_interpreters: dict[tuple[str, str, str], bool] = {}  # (name, PATH, cwd) -> whether it starts this interpreter
_PROBE = "import json, sys; print(json.dumps([sys.executable, sys.path[1:]]))"


def _same_python(name: str, env: dict[str, str], cwd: str) -> bool:
    """Whether `name` on env's PATH, run in `cwd`, is this interpreter with the same import path after the
    script's folder (a virtualenv's python links to its base interpreter, with its own site-packages),
    and the PYTHON* variables are those the zygote started with. Asked once per PATH and folder: a launcher
    such as pyenv's shim resolves only when run, per folder."""
    if {k: v for k, v in env.items() if k.startswith("PYTHON")} != {
            k: v for k, v in _started_env.items() if k.startswith("PYTHON")}:
        return False
    key = (name, env.get("PATH", os.defpath), cwd)
    if key not in _interpreters:
        found, seen = shutil.which(name, path=key[1]), None
        if found:
            with contextlib.suppress(OSError, ValueError, subprocess.SubprocessError):
                seen = json.loads(subprocess.run([found, "-c", _PROBE], env=env, cwd=cwd, timeout=60,
                                                 capture_output=True, text=True, check=True).stdout)
        _interpreters[key] = bool(seen) and (os.path.realpath(seen[0]), seen[1]) == (
            os.path.realpath(sys.executable), _started_path[1:])
    return _interpreters[key]


def install() -> None:
    """In a forked `dvc repro` process: run a stage's `python <script>.py` command as a fork of this
    process (which has the stage's modules imported) instead of through the shell. Same directory,
    environment and arguments; the same SIGINT handling as DVC's own `_run`."""
    import tqdm

    # tqdm's monitor, a thread started with DVC's first bar, takes tqdm's lock every 10 s: forked while it held
    # it, the stage's first bar would wait on it for ever (the likely cause of a CI hang). It only retunes bars.
    monitor, tqdm.tqdm.monitor_interval = tqdm.tqdm.monitor_interval, 0
    shell_run, failed = dvc_adapter.STAGE_COMMAND.get(), dvc_adapter.stage_failed_error()

    def _run(executable, cmd, **kwargs):
        argv = script_command(cmd, kwargs["env"], kwargs["cwd"])
        # fresh: a module edited since the zygote imported it, or another thread, whose locks a fork copies held
        if argv is None or _changed(_seen) or threading.active_count() > 1:
            return shell_run(executable, cmd, **kwargs)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # SIGINT as in a fresh interpreter: DVC ignores it while the command runs
            script = os.path.abspath(os.path.join(kwargs["cwd"], argv[0]))
            _child(lambda: (signal.signal(signal.SIGINT, signal.default_int_handler),
                            setattr(tqdm.tqdm, "monitor_interval", monitor)),  # the stage's bars as in a fresh one
                   kwargs["cwd"], kwargs["env"], argv, os.path.dirname(script), lambda: _run_path(script))
        main_thread = threading.current_thread() is threading.main_thread()
        old = signal.signal(signal.SIGINT, signal.SIG_IGN) if main_thread else None
        try:
            _, status = os.waitpid(pid, 0)
        finally:
            if old is not None:
                signal.signal(signal.SIGINT, old)
        returncode = os.waitstatus_to_exitcode(status)
        if returncode != 0:
            raise failed(cmd, returncode)

    dvc_adapter.STAGE_COMMAND.set(_run)


def _run_code(code: str) -> None:
    """Run `code` as `python -c code` does."""
    exec(code, _fresh_main(None).__dict__)


def _run_path(script: str) -> None:
    """Run `script` as `python script` does (not runpy, which also rewrites sys.argv[0])."""
    with open(script, "rb") as f:
        source = f.read()
    exec(compile(source, script, "exec"), _fresh_main(script).__dict__)


def _fresh_main(script: str | None) -> types.ModuleType:
    """A new `__main__` module in sys.modules, as an interpreter makes for `-c` (None) or a script."""
    main = types.ModuleType("__main__")
    main.__builtins__ = builtins
    if script is not None:
        main.__file__ = script
        main.__cached__ = None
        main.__loader__ = importlib.machinery.SourceFileLoader("__main__", script)
    sys.modules["__main__"] = main
    return main
