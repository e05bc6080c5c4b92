"""Run 2's primaries (issue 70): the pre-registered rows of params `studies.primaries`, each estimated from the
passk study's per-problem counts with `reasonrl.estimands` and judged as one family with
`reasonrl.studies.gatekeeping.judge` (the fixed sequence, then Holm on the rest).

A row names its claim (a `studies.claims` key, for the paper and the wording), the passk arms it compares (an RL
arm against the arm of the bases its runs started from), the set, k, the scale, the direction and margin, the test
(`TESTS`: blocked t, exact sign test across bases, single base, Yue's crossing, and `answer`: a single-base claim
read from the answer file another study stage wrote), its pre-run power and its gates (`studies.gates` keys). Each
RL model is grouped under the base its run started from (`runs*.<run>.init`), so a base may carry several RL seeds.
Per problem, pass@k is the unbiased 1 - C(N - c, k) / C(N, k) from the problem's count of verified samples
(`metrics.pass_at_k`): the shares `blocked` and `single_base` take, so every interval carries the test set's own
sampling.

Over 500 lines because the row (its config and checks), the two sources a row is estimated from (passk counts,
answer files), the tests' registry, the family's judgement and the table and stage outputs are one pre-registered
contract: each part reads the others' fields, and split apart they would only import each other.

A single-base claim of another study (Shao, Dr. GRPO, DAPO, R1-Zero: issue 70 item 2) is a row of test `answer`: it
names no passk arm; it reads the claim's answer file, reports/<study>/answers/<pair>.json (`studies.claims.<claim>`'s
study and primary, or the row's own `answer` pair of that study), whose effect b - a is the mean over the RL seeds
with its t-interval (the seed the unit, df = seeds - 1, the test set's problem term in its se: `reasonrl.stats`). The
row tests it one-sided on that raw scale beyond its margin, and its verdict names the base, `base` (a label). Yue's
crossing a gate took out before the run carries the sentence issue 70 item 5 asks for where the data say it
(`at_or_above`): RL at or above the base at every k of the curve on every base.

`report` (stage report_primaries) writes reports/primaries.md and reports/metrics/primaries.json.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from .. import estimands as E
from ..config import check, from_dict
from ..errors import ConfigError
from ..io import read_json, write_json, write_text
from ..metrics import pass_at_k
from . import PASSK_DATA, passk, passk_data_path
from . import gatekeeping as G
from .claims import Claim
from .markdown import code
from .paths import answer_path, study_metrics_path

SECTION = "studies.primaries"
OUT = "reports/primaries.md"
PASSK = "passk"  # a test's source: the passk study's per-problem counts of two arms
ANSWER = "answer"  # or the claim's answer file of its own study (a single-base claim: the RL seed the unit)


@dataclass(frozen=True)
class Row:
    """One pre-registered row: `rl` (a passk arm, or a list of arms whose models are further RL seeds, pooled per
    base) against `base` (the passk arm of the bases it started from, or another RL arm: then the two are paired by
    the base both started from, arm against arm) on
    `set` at pass@`k` (and pass@`k_high` for the crossing), tested by `test` on `scale` in `direction` beyond
    `margin` (on the test's own scale: the log error ratio or the raw gain; for the sign test, on the per-base
    values). `power`: the pre-run power entered at pre-registration, for `power_for` (why: `power_reason`). A row of
    test `answer` names no `rl`: it reads its claim's answer file (or the pair `answer` of the claim's study) on the
    raw scale, and `base` is the label of the one base its RL seeds started from."""

    claim: str
    task: str
    test: str
    power_for: float
    power_reason: str
    power: float
    rl: str | tuple[str, ...] = ""  # a passk arm or several (one RL seed per base each); none for an answer row
    base: str = ""  # a passk arm; for an answer row, the base its RL seeds started from (the verdict names it)
    answer: str | None = None  # an answer row's pair in its claim's study (default: the claim's primary on `task`)
    scale: Literal["log error ratio", "raw gain"] = E.LOG_ERROR_RATIO
    set: str = "edge"
    k: int = 1
    k_high: int | None = None  # the crossing's largest k: the base above RL there
    direction: int = 1
    margin: float = 0.0
    margin_high: float = 0.0  # the crossing's margin at k_high
    gates: tuple[str, ...] = ()
    min_seeds: int | None = None  # RL seeds per base this row needs (default: the section's `min_seeds`)

    @property
    def rl_arms(self) -> tuple[str, ...]:
        return (self.rl,) if isinstance(self.rl, str) else tuple(self.rl)

    @property
    def rl_label(self) -> str:
        return " + ".join(a for a in self.rl_arms if a)

    def __post_init__(self):
        check(self.test in TESTS, "test", f"{self.test!r} is not one of {list(TESTS)}")
        check(self.direction in (1, -1), "direction", f"{self.direction!r} must be +1 (RL above) or -1 (below)")
        check(self.k >= 1, "k", f"{self.k!r} must be >= 1")
        crossing = self.test == "crossing"
        check((self.k_high is not None) == crossing, "k_high", "the crossing, and only it, names its largest k")
        check(not crossing or self.k_high > self.k, "k_high", f"{self.k_high!r} must be above k = {self.k}")
        check(not crossing or self.direction == 1, "direction", "the crossing reads RL above the base at k and "
              "below it at k_high: +1")
        check(self.margin >= 0 and self.margin_high >= 0, "margin", "margins are >= 0 (the direction says which way)")
        check(self.power_for > self.margin, "power_for", f"{self.power_for!r} must lie beyond the margin")
        check(bool(self.power_reason.strip()), "power_reason", "empty: say why the power is for this effect")
        check(0 <= self.power <= 1, "power", f"{self.power!r} is not a probability")
        reads = TESTS[self.test].reads
        check(bool(self.base.strip()), "base", "name the bases (a passk arm; an answer row: the base it started from)")
        check(reads == ANSWER or all(a.strip() for a in self.rl_arms), "rl",
              f"a {self.test!r} row names its RL arm (a passk arm)")
        check(reads == PASSK or not self.rl, "rl", f"a {self.test!r} row reads its claim's answer file: no RL arm")
        check(reads == ANSWER or self.answer is None, "answer", f"a {self.test!r} row reads passk counts: no answer")
        check(reads == PASSK or self.scale == E.RAW, "scale", f"an answer's effect is on the {E.RAW!r} scale")
        check(reads == ANSWER or self.base not in self.rl_arms, "base",
              "the RL arm is compared with another arm, its bases")
        check(len(set(self.rl_arms)) == len(self.rl_arms), "rl", f"{self.rl!r}: an arm twice")
        check(self.min_seeds is None or self.min_seeds >= 1, "min_seeds", f"{self.min_seeds!r} must be >= 1")


@dataclass(frozen=True)
class Primaries:
    """params studies.primaries: the fixed `sequence` and the Holm `rest` (row keys), and the `rows`."""

    sequence: list[str]
    rest: list[str]
    rows: dict[str, Row]
    min_seeds: int = 2  # RL seeds per base a blocked row needs (run 1 had one)

    def __post_init__(self):
        keys = [*self.sequence, *self.rest]
        check(len(set(keys)) == len(keys), "rest", f"{keys}: each row is in the sequence or the rest, once")
        missing = [k for k in keys if k not in self.rows]
        check(not missing, "rows", f"{missing} of the sequence or the rest are not rows")
        idle = [k for k in self.rows if k not in keys]
        check(not idle, "rows", f"{idle} are in neither the sequence nor the rest")
        check(self.min_seeds >= 1, "min_seeds", f"{self.min_seeds!r} must be >= 1")


def load_config(params: Mapping) -> Primaries:
    """params studies.primaries, checked against the claims, gates and passk arms it names."""
    cfg = from_dict(Primaries, (params.get("studies") or {}).get("primaries"), SECTION)
    check_names(cfg, params)
    return cfg


def check_names(cfg: Primaries, params: Mapping) -> None:
    """Every row's claim, gates and arms exist, and its arms are of its task; an answer row's claim names its study
    and its direction is the claim's (each error names its key)."""
    studies = params.get("studies") or {}
    arms = passk.load_config(params)
    for key, row in cfg.rows.items():
        where = f"{SECTION}.rows.{key}"
        check(row.claim in (studies.get("claims") or {}), f"{where}.claim",
              f"{row.claim!r} is not a studies.claims key")
        for name in row.gates:
            check(name in (studies.get("gates") or {}), f"{where}.gates", f"{name!r} is not a studies.gates key")
        if TESTS[row.test].reads == ANSWER:
            claim = studies["claims"][row.claim]
            check(bool(claim.get("study")) and bool(answer_pair(row, claim)), f"{where}.claim",
                  f"{row.claim!r} names no study and primary on task {row.task!r} (give the row's `answer`)")
            check(row.direction == claim.get("expect", 1), f"{where}.direction",
                  f"{row.direction!r}: an answer's effect is b - a, and the claim expects {claim.get('expect')!r}")
            continue
        for side, arm in [*(("rl", a) for a in row.rl_arms), ("base", row.base)]:
            check(arm in arms.arms, f"{where}.{side}", f"{arm!r} is not a passk arm")
            check(arms.task_of(arm) == row.task, f"{where}.{side}", f"{arm!r} is of task {arms.task_of(arm)!r}")


