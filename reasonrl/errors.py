"""The errors a user can fix, and how they reach the terminal: one line, no traceback.

A ReasonrlError says where the problem is (a dotted params key or a file path), what is wrong, and
how to fix it: `str(err)` is `<where>: <what> (<fix>)`. Stage scripts and the CLI just raise; the
hook installed by `install_excepthook` (stage_setup does it, and the console script, reasonrl.runner.cli,
whose `main_guard` does the same for a command's return) prints `error: <str(err)>` as one stderr line and
exits 2. Anything else is a bug and keeps its traceback; `REASONRL_DEBUG=1` shows the traceback of a
ReasonrlError too. The hook stays here, with the science, because stage scripts install it and the science
never imports the runner.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import re
import sys
from pathlib import Path

EXIT_CODE = 2  # as argparse uses for a usage error


class ReasonrlError(Exception):
    """A problem the user can fix. `what=None` takes `where` as the whole message (the older form)."""

    def __init__(self, where: str, what: str | None = None, fix: str | None = None):
        self.where, self.what, self.fix = str(where), what, fix
        super().__init__(str(self))

    def __str__(self) -> str:
        text = self.where if self.what is None else f"{self.where}: {self.what}"
        text = text if not self.fix else f"{text} ({self.fix})"
        return " ".join(text.split())  # one line whatever a wrapped library message held

    def within(self, prefix: str) -> ReasonrlError:
        """The same error with `where` placed under the dotted path `prefix` (unless it already is)."""
        if self.where == prefix or self.where.startswith(prefix + "."):
            return self
        return type(self)(f"{prefix}.{self.where}", self.what, self.fix)


class ConfigError(ReasonrlError, ValueError):
    """A params value that cannot be used; `where` is the dotted key."""


class CheckpointError(ReasonrlError, RuntimeError):
    """A checkpoint that is missing, truncated or not one of ours; `where` is its path."""


class DataError(ReasonrlError, OSError):
    """A data file that is missing or unreadable; `where` is its path."""


def suggest(word: str, valid: list[str]) -> str | None:
    """The valid name closest to a mistyped `word`, or None when nothing is close."""
    close = difflib.get_close_matches(word, valid, n=1, cutoff=0.6)
    return close[0] if close else None


def unknown_key_fix(word: str, valid: list[str]) -> str:
    near = suggest(word, valid)
    listing = f"valid keys are {', '.join(valid)}"
    return f"did you mean {near!r}? {listing}" if near else listing


# ----------------------------------------------------------------------------- which stage makes a file

# output path -> the stage that writes it, used when dvc.lock is absent (a fresh clone has it)
PRODUCERS = [(re.compile(r"^models/base_(.+)\.pt$"), "base@{}"), (re.compile(r"^models/mixed_(.+)\.pt$"), "mixed@{}"),
             (re.compile(r"^models/verifier_(.+)\.pt$"), "verifier@{}"), (re.compile(r"^models/rl_(.+)\.pt$"), "rl@{}"),
             (re.compile(r"^data/([^_/]+)_[^/]+\.jsonl$"), "data@{}")]


def producing_stage(path: str | Path, lock: str | Path = "dvc.lock") -> str | None:
    """The DVC stage that writes `path` (relative to the project root): read from dvc.lock when it is
    there (exact, whatever dvc.yaml's layout), else guessed from the path."""
    rel = Path(path).as_posix()
    import yaml  # lazily: `reasonrl --help` imports this module and reads no lock

    with contextlib.suppress(OSError, ValueError, AttributeError, yaml.YAMLError):
        text = Path(lock).read_text()
        # LibYAML's loader where PyYAML has it: a few times faster on a large lock than the pure-Python loader
        # (docs/performance.md, "Measurements the code cites"); the runner's kept parse, reasonrl.runner.lockfile,
        # would be faster, but no science module imports the runner
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        stages = (yaml.load(text, Loader=loader) or {}).get("stages", {}) if rel in text else {}
        for stage, entry in stages.items():
            if any(o.get("path") == rel for o in entry.get("outs", []) or []):
                return stage
    return guessed_stage(rel)


def guessed_stage(path: str | Path) -> str | None:
    """The stage that writes `path` by the pipeline's naming alone (PRODUCERS), or None for no pipeline name."""
    for pattern, template in PRODUCERS:
        m = pattern.match(Path(path).as_posix())
        if m:
            return template.format(*m.groups())
    return None


def rebuild_fix(path: str | Path) -> str:
    """How to get a pipeline output back: its stage, or a checkout from the DVC cache."""
    stage = producing_stage(path)
    make = f"`dvc repro {stage}`" if stage else "`dvc repro` of the stage that writes it"
    return f"run {make}, or `dvc checkout {Path(path).as_posix()}` if it is in the DVC cache"


# ----------------------------------------------------------------------------- the terminal

def report(err: BaseException, stream=None) -> None:
    print(f"error: {err}", file=stream or sys.stderr, flush=True)


def _hook(exc_type, exc, tb, previous=sys.__excepthook__):
    if isinstance(exc, ReasonrlError) and os.environ.get("REASONRL_DEBUG") != "1":
        sys.stdout.flush()
        report(exc)
        # An excepthook cannot choose the exit status; leave now with the usage-error code.
        os._exit(EXIT_CODE)
    previous(exc_type, exc, tb)


def install_excepthook() -> None:
    """Make an uncaught ReasonrlError one `error: ...` line on stderr and exit status 2."""
    if getattr(sys.excepthook, "__name__", "") != "_hook":
        previous = sys.excepthook
        sys.excepthook = lambda t, e, tb: _hook(t, e, tb, previous)
        sys.excepthook.__name__ = "_hook"
