"""The manifest each study leaves for the index: its question, answer, runs, figures, tables and answers."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..io import write_json
from .answers import Answer
from .paths import manifest_path


@dataclass
class Manifest:
    """What a study produced, for the index: figure paths are relative to reports/."""

    study: str
    title: str
    question: str
    answer: str  # one line with the key numbers
    runs: list[str]  # run descriptions (name and the settings the study varies)
    figures: list[tuple[str, str]] = field(default_factory=list)  # (path, one sentence with the key number)
    tables: list[str] = field(default_factory=list)
    answers: list[dict] = field(default_factory=list)  # {"pair", "text", **Comparison.to_json()} per answer
    summary: str = ""  # the front page's paragraph where `answer` is longer (cut at a clause to 80 words there)
    key_figure: str = ""  # the figure the front page shows; "" for the first
    not_computed: dict[str, str] = field(default_factory=dict)  # answer file (pair) -> why the study wrote none

    def write(self, root: Path) -> None:
        write_json(root / manifest_path(self.study),
                   asdict(self) | {"figures": [{"file": f, "caption": c} for f, c in self.figures]})


def manifest_answers(answers: list[Answer]) -> list[dict]:
    return [{"pair": x.pair, "text": x.text, "a_label": x.a, "b_label": x.b, "equivalence": x.equivalence,
             "bounds": x.bounds, "constant": x.cmp.constant, **x.cmp.to_json(), **x.extra,
             "answer_only": x.answer_only.to_json() if x.answer_only else None} for x in answers]