def answer_pair(row: Row, claim: Mapping) -> str | None:
    """An answer row's pair: its own `answer`, else its claim's primary on the row's task (`Claim.primaries`)."""
    if row.answer:
        return row.answer
    return from_dict(Claim, dict(claim), f"studies.claims.{row.claim}").primaries().get(row.task)


def answer_file(row: Row, claims: Mapping) -> str:
    """reports/<study>/answers/<pair>.json of an answer row."""
    claim = claims[row.claim]
    return answer_path(claim["study"], answer_pair(row, claim))


# ----------------------------------------------------------------------------- the data: per-problem pass@k

def started_from(params: Mapping, checkpoint: str) -> str:
    """The checkpoint an RL checkpoint `rl_<run>` was trained from: its run's `init` in any runs* section."""
    run = checkpoint.removeprefix("rl_")
    for name, section in params.items():
        if name.startswith("runs") and isinstance(section, Mapping) and run in section:
            return section[run]["init"]
    raise ConfigError("passk.models", f"{checkpoint}: no run of runs* trained this checkpoint",
                      "an RL arm's models are the checkpoints rl_<run> of runs it names")


def start_of(params: Mapping, checkpoint: str) -> str:
    """The base checkpoint a model stands for as a block: an RL checkpoint's `init`, a base's own name."""
    return started_from(params, checkpoint) if checkpoint.startswith("rl_") else checkpoint


