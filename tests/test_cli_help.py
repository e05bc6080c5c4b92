"""`reasonrl --help`: its examples are commands the console script accepts, one for each of its commands."""

import re
import shlex

import pytest

from reasonrl.runner import cli

EXAMPLES = [re.split(r"\s{2,}", line.strip())[0] for line in cli.DESCRIPTION.splitlines()
            if line.startswith("  reasonrl ")]


def test_the_help_shows_an_example_of_every_command():
    assert {shlex.split(e)[1] for e in EXAMPLES} == set(cli.COMMANDS)


@pytest.mark.parametrize("example", EXAMPLES)
def test_each_example_parses(example):
    words = shlex.split(example.replace("[TARGET]", "").replace("TARGET", "report_headline_hop"))
    argv = words[1:]
    args = cli.parser_for(argv).parse_args(argv)
    assert args.command == argv[0] and hasattr(args, "_module")

