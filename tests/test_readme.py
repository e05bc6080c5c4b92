"""The README is for users and quotes only generated results: it stays short, its headline quote is a line
of the generated reports/index.md, and that index is what `report_index` writes from the committed reports."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import yaml

from reasonrl.studies import index
from reasonrl.studies.stage import load_config

ROOT = Path(__file__).resolve().parents[1]


def test_readme_is_short():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 150


def test_readme_headline_quote_is_in_the_generated_index():
    readme = (ROOT / "README.md").read_text()
    quotes = re.findall(r"^> (.+)$", readme, re.M)
    assert quotes, "the README quotes the headline answer"
    generated = (ROOT / index.INDEX).read_text()
    for quote in quotes:
        assert quote in generated, quote


def locked_params(stage: str) -> dict:
    """The params `stage` last ran with, as dvc.lock records them (dotted keys nested back)."""
    out: dict = {}
    locked = yaml.safe_load((ROOT / "dvc.lock").read_text())["stages"][stage]["params"]["params.yaml"]
    for dotted, value in locked.items():
        *path, last = dotted.split(".")
        node = out
        for part in path:
            node = node.setdefault(part, {})
        node[last] = value
    return out


def test_committed_index_is_what_report_index_writes_from_the_committed_reports(tmp_path):
    # with the params it ran with: a params edit since (a renamed claim) makes the committed index stale,
    # not wrong; `reasonrl repro` brings it up to date
    cfg = load_config(index, locked_params("report_index"))
    for path in index.inputs(cfg):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / path, tmp_path / path)
    index.report(cfg, tmp_path)
    assert (tmp_path / index.INDEX).read_text() == (ROOT / index.INDEX).read_text()


def test_readme_links_resolve():
    readme = (ROOT / "README.md").read_text()
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme):
        if not target.startswith("http"):
            assert (ROOT / target).exists(), target