def seeds_by_base(params: Mapping, cfg: passk.Config, row: Row) -> dict[str, list[str]]:
    """{base model key: the RL arms' model keys started from it}, in the base arm's order; bases of the arm no
    RL run started from are not blocks of this row. Where `base` is itself an RL arm, its model and the RL arms'
    models meet on the base checkpoint both started from."""
    by_start = {start_of(params, cfg.models[b].model): b for b in cfg.arms[row.base]}
    groups: dict[str, list[str]] = {b: [] for b in cfg.arms[row.base]}
    for arm in row.rl_arms:
        for m in cfg.arms[arm]:
            init = started_from(params, cfg.models[m].model)
            check(init in by_start, f"passk.arms.{arm}", f"{m} started from {init}, no model of arm {row.base!r}")
            groups[by_start[init]].append(m)
    return {b: seeds for b, seeds in groups.items() if seeds}


def shares(data: dict, set_name: str, k: int) -> np.ndarray:
    """A model's per-problem pass@k on a set from its verified counts."""
    return np.array([pass_at_k(data["N"], c, k) for c in data["sets"][set_name]["counts"]])


@dataclass(frozen=True)
class Arms:
    """A row's data at one k: (bases, problems) base shares and, per base, its (seeds, problems) RL shares."""

    base: np.ndarray
    rl: list[np.ndarray]


