"""Markdown for the study pages: code spans and cells safe inside a table, tables under a heading, a page."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from ..io import write_text


def code(text: str) -> str:
    """Text as a markdown code span that is safe inside a table cell (| escaped, backticks dropped)."""
    return "`" + str(text).replace("`", "'").replace("|", "\\|") + "`"


def cell(value) -> str:
    """A table cell: floats with 3 decimals (small ones in scientific notation), a missing value empty,
    anything else as written."""
    if not isinstance(value, float):
        return str(value)
    return "" if math.isnan(value) else f"{value:.2e}" if 0 < abs(value) < 0.01 else f"{value:.3f}"


def md_table(df: pd.DataFrame, title: str, note: str = "") -> str:
    """A markdown table under a heading, cells formatted here (no parsing of "+0.020"), numeric ones right-aligned."""
    align = ["right" if pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c]) else "left"
             for c in df]
    body = df.map(cell).to_markdown(index=False, disable_numparse=True, colalign=align)
    return f"### {title}\n\n{body}\n" + (f"\n{note}\n" if note else "")


def write_markdown(path: Path, title: str, intro: str, parts: list[str]) -> None:
    write_text(path, f"## {title}\n\n{intro}\n\n" + "\n".join(parts))
