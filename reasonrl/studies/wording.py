"""Direction words follow the numbers (docs/studies.md, "Wording rules").

A word of direction or effect ("creates", "selects", "raises", "lowers", "above", ...) is written only where
the interval it cites supports it: the interval excludes 0 on that side (the run as the unit). Otherwise the
text says "no detectable difference" (with the MDE) or, inside the equivalence region, "equivalent".
`change` words a comparison that way; `problems` checks any generated text against the rule (the tests run
it over every committed answer)."""

from __future__ import annotations

import re

from .. import stats

UP, DOWN, EQUIVALENT, NONE, CONSTANT = "up", "down", "equivalent", "none", "constant"


def kind(lo: float, hi: float, equivalence: float) -> str:
    """What an interval supports, in `stats.word`'s order: EQUIVALENT (inside [-e, e], even off 0: a
    difference too small to matter takes no direction word), UP (lo > 0), DOWN (hi < 0), else NONE."""
    if -equivalence <= lo and hi <= equivalence:
        return EQUIVALENT
    return UP if lo > 0 else DOWN if hi < 0 else NONE


def of(cmp: stats.Comparison, equivalence: float) -> str:
    """`kind` of a comparison; CONSTANT where nothing varies (at the floor or ceiling: not testable). A
    difference the same in every cell (se 0) has its sign for a side, as `stats.word` states it."""
    if cmp.constant is not None:
        return CONSTANT
    if cmp.se == 0:
        return UP if cmp.effect > 0 else DOWN if cmp.effect < 0 else EQUIVALENT
    return kind(cmp.ci_lo, cmp.ci_hi, equivalence)


def change(cmp: stats.Comparison, equivalence: float, bounds=stats.SHARE_DIFF) -> str:
    """The numbers a direction word cites: '+0.974 [0.972, 0.976]', with the MDE where none is detected."""
    effect = stats.fmt_effect(cmp, bounds)
    return f"{effect}, MDE {stats.fmt_mde(cmp)}" if of(cmp, equivalence) == NONE else effect


def neutral(k: str, equivalence: float) -> str:
    """The words for an undirected result."""
    return {EQUIVALENT: f"equivalent within ±{equivalence:g}", NONE: "no detectable difference",
            CONSTANT: "not testable (no variance)"}[k]


# ----------------------------------------------------------------------------- the check

UP_WORDS = ("creates", "created", "selects", "selected", "raises", "raised", "improves", "improved", "beats",
            "increases", "above", "exceeds")
DOWN_WORDS = ("lowers", "lowered", "hurts", "decreases", "below")
NUM = r"[+\-−]?\d+(?:\.\d+)?"
INTERVAL = re.compile(rf"({NUM}) \[({NUM}), ({NUM})\]")
GREATER = re.compile(rf"> .*? by ({NUM}) \[({NUM}), ({NUM})\]")
EQUIV = re.compile(r"equivalent within ±(\d+(?:\.\d+)?)")
# pass@k's curves: the side at each k is Answer.side, checked against the answers themselves (tests)
PER_K = re.compile(r"detectably (above|below) the base at k = |no detectable difference from the base at any k")


def number(text: str) -> float:
    return float(text.replace("−", "-"))


def words(clause: str, vocabulary: tuple[str, ...]) -> list[str]:
    return [w for w in vocabulary if re.search(rf"(?<![\w-]){w}(?![\w-])", clause)]


def clauses(text: str) -> list[str]:
    """Clauses that each carry one claim: split at '; ', ' | ' and sentence ends."""
    return [c for c in re.split(r"; | \| |(?<![A-Z][a-z])\. (?=[A-Z])", text) if c.strip()]


def problems(text: str) -> list[str]:
    """Every clause of `text` whose words the intervals it cites do not support."""
    out = []
    for clause in clauses(text):
        if PER_K.search(clause):
            continue
        ivs = [tuple(number(x) for x in m.groups()) for m in INTERVAL.finditer(clause)]
        up, down = words(clause, UP_WORDS), words(clause, DOWN_WORDS)
        eq = EQUIV.search(clause)
        if m := GREATER.search(clause):
            if number(m.group(2)) <= 0:
                out.append(f"'>' without an interval above 0: {clause!r}")
        elif "no detectable" in clause:
            if not ivs or any(not lo <= 0 <= hi for _, lo, hi in ivs):
                out.append(f"'no detectable' with an interval off 0 (or none): {clause!r}")
        elif eq:
            e = number(eq.group(1))
            if not ivs or any(not -e <= lo <= hi <= e for _, lo, hi in ivs):
                out.append(f"'equivalent' with an interval outside ±{e:g} (or none): {clause!r}")
        elif up and down:
            out.append(f"both up ({up}) and down ({down}) words: {clause!r}")
        elif up or down:
            if not ivs:
                out.append(f"{up or down} without an interval: {clause!r}")
            elif any(not (lo > 0 if up else hi < 0) for _, lo, hi in ivs):
                out.append(f"{up or down} with an interval that does not exclude 0 on that side: {clause!r}")
    return out


def outside(text: str, bounds: tuple[float, float]) -> list[str]:
    """Every interval printed in `text` that leaves `bounds`."""
    return [m.group(0) for m in INTERVAL.finditer(text)
            if not bounds[0] <= number(m.group(2)) <= number(m.group(3)) <= bounds[1]]
