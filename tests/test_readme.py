"""The README is for users and quotes only generated results: it stays short, its headline quote is a line
of the generated reports/index.md, and that index is what `report_index` writes from the committed reports."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from reasonrl.studies import index
from reasonrl.studies.stage import load_config

ROOT = Path(__file__).resolve().parents[1]


def test_readme_is_short():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 150


def test_readme_quotes_are_in_the_generated_index():
    """Every quoted line (the verdict table, its legend, the headline answer) is a line of the generated index, its
    links rebased from reports/ to the README's folder ("](reports/claims.md#x)" quotes "](claims.md#x)")."""
    readme = (ROOT / "README.md").read_text()
    quotes = re.findall(r"^> (.+)$", readme, re.M)
    assert quotes, "the README quotes the headline answer"
    assert any(q.startswith("| claim | ") for q in quotes), "the README quotes the verdict table"
    generated = (ROOT / index.INDEX).read_text()
    for quote in quotes:
        assert quote.replace("](reports/", "](") in generated, quote


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
    for page in index.outputs(cfg):  # the front page, the claims in full, each study's details
        assert (tmp_path / page).read_text() == (ROOT / page).read_text(), page


def test_committed_front_page_opens_with_the_verdicts_and_keeps_within_its_limits():
    text = (ROOT / index.INDEX).read_text()
    assert index.check_limits(text) == [] and len(text) <= 12_000
    assert [line for line in text.splitlines() if line.startswith("## ")][0] == "## Verdicts"
    table = [line for line in text.splitlines() if line.startswith("| ")]
    assert len(table) > 5 and max(map(len, table)) <= 200  # short rows: reasons and power are in claims.md
    # run 2's family first, then the claims no row tests (run 1's form, kept in reports/run1/, is tested there)
    assert table[0] == "| claim | row | task | estimate (one-sided bound) | raw gain | sign | power | verdict |"
    rows = [line.split(" | ")[1] for line in table[1:] if line.count(" | ") == 7]
    family = yaml.safe_load((ROOT / "params.yaml").read_text())["studies"]["primaries"]
    assert rows == family["sequence"] + family["rest"]
    # under the table: one reason per row, in the same order
    assert [line.split("`")[1] for line in text.splitlines() if line.startswith("- `")] == rows
    sections = text.split("\n## ")[2:]  # after the verdicts: one per study
    assert len(sections) == len(index.STUDIES)
    for section, study in zip(sections, index.STUDIES):
        paragraph = section.split("\n\n")[1]
        assert len(paragraph.split()) <= index.PARAGRAPH_WORDS, study
        assert section.count("![") == 1 and f"[Details]({study}/details.md)" in section
        assert (ROOT / index.details_path(study)).exists()


def anchors(path: Path) -> set[str]:
    """The anchors GitHub gives a markdown file's headings: lower case, punctuation but `-` and `_` dropped,
    spaces as `-` (a repeated heading's -1, -2 suffixes are not needed by any link here)."""
    heads = re.findall(r"^#+ (.+)$", path.read_text(), flags=re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in heads}


def test_github_anchors_by_hand(tmp_path):
    (page := tmp_path / "p.md").write_text("## Experiments: `reasonrl exp run`\n### Same numbers: what is guaranteed\n"
                                           "## methods — SFT vs RFT\n")
    assert anchors(page) == {"experiments-reasonrl-exp-run", "same-numbers-what-is-guaranteed", "methods--sft-vs-rft"}


@pytest.mark.parametrize("page", ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))])
def test_links_resolve_with_their_anchors(page):
    """Every relative link of the README and docs/ names a file that exists and, where it has one, a heading of it."""
    source = ROOT / page
    for target, anchor in re.findall(r"\]\(([^)#\s]*)(?:#([^)\s]*))?\)", source.read_text()):
        if target.startswith(("http", "mailto:")):
            continue
        path = (source.parent / target).resolve() if target else source
        assert path.exists(), (page, target)
        if anchor and path.suffix == ".md":
            assert anchor in anchors(path), (page, target, anchor)


def table_rows_that_split(text: str) -> list[str]:
    """The rows of the Markdown tables in `text` whose cell count is not their header's: GitHub splits a cell at
    every `|` not escaped as `\\|`, inside a code span too (a row broken over two lines is one such row)."""
    bad, lines = [], text.splitlines()
    for i, line in enumerate(lines[:-1]):
        if re.fullmatch(r"(> )?\|[\s:|-]+\|", lines[i + 1].strip()) and line.lstrip("> ").startswith("|"):
            cells = len(re.findall(r"(?<!\\)\|", line))
            for row in lines[i + 2:]:
                if not row.lstrip("> ").startswith("|"):
                    break
                if len(re.findall(r"(?<!\\)\|", row)) != cells:
                    bad.append(row)
    return bad


def test_table_rows_by_hand():
    text = ("| a | b |\n|---|---|\n| `x|y` | 1 |\n| `x\\|y` | 2 |\n| a row broken\n  over two lines | 3 |\n\n"
            "> | quoted | table |\n> |---|---|\n> | 1 | 2 |\n")
    assert table_rows_that_split(text) == ["| `x|y` | 1 |", "| a row broken"]


PAGES = sorted(str(p.relative_to(ROOT)) for p in [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"),
                                                   *(ROOT / "reports").rglob("*.md")]
               if not p.is_relative_to(ROOT / "reports/pilot" / "exact"))  # the pilot's record, as its code wrote it


@pytest.mark.parametrize("page", PAGES)
def test_markdown_tables_keep_their_cells(page):
    assert table_rows_that_split((ROOT / page).read_text()) == []