def arms_at(groups: dict[str, list[str]], data: Mapping[str, dict], set_name: str, k: int) -> Arms:
    base = np.array([shares(data[b], set_name, k) for b in groups])
    return Arms(base, [np.array([shares(data[m], set_name, k) for m in seeds]) for seeds in groups.values()])


# ----------------------------------------------------------------------------- the tests

def estimate_blocked(arms: Arms, scale: str, min_seeds: int) -> E.Estimate:
    return E.blocked(arms.base, arms.rl, scale, min_seeds=min_seeds)


def estimate_single(arms: Arms, scale: str, min_seeds: int) -> E.Estimate:
    if len(arms.rl) != 1:
        raise ValueError(f"a single-base row reads one base, got {len(arms.rl)}")
    return E.single_base(arms.base[0], arms.rl[0], scale)


def estimate_answer(answer: Mapping, scale: str, min_seeds: int) -> E.Estimate:
    """An answer file's effect b - a with its se and df: the mean over one base's RL seeds (per-run values are not
    kept, so no sign test and no correlation with the start)."""
    check(answer["seeds"] >= 2, "answer", f"{answer!r}: a t over RL seeds needs >= 2 seeds")  # se 0: p is 0 or 1
    return E.Estimate(E.RAW, float(answer["effect"]), float(answer["se"]), float(answer["df"]), "RL seed", (), ())


def t_result(row: Row, est: E.Estimate, high: E.Estimate | None) -> G.Result:
    return G.result_from_estimate(est, row.direction, row.margin)


def sign_result(row: Row, est: E.Estimate, high: E.Estimate | None) -> G.Result:
    """The exact sign test across bases, each direction (no equivalence test: a count has no interval)."""
    return G.Result(E.sign_test(est, row.direction, row.margin).p, E.sign_test(est, -row.direction, row.margin).p)


def crossing_result(row: Row, est: E.Estimate, high: E.Estimate | None) -> G.Result:
    return G.result_from_crossing(E.crossing(est, high, row.margin, row.margin_high))


@dataclass(frozen=True)
class Test:
    """How a test estimates (per unit, on a scale) and what p-values it gives; `opposite`: it holds a test of
    the opposite direction (the crossing, an intersection-union test, does not)."""

    estimate: Callable[[Any, str, int], E.Estimate]  # from `Arms` (PASSK) or an answer dict (ANSWER)
    result: Callable[[Row, E.Estimate, E.Estimate | None], G.Result]
    opposite: bool = True
    reads: str = PASSK


TESTS: dict[str, Test] = {
    "blocked": Test(estimate_blocked, t_result),
    "sign": Test(estimate_blocked, sign_result),
    "single": Test(estimate_single, t_result),
    "crossing": Test(estimate_blocked, crossing_result, opposite=False),
    "answer": Test(estimate_answer, t_result, reads=ANSWER),
}


# ----------------------------------------------------------------------------- the family

