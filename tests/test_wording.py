"""Wording follows numbers: a direction word only where the interval it cites supports it, over every
committed answer, plus hand-built edge cases with the strings written out."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from reasonrl import stats
from reasonrl.studies import wording
from reasonrl.studies.wording import NUM

ROOT = Path(__file__).resolve().parents[1]
MANIFESTS = sorted((ROOT / "reports").glob("*/manifest.json"))


def cmp(lo: float, hi: float, effect: float | None = None, se: float = 0.05) -> stats.Comparison:
    effect = (lo + hi) / 2 if effect is None else effect
    return stats.Comparison(0.5, 0.5 + effect, effect, lo, hi, se, 4.0, 0.5, stats.mde(se, 4.0), 5, 100)


def texts(m: dict) -> list[str]:
    return [m["answer"], m.get("summary") or ""] + [a["text"] for a in m["answers"]]


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.parent.name)
def test_every_committed_answer_and_summary_is_supported(path):
    m = json.loads(path.read_text())
    bad = [p for t in texts(m) for p in wording.problems(t)]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.parent.name)
def test_every_answer_file_matches_its_worded_text(path):
    """Each reports/<study>/answers/<pair>.json: its manifest text says what its own interval supports, and
    prints that interval inside the measure's range."""
    m = json.loads(path.read_text())
    by_pair = {a["pair"]: a for a in m["answers"]}
    for f in sorted((path.parent / "answers").glob("*.json")):
        ans = json.loads(f.read_text())
        if f.stem not in by_pair:
            continue  # headline writes the pooled answers' files only; every manifest answer is checked above
        entry = by_pair[f.stem]
        text, eq = entry["text"], entry["equivalence"]
        assert ans["ci_lo"] == entry["ci_lo"] and ans["ci_hi"] == entry["ci_hi"], f
        k = wording.kind(ans["ci_lo"], ans["ci_hi"], eq)
        if entry["constant"] is not None or ans["se"] == 0:
            continue
        expect = {wording.UP: " > ", wording.DOWN: " > ", wording.EQUIVALENT: "equivalent within",
                  wording.NONE: "no detectable difference"}[k]
        assert expect in text, (f.name, text)
        if k == wording.UP:
            assert text.startswith(entry["b_label"] + " > "), (f.name, text)
        if k == wording.DOWN:
            assert text.startswith(entry["a_label"] + " > "), (f.name, text)
        if entry.get("bounds"):
            assert not wording.outside(text, tuple(entry["bounds"])), (f.name, text)


def test_passk_per_k_words_match_the_answers():
    """pass@k's 'detectably above the base at k = ...' cites no interval: checked against the answers."""
    m = json.loads((ROOT / "reports/passk/manifest.json").read_text())
    answers = {a["pair"]: a for a in m["answers"]}
    sides = {}
    for a in answers.values():
        if not (at_k := re.search(r"_k(\d+)$", a["pair"])):
            continue  # the new-solutions answers (…_new) are per problem, not per k
        k = int(at_k.group(1))
        arm = a["b_label"].rsplit(" pass@", 1)[0]
        set_name = a["pair"].rsplit("_k", 1)[0].rsplit("_", 1)[1]
        e = a["equivalence"]
        side = 1 if a["ci_lo"] > 0 and a["ci_hi"] > e else -1 if a["ci_hi"] < 0 and a["ci_lo"] < -e else 0
        base = a["a_label"].rsplit(" pass@", 1)[0]
        sides.setdefault((set_name, arm), {}).setdefault(base, {})[k] = side
    for clause in m["answer"].rstrip(".").split("; "):
        got = re.match(r"on (\w+): (.+?) (detectably|no detectable)", clause)
        assert got, clause

        def agrees(side: dict[int, int], clause: str = clause) -> bool:
            for word, sign in (("above", 1), ("below", -1)):
                found = re.search(rf"{word} (?:the base )?at k = ([\d, ]+?)(?:,? no|: | and|$)", clause)
                ks = sorted(int(x) for x in found.group(1).split(", ")) if found else []
                # the manifest keeps the answers at the smallest and the largest k only
                if [k for k in ks if k in side] != sorted(k for k, s in side.items() if s == sign):
                    return False
            return True

        # an arm is compared with its task's base and with any further reference: "the base" is one of them
        assert any(agrees(side) for side in sides[got.group(1), got.group(2)].values()), clause


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.parent.name)
def test_printed_levels_and_differences_of_shares_stay_in_range(path):
    """Summaries print shares (pass@1, accuracy) or their differences: no bound beyond [-1, 1]."""
    m = json.loads(path.read_text())
    assert not wording.outside(m.get("summary") or "", stats.SHARE_DIFF)


