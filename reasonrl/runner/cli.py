"""The `reasonrl` console script: one subcommand per library entry point.

argparse's subcommands, with only the chosen command's module imported: `reasonrl repro --help` then takes a
fraction of what importing both commands' modules (torch with `train`'s) took (docs/performance.md,
"Measurements the code cites"); `reasonrl repro --dry` imports no torch at all.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from ..errors import EXIT_CODE, ReasonrlError, install_excepthook, report
from . import malloc

# what `reasonrl --help` tells a user (the module docstring above is for the code's readers)
DESCRIPTION = """\
reasonrl: the DVC pipeline of RL for reasoning, run with independent stages in parallel.

  reasonrl repro -j 2 report_headline_hop       a first result (about 10 minutes on 2 cores)
  reasonrl repro --dry -j 2 [TARGET]            what would run, and how long it would take
  reasonrl exp run -j 2 -S method=rft TARGET    an experiment, for `dvc exp show`
  reasonrl train --set steps=50 --out runs/try  one RL run outside the pipeline

`reasonrl COMMAND --help` for each command's options; README.md and docs/ for the rest."""

# subcommand -> module providing `add_arguments(parser)` and `run(args) -> int`
COMMANDS = {
    "repro": ("reasonrl.runner.parallel", "run the DVC pipeline with independent stages in parallel on Dask"),
    "exp": ("reasonrl.runner.experiment", "`dvc exp run -S ...` on the parallel runner, saved for `dvc exp show`"),
    "train": ("reasonrl.rl.run", "one RL run outside the pipeline: the rl: defaults with --set overrides"),
}


def main(argv: list[str] | None = None) -> int:
    """Exit status of the command; a ReasonrlError is one `error: ...` stderr line and status 2."""
    install_excepthook()  # errors raised while a command's module is imported
    if argv is None and sys.argv[1:2] == ["train"]:  # the console script's training runs in this process:
        malloc.restart()  # on tcmalloc, as `reasonrl repro` runs its stages (before torch is imported)
    argv = sys.argv[1:] if argv is None else argv
    args = parser_for(argv).parse_args(argv)
    try:
        return main_guard(args._module.run, args)
    except BrokenPipeError:  # the reader went away (`reasonrl repro --dry | head`): stop without a traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nor one from the exit's flush of stdout
        return 1


def parser_for(argv: list[str]) -> argparse.ArgumentParser:
    """The console script's parser, with the options of the command argv names (only its module imported)."""
    parser = argparse.ArgumentParser(prog="reasonrl", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (module, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if argv and argv[0] == name:  # import only the chosen command's module: torch takes seconds to import
            mod = importlib.import_module(module)
            mod.add_arguments(p)
            p.set_defaults(_module=mod)
    return parser


def main_guard(fn, *args) -> int:
    """Call fn(*args) -> exit status, turning a ReasonrlError into one stderr line and status 2."""
    try:
        return fn(*args)
    except ReasonrlError as e:
        if os.environ.get("REASONRL_DEBUG") == "1":
            raise
        report(e)
        return EXIT_CODE


if __name__ == "__main__":
    sys.exit(main())