@dataclass(frozen=True)
class Primary:
    """A judged row: its config, the claim's paper and wording, the estimate on its scale at k (and at k_high for
    the crossing), the raw gain beside each, the run's unadjusted p-values and the family's judgement. A row a gate
    took out before the run is not estimated (None)."""

    key: str
    row: Row
    paper: str
    wording: str
    judgement: G.Judgement
    estimate: E.Estimate | None = None
    raw: E.Estimate | None = None
    high: E.Estimate | None = None
    raw_high: E.Estimate | None = None
    result: G.Result | None = None
    note: str = ""  # what the data say beside the verdict (Yue's crossing: RL at or above the base at every k)
    source: str = ""  # an answer row's answer file (from params: also where a gate took the row out)

    @property
    def verdict(self) -> str:
        """The verdict in words; a single-base row's names its base (issue 70 item 2)."""
        one_base = self.row.test == "single" or TESTS[self.row.test].reads == ANSWER
        return f"{self.judgement.verdict} on {self.row.base}" if one_base else self.judgement.verdict

    @property
    def why(self) -> str:
        return "; ".join(x for x in (self.judgement.reason, self.note) if x)

    @property
    def bound(self) -> float | None:
        """The one-sided (1 - TAIL) bound the claim must clear, in its direction."""
        return None if self.estimate is None else self.estimate.bound(E.TAIL, self.row.direction)

    @property
    def sign(self) -> E.SignTest | None:
        """The sign test across units (None: not estimated, or an answer, which keeps no per-unit values)."""
        if self.estimate is None or not self.estimate.values:
            return None
        return E.sign_test(self.estimate, self.row.direction, self.row.margin)

    @property
    def correlation(self) -> float | None:
        return None if self.estimate is None else E.start_correlation(self.estimate)


@dataclass(frozen=True)
class Reading:
    """What the run gives a row: its estimates and p-values."""

    estimate: E.Estimate
    raw: E.Estimate
    result: G.Result
    high: E.Estimate | None = None
    raw_high: E.Estimate | None = None


def read_row(row: Row, groups: dict[str, list[str]], data: Mapping[str, dict], min_seeds: int) -> Reading:
    """A row's estimates (its scale and the raw gain, at k and k_high) and its p-values."""
    test = TESTS[row.test]

    def at(k: int | None, scale: str) -> E.Estimate | None:
        return None if k is None else test.estimate(arms_at(groups, data, row.set, k), scale, min_seeds)

    est, high = at(row.k, row.scale), at(row.k_high, row.scale)
    return Reading(est, at(row.k, E.RAW), test.result(row, est, high), high, at(row.k_high, E.RAW))


def read_answer(row: Row, answer: Mapping) -> Reading:
    """An answer row's estimate (on the raw scale: the raw gain is itself) and its p-values."""
    est = TESTS[row.test].estimate(answer, row.scale, 1)
    return Reading(est, est, TESTS[row.test].result(row, est, None))


def curve_ks(n: int) -> list[int]:
    """The k of a pass@k curve from N samples: 1, 2, 4, ... up to N (N itself last)."""
    ks = [2 ** i for i in range(int(math.log2(n)) + 1)]
    return ks if ks[-1] == n else [*ks, n]


def at_or_above(row: Row, groups: dict[str, list[str]], data: Mapping[str, dict]) -> str:
    """Yue's crossing (issue 70 item 5): where on every base the RL seeds' mean pass@k is at or above the base's at
    every k of the curve (mean over the set's problems), the sentence that says so; else "" (the data do not)."""
    if not groups:
        return ""
    n = min(data[m]["N"] for b, seeds in groups.items() for m in (b, *seeds))
    ks = curve_ks(n)
    above = [b for b, seeds in groups.items()
             if all(np.mean([shares(data[m], row.set, k).mean() for m in seeds]) >= shares(data[b], row.set, k).mean()
                    - passk.TIE for k in ks)]
    if len(above) < len(groups):
        return ""
    return (f"on {row.set}, {row.rl_label} is at or above {row.base} at every k of the curve "
            f"(k = {ks[0]} to {ks[-1]}) on every base ({len(above)} of {len(groups)}): no crossing to test")


def slot(key: str, row: Row, specs: Mapping[str, G.GateSpec], in_run: Mapping[str, float]) -> G.Slot:
    """The row's place in the family: its pre-run power and its gates, read before and (where given) in the run."""
    gates = tuple(dataclasses.replace(specs[name].gate(name), run=in_run.get(name)) for name in row.gates)
    return G.Slot(key, row.power, gates, TESTS[row.test].opposite)