# ----------------------------------------------------------------------------- edge cases, strings written out

@pytest.mark.parametrize("lo, hi, expected", [
    (-0.138, 0.299, "no detectable difference between a and b (effect +0.080 [-0.138, 0.299], MDE 0.186)"),
    (-0.004, 0.006, "a and b equivalent within ±0.01 (effect +0.001 [-0.004, 0.006])"),
    (0.02, 0.08, "b > a by 0.050 [0.020, 0.080]"),
    (-0.08, -0.02, "a > b by 0.050 [0.020, 0.080]"),
    (0.657, 1.152, "b > a by 0.905 [0.657, 1.000]"),
    (0.0004, 0.012, "b > a by 0.0062 [0.0004, 0.0120], possibly less than 0.01"),
])
def test_word_edge_cases(lo, hi, expected):
    c = cmp(lo, hi, effect=0.905 if hi == 1.152 else None)
    assert stats.word(c, "a", "b", 0.01, stats.SHARE_DIFF) == expected
    assert not wording.problems(expected)


def test_clipping():
    assert stats.fmt_ci(0.648, 0.060, 1.236, bounds=stats.SHARE) == "0.648 [0.060, 1.000]"
    assert stats.fmt_ci(0.599, -0.058, 1.255, bounds=stats.SHARE) == "0.599 [0.000, 1.000]"
    assert stats.fmt_ci(0.905, 0.657, 1.152, sign=True, bounds=stats.SHARE_DIFF) == "+0.905 [0.657, 1.000]"
    assert stats.fmt_ci(1.8, 1.4, 2.2, bounds=None) == "1.800 [1.400, 2.200]"  # a length: no range to cut to


@pytest.mark.parametrize("lo, hi, kind", [(-0.1, 0.2, wording.NONE), (-0.005, 0.005, wording.EQUIVALENT),
                                          (0.001, 0.2, wording.UP), (-0.2, -0.001, wording.DOWN)])
def test_kind(lo, hi, kind):
    assert wording.kind(lo, hi, 0.01) == kind


@pytest.mark.parametrize("text", [
    "creates it in think0 (0.1% → 8.2%, +0.081 [-0.138, 0.299])",
    "RL selects thinking in think2 with random reward +0.062 [-0.062, 0.186]",
    "b > a by 0.006 [0.000, 0.012]",
    "no detectable difference between a and b (effect +0.050 [0.020, 0.080], MDE 0.1)",
    "a and b equivalent within ±0.01 (effect +0.020 [-0.005, 0.030])",
    "GRPO improves accuracy",
    "proxy below true in orm +0.049 [-1.000, 1.000]",
])
def test_unsupported_words_are_caught(text):
    assert wording.problems(text)


@pytest.mark.parametrize("text", [
    "RL selects thinking in think2 +0.9736 [0.9717, 0.9755], think10 +0.892 [0.887, 0.897]",
    "no detectable difference in think0 +0.081 [-0.138, 0.299], think2 +0.062 [-0.062, 0.186]",
    "lowers it in think10 -0.087 [-0.116, -0.057]",
    "mu 2, clip-higher > mu 1 by 0.078 [0.055, 0.101]",  # 'higher' inside a label is no direction word
])
def test_supported_words_pass(text):
    assert not wording.problems(text)


