"""Modules are shaped by concept, not by a line count: a library module may grow past 500 lines, but then its
docstring says why it is one module (a line starting "Over 500 lines because")."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LONG = 500
REASON = "Over 500 lines because"


def long_without_reason(root: Path) -> list[str]:
    """The modules under root over LONG lines whose docstring gives no reason, as paths relative to root."""
    out = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text()
        if len(text.splitlines()) > LONG:
            doc = ast.get_docstring(ast.parse(text)) or ""
            if not any(line.strip().startswith(REASON) for line in doc.splitlines()):
                out.append(path.relative_to(root).as_posix())
    return out


def test_a_long_library_module_says_why_it_is_one():
    assert long_without_reason(ROOT / "reasonrl") == []


def test_the_check_reads_length_and_reason(tmp_path):
    body = "x = 1\n" * LONG  # with the docstring's line, one over
    (tmp_path / "long.py").write_text('"""A module."""\n' + body)
    (tmp_path / "reasoned.py").write_text(f'"""A module.\n\n{REASON} its parts share one state."""\n' + body)
    (tmp_path / "short.py").write_text('"""A module."""\n' + body[len("x = 1\n"):])
    assert long_without_reason(tmp_path) == ["long.py"]