def load_data(root: Path, models: set[str]) -> dict[str, dict]:
    return {m: read_json(root / passk_data_path(m)) for m in sorted(models)}


def judge_primaries(cfg: Primaries, params: Mapping, root: Path, specs: Mapping[str, G.GateSpec],
                    in_run: Mapping[str, float] | None = None) -> list[Primary]:
    """Every row judged, sequence first then the rest: estimated from reports/passk/data under `root` (rows a gate
    took out before the run are not read), then `gatekeeping.judge`. `in_run`: gates' readings in the run."""
    claims = (params.get("studies") or {}).get("claims") or {}
    slots = {k: slot(k, r, specs, in_run or {}) for k, r in cfg.rows.items()}
    groups, answers = reads(cfg, params, slots)
    data = load_data(root, {m for g in groups.values() for b, seeds in g.items() for m in (b, *seeds)})
    readings = {k: read_row(cfg.rows[k], groups[k], data, cfg.rows[k].min_seeds or cfg.min_seeds) for k in groups
                if slots[k].out_before is None}
    readings |= {k: read_answer(cfg.rows[k], read_json(root / path)) for k, path in answers.items()}
    notes = {k: at_or_above(cfg.rows[k], groups[k], data) for k in groups if slots[k].out_before is not None}
    judged = G.judge([slots[k] for k in cfg.sequence], [slots[k] for k in cfg.rest],
                     {k: r.result for k, r in readings.items()})
    out = []
    for key, j in judged.items():
        row, reading = cfg.rows[key], readings.get(key)
        claim = claims.get(row.claim) or {}
        parts = {} if reading is None else {f.name: getattr(reading, f.name) for f in dataclasses.fields(Reading)}
        source = answer_file(row, claims) if TESTS[row.test].reads == ANSWER else ""
        out.append(Primary(key, row, claim.get("paper", ""), claim.get("claim", ""), j, note=notes.get(key, ""),
                           source=source, **parts))
    return out


def reads(cfg: Primaries, params: Mapping, slots: Mapping[str, G.Slot]) -> tuple[dict, dict[str, str]]:
    """What the run's data are read for: {row: its bases' RL seeds} of the passk rows no gate took out and of every
    crossing (one a gate took out still reads the curve, for `at_or_above`'s sentence), and {row: its answer file}
    of the answer rows no gate took out."""
    arms = passk.load_config(params)
    claims = (params.get("studies") or {}).get("claims") or {}
    live = [k for k, s in slots.items() if s.out_before is None]
    groups = {k: seeds_by_base(params, arms, r) for k, r in cfg.rows.items()
              if TESTS[r.test].reads == PASSK and (k in live or r.test == "crossing")}
    answers = {k: answer_file(cfg.rows[k], claims) for k in live if TESTS[cfg.rows[k].test].reads == ANSWER}
    return groups, answers


def inputs(cfg: Primaries, params: Mapping) -> list[str]:
    """The files `judge_primaries` reads under the given params (the stage's deps are their folders)."""
    slots = {k: slot(k, r, G.gate_specs(params), {}) for k, r in cfg.rows.items()}
    groups, answers = reads(cfg, params, slots)
    models = sorted({m for g in groups.values() for b, seeds in g.items() for m in (b, *seeds)})
    return [passk_data_path(m) for m in models] + sorted(set(answers.values()))


# ----------------------------------------------------------------------------- the table

def signed(x: float | None, digits: int = 3) -> str:
    return "" if x is None or not math.isfinite(x) else f"{x:+.{digits}f}"