ZERO_ENTRY = re.compile(rf"\(({NUM})% → ({NUM})%, ({NUM}) \[({NUM}), ({NUM})\]")


def test_zero_and_hacking_read_as_the_numbers():
    """Each verdict group of the zero study's answer holds only arms whose numbers support its words (the pilot
    once said "creates it in think0" of +0.081 [-0.138, 0.299]); the hacking summary's length penalty is the
    penalty's coefficient times the length it names."""
    zero = json.loads((ROOT / "reports/zero/manifest.json").read_text())
    rise = yaml.safe_load((ROOT / "params.yaml").read_text())["studies"]["zero"]["rise"]
    groups = zero["answer"].split(". Think rate: ")[0].split("; ")
    assert len(groups) >= 2
    for group in groups:
        entries = [tuple(float(v.replace("−", "-")) for v in e) for e in ZERO_ENTRY.findall(group)]
        assert entries, group
        for before, after, _, lo, hi in entries:
            if group.startswith(("RL selects thinking in", "creates it in")):
                assert lo > 0 and after - before >= 100 * rise - 0.1, group
            elif group.startswith("raises it by less than"):
                assert lo > 0 and after - before < 100 * rise + 0.1, group
            elif group.startswith("lowers it in"):
                assert hi < 0, group
            elif group.startswith("no detectable difference in"):
                assert lo <= 0 <= hi, group
            else:
                assert group.startswith(("not testable (no variance) in", "equivalent within")), group
    hacking = json.loads((ROOT / "reports/hacking/manifest.json").read_text())
    pens = re.findall(rf"true \+ len_pen's raw ({NUM}) is its length penalty \(({NUM}) × ({NUM}) characters\), not a "
                      "hacking gap", hacking["summary"])
    assert len(pens) == 1
    raw, coef, length = (float(v) for v in pens[0])
    assert coef == 0.05 and raw == pytest.approx(-coef * length, abs=0.0005 + coef * 0.05)  # both as printed
    assert hacking["key_figure"] == "hacking/failure_mix.png"
    figures = {f["file"] for m in map(json.loads, map(Path.read_text, MANIFESTS)) for f in m["figures"]}
    assert hacking["key_figure"] in figures
    exact = json.loads((ROOT / "reports/exact/manifest.json").read_text())
    assert exact["key_figure"] in {f["file"] for f in exact["figures"]}
    for m in (zero, hacking):  # the front page cuts a longer one at a clause (test_readme checks the page)
        assert m["summary"].split()


def test_the_claims_pages_print_an_effect_at_the_precision_that_keeps_a_bound_off_zero():
    from reasonrl.studies import claims

    # the DAPO clip-higher row of the pilot: at three decimals "+0.000 [0.000, 0.001]", an interval that seems
    # not to cover 0 although it does
    ans = {"a": 0.992, "b": 0.9922, "effect": 0.0002, "ci_lo": -0.0004, "ci_hi": 0.0008, "se": 0.0002, "df": 4,
           "p": 0.4, "mde": 0.0007, "seeds": 5, "problems": 1000, "bounds": [-1.0, 1.0]}
    assert claims.effect_text(ans) == "+0.0002 [-0.0004, 0.0008]"
    assert claims.by_task_cell({"verdict": "not testable here", "answer": ans}) == (
        "not testable here: +0.0002 [-0.0004, 0.0008]")
    # a bound just above 0 keeps its digits; a share's interval is cut at 1
    assert claims.effect_text({**ans, "effect": 0.013, "ci_lo": 0.0001, "ci_hi": 0.0255}) == "+0.0130 [0.0001, 0.0255]"
    assert claims.effect_text({**ans, "effect": 0.9, "ci_lo": 0.6, "ci_hi": 1.2}) == "+0.900 [0.600, 1.000]"
