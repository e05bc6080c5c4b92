"""The worker's side of warm stage starts (reasonrl.runner.warm): one zygote per worker thread, started lazily and
replaced when stale, and the handle `reasonrl repro` waits on, which stands in for the Popen of a cold start.
The protocol: a request {code, argv, cwd, env} with the write end of the child's output pipe attached
(SCM_RIGHTS on a SOCK_SEQPACKET socket); the replies {pid} once the child runs, then {returncode}, or
{stale} when a module the zygote imported changed on disk. What it buys is runner.warm's: a stage's cost beyond
its own work a fraction of a cold start's (docs/performance.md, "Measurements the code cites")."""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading

from .warm import MESSAGE

# A zygote answers its first request once its imports are done (seconds; tens of them on a loaded machine with
# a cold disk cache, docs/performance.md, "Measurements the code cites"). One that has not answered by then is
# stuck (an import that waits on a lock,
# a network file system): the worker starts its stages cold instead of waiting with it for ever.
START_S = 300.0


def forked(code: str, argv: list[str], root: str, environ: dict[str, str]) -> Forked | None:
    """`python -c code *argv` in `root` as a child of this thread's zygote, or None where it cannot be:
    no fork here, a fresh zygote failed too, or one did not answer (then this root and environment start
    cold from now on).
    A stale zygote is replaced once; one that does not answer within START_S is not (a fresh one would most
    likely hang on the same import)."""
    if not (hasattr(os, "fork") and hasattr(socket, "send_fds")):
        return None
    for fresh in (False, True):
        zyg = zygote(root, environ, fresh)
        if zyg is None:
            return None
        try:
            return Forked(zyg, code, argv, root, environ)
        except Silent:
            break
        except Stale:
            continue
    failed(root, environ)
    return None


class Forked:
    """What `reasonrl repro` uses of a Popen (pid, stdout, poll, wait, returncode), for a zygote's child."""

    def __init__(self, zyg: Zygote, code: str, argv: list[str], root: str, environ: dict[str, str]) -> None:
        read, write = os.pipe()
        try:
            self.pid = zyg.start(code, argv, root, environ, write)
        except BaseException:
            os.close(read)
            raise
        finally:
            os.close(write)
        self.zygote, self.returncode = zyg, None
        self.stdout = open(read, errors="replace")  # noqa: SIM115  (closed by __exit__)

    def poll(self, timeout: float = 0.0) -> int | None:
        if self.returncode is None:
            try:
                self.returncode = self.zygote.returncode(timeout)
            except Stale:  # the zygote died: nothing can say how the stage ends, so it is stopped, unrecorded
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.pid, signal.SIGKILL)
                self.returncode = -signal.SIGKILL
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.poll(timeout) is None:
            raise subprocess.TimeoutExpired("dvc repro", timeout)
        return self.returncode

    def __enter__(self) -> Forked:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stdout.close()
        if self.returncode is None:  # an exception in the worker: do not leave the stage running
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGKILL)
            self.wait()


class Stale(Exception):
    """The zygote's modules changed on disk; start a new one."""


class Silent(Exception):
    """The zygote did not answer a start within START_S; it is stopped."""


class Zygote:
    """One warm interpreter for the stages of one worker thread, started in `root` with `env`."""

    def __init__(self, root: str, env: dict[str, str]) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # the stages' folder first on sys.path, as a fresh `python stages/<x>.py` has it, so that every module
        # (reasonrl too: an installed copy, or PYTHONPATH's) is the one a stage would import. Under PYTHONSAFEPATH
        # a fresh script has no folder of its own first and `-c` none to replace: the path stays as it is, and
        # warm.script_command, which forks only a script of the folder first on the path, sends every stage cold
        stages = os.path.join(os.path.abspath(root), "stages")
        code = (f"import sys\nif not sys.flags.safe_path: sys.path[0] = {stages!r}\n"
                f"import reasonrl.runner.warm as w; w.serve({theirs.fileno()}, sys.argv[1])")
        self.proc = subprocess.Popen([sys.executable, "-c", code, root], cwd=root, env=env, pass_fds=[theirs.fileno()],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        theirs.close()
        self.sock = ours

    def start(self, code: str, argv: list[str], cwd: str, env: dict[str, str], out: int) -> int:
        """Fork a child running `python -c code *argv` with `out` as its stdout and stderr; its pid."""
        request = json.dumps({"code": code, "argv": argv, "cwd": cwd, "env": env}).encode()
        try:
            socket.send_fds(self.sock, [request], [out])
        except OSError:  # the zygote is gone
            raise Stale() from None
        reply = self._reply(START_S)
        if reply == {}:
            self._stop()
            raise Silent()
        if reply is None or "stale" in reply:
            raise Stale()
        return reply["pid"]

    def _stop(self) -> None:
        """Kill the zygote with what it spawned (its session: a probe, an import's helper), and the child whose
        pid it sent after the wait ran out (a child leads its own process group). A zygote stuck in the kernel
        may outlive SIGKILL for a while: it is not waited for longer than 5 s."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5)
        replies = []
        while reply := self._reply(0):  # what it sent before it died
            replies.append(reply)
        started = [r["pid"] for r in replies if "pid" in r]
        if started and not any("returncode" in r for r in replies):  # reaped: its pid may be another's now
            for kill in (os.killpg, os.kill):  # the group once the child leads one; the child itself before
                with contextlib.suppress(ProcessLookupError):
                    kill(started[0], signal.SIGKILL)
        self.sock.close()

    def returncode(self, timeout: float | None) -> int | None:
        """The child's exit status, or None if it is still running after `timeout` seconds."""
        reply = self._reply(timeout)
        if reply is None:
            raise Stale()  # the zygote died
        return reply.get("returncode")

    def _reply(self, timeout: float | None) -> dict | None:
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(MESSAGE)
        except (TimeoutError, BlockingIOError):  # BlockingIOError: a timeout of 0
            return {}
        except OSError:
            return None
        return json.loads(data) if data else None

    def close(self) -> None:
        self.sock.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5)
        if self.proc.poll() is None:
            self.proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):  # stuck in the kernel: not for ever
                self.proc.wait(5)


_zygotes: dict[tuple, Zygote] = {}
_failed: set[tuple] = set()  # (root, env) whose fresh zygote could not run a stage: not tried again
_zygotes_lock = threading.Lock()


def zygote(root: str, env: dict[str, str], fresh: bool = False) -> Zygote | None:
    """This thread's zygote for `root` and `env` (a new one when `fresh`); None after `failed`."""
    key = (threading.get_ident(), root, tuple(sorted(env.items())))
    with _zygotes_lock:
        if key[1:] in _failed:
            return None
        old = _zygotes.pop(key, None) if fresh else _zygotes.get(key)
        if old is not None and not fresh and old.proc.poll() is None:
            return old
        if old is not None:
            old.close()
        _zygotes[key] = made = Zygote(root, env)
        return made


def failed(root: str, env: dict[str, str]) -> None:
    """A fresh zygote for `root` and `env` could not start a stage, or one did not answer: start them cold
    from now on."""
    with _zygotes_lock:
        _failed.add((root, tuple(sorted(env.items()))))


@atexit.register
def _close_all() -> None:
    with _zygotes_lock:
        for z in _zygotes.values():
            with contextlib.suppress(Exception):
                z.close()
        _zygotes.clear()