def estimate_text(est: E.Estimate | None, direction: int, k: int, label: str | None = None) -> str:
    """"pass@k: +2.857 (≥ +2.40)": the estimate and the one-sided bound its direction must clear (`label`: in place
    of pass@k, an answer's "b − a")."""
    if est is None:
        return ""
    bound = signed(est.bound(E.TAIL, direction), 2)
    return f"{label or f'pass@{k}'}: {signed(est.value)} ({'≥' if direction > 0 else '≤'} {bound})"


def sign_text(est: E.Estimate | None, direction: int, margin: float) -> str:
    if est is None:
        return ""
    s = E.sign_test(est, direction, margin)
    return f"{s.beyond} of {s.beyond + s.short} (p {s.p:.2g})"


def p_text(p: float | None) -> str:
    return "" if p is None else f"{p:.2g}"


def table_row(p: Primary) -> dict[str, str]:
    """One line of the table; a crossing shows its two parts, each in the direction it claims."""
    r, j = p.row, p.judgement
    parts = [(p.estimate, p.raw, r.direction, r.k, r.margin), (p.high, p.raw_high, -1, r.k_high, r.margin_high)]
    parts = [x for x in parts if x[0] is not None]
    corr = [E.start_correlation(est) for est, *_ in parts]
    label = "b − a" if p.source else None  # an answer's effect, arm b less arm a, at no k
    return {
        "row": code(p.key), "claim": f"{p.paper}: {p.wording}" if p.paper else r.claim, "task": r.task,
        "test": f"{r.test} ({p.source})" if p.source else r.test, "scale": r.scale,
        "estimate (one-sided bound)": "; ".join(estimate_text(est, d, k, label) for est, _, d, k, _ in parts),
        "raw gain": "; ".join(f"{label or f'pass@{k}'}: {signed(raw.value)}" for _, raw, _, k, _ in parts),
        "sign test": "; ".join(sign_text(est, d, m) for est, _, d, _, m in parts if est.values),
        "r with start": "; ".join("" if c is None else f"{c:+.2f}" for c in corr),
        "p": p_text(None if p.result is None else p.result.p_claimed), "adjusted p": p_text(j.p),
        "verdict": p.verdict, "why": p.why,
    }


def markdown(rows: list[Primary]) -> str:
    """The judged family as a markdown table, then the verdicts' legend."""
    df = pd.DataFrame([table_row(p) for p in rows])
    body = df.to_markdown(index=False, disable_numparse=True) if len(df) else "(no rows)"
    return f"{body}\n\nVerdicts:\n\n{G.legend()}\n"



# ----------------------------------------------------------------------------- the stage: report_primaries

def outputs(cfg: Primaries) -> list[str]:
    return [OUT, study_metrics_path("primaries")]


def number(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else round(float(x), 6)


def estimate_json(est: E.Estimate | None, direction: int, k: int | None) -> dict | None:
    """A part's estimate on its scale: value, se, df, units and the one-sided bound its direction must clear."""
    if est is None:
        return None
    return {"k": k, "scale": est.scale, "value": number(est.value), "se": number(est.se), "df": number(est.df),
            "unit": est.unit, "units": est.units or None, "bound": number(est.bound(E.TAIL, direction)),
            "direction": direction}


def rounded(x: float | None, digits: int = 4) -> float | None:
    return None if x is None else round(x, digits)


def row_json(p: Primary, specs: Mapping[str, G.GateSpec], in_run: Mapping[str, float] | None = None) -> dict:
    """One judged row for reports/metrics/primaries.json (None where the row was not estimated)."""
    r, j, s = p.row, p.judgement, p.sign
    gates = {name: {"measured": specs[name].measured, "threshold": specs[name].threshold,
                    "at_least": specs[name].at_least, "in_run": rounded((in_run or {}).get(name)),
                    "passed_before": not specs[name].gate(name).failed_before} for name in r.gates}
    return {
        "key": p.key, "claim": r.claim, "paper": p.paper, "wording": p.wording, "task": r.task, "test": r.test,
        "answer": p.source or None,
        "scale": r.scale, "rl": list(r.rl_arms) if r.rl else None, "base": r.base, "set": r.set, "k": r.k,
        "k_high": r.k_high,
        "direction": r.direction, "margin": r.margin,
        "verdict": j.verdict, "verdict_text": p.verdict, "reason": p.why, "family": j.family,
        "estimate": estimate_json(p.estimate, r.direction, r.k), "bound": number(p.bound),
        "high": estimate_json(p.high, -1, r.k_high),
        "raw_gain": number(None if p.raw is None else p.raw.value),
        "raw_gain_high": number(None if p.raw_high is None else p.raw_high.value),
        "sign": None if s is None else dataclasses.asdict(s),
        "correlation_with_start": number(p.correlation),
        "p": None if p.result is None else {"claimed": number(p.result.p_claimed),
                                            "opposite": number(p.result.p_opposite),
                                            "equivalent": number(p.result.p_equivalent)},
        "adjusted_p": number(j.p), "level": number(j.level),
        "power": r.power, "power_judged": number(j.power), "power_for": r.power_for, "power_reason": r.power_reason,
        "gates": gates,
    }


def page(cfg: Primaries, rows: list[Primary]) -> str:
    """reports/primaries.md: the family's order and alpha, then the table and the verdicts' legend (`markdown`)."""
    seq = " → ".join(code(k) for k in cfg.sequence) or "(none)"
    rest = ", ".join(code(k) for k in cfg.rest) or "(none)"
    return (f"# Run 2's primaries\n\nThe pre-registered rows of params `{SECTION}` (issue 70), judged by stage "
            f"report_primaries (`reasonrl.studies.primaries`) from the passk study's per-problem counts "
            f"({PASSK_DATA}) and, for single-base claims, the answer files of their studies. One family at alpha = "
            f"{G.ALPHA:g} over both directions of every claim:\n\n"
            f"- **Sequence** (serial gatekeeping, in this order, each direction at {G.ALPHA / 2:g} while every claim "
            f"before it was reproduced): {seq}.\n"
            f"- **Rest** (Holm at {G.ALPHA:g} over its one-sided hypotheses, only once the whole sequence is "
            f"reproduced; otherwise \"not reached\"): {rest}.\n"
            f"- A gate (`studies.gates`) that failed on the validation runs before the run takes its row out: \"not "
            f"testable here\", its data not read. A single-base row's verdict names its base; the RL seed is its "
            f"unit.\n\nBounds are one-sided at {E.TAIL:g} in the row's direction.\n\n{markdown(rows)}")


def report(cfg: Primaries, params: Mapping, root: Path, in_run: Mapping[str, float] | None = None) -> None:
    """Stage report_primaries: judge the rows under `root` (with the gates' readings in the run, `in_run`:
    reasonrl.studies.gate_readings) and write reports/primaries.md and the metrics."""
    specs = G.gate_specs(params)
    rows = judge_primaries(cfg, params, root, specs, in_run)
    claims = (params.get("studies") or {}).get("claims") or {}
    write_text(root / OUT, page(cfg, rows))
    write_json(root / study_metrics_path("primaries"), {
        "alpha": G.ALPHA, "sequence": cfg.sequence, "rest": cfg.rest,
        "rows": [row_json(p, specs, in_run) | {"mechanism": mechanism(p, claims, root)} for p in rows]})


def mechanism(p: Primary, claims: Mapping, root: Path) -> dict | None:
    """An answer row's reading of its claim's run-1 `mechanism` ({key, min, what}: Shao's clipped share, dynamic
    sampling's updates ratio), with the value its answer file holds: a description beside the verdict, which does
    not read it (run 2's preconditions are its gates)."""
    spec = (claims.get(p.row.claim) or {}).get("mechanism")
    path = root / p.source if p.source else None
    if not spec or path is None or not path.exists():
        return None
    value = read_json(path).get(spec["key"])
    return {**spec, "value": value, "reached": None if value is None else value >= spec["min"]}
