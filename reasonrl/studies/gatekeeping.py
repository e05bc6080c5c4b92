"""Run 2's family (issue 70): a pre-registered sequence of cross-base claims, then a Holm family of the rest,
gates for every precondition, and the seven verdicts, as pure functions of p-values, power and gate readings.

**Hypotheses.** A claim with a direction holds two one-sided hypotheses: "the effect is at most the margin in the
claimed direction" (its rejection: reproduced) and the same in the opposite direction (contradicted); each is
tested at `ALPHA / 2` = 0.025, the tail of a two-sided 95% interval (`reasonrl.estimands.TAIL`). Their rejection
regions are disjoint, so a claim's pair spends `ALPHA` = 0.05. A claim without an opposite test (Yue's crossing, an
intersection-union test) holds one hypothesis, also at 0.025. Equivalence ("not reproduced") is the two one-sided
tests of |effect| >= margin at the claim's level, read as run 1 read it: the interval at that level inside the
margin: a declaration beside the family (its region is disjoint from both directions'), not counted in the 0.05
below.

**Serial gatekeeping.** The sequence (e.g. yue_pass1 hop -> zhang_edge hop -> ...) is tested in its fixed order,
each claim's pair at the full 0.025 per direction while every claim before it was reproduced. At the first claim not
reproduced the sequence stops: that claim gets its verdict (contradicted, equivalent, inconclusive or underpowered),
and every later one, and every row of the rest, reads "not reached". The adjusted p of a sequence claim is the
largest 2 p of the claimed direction so far (compared with 0.05). Why the family holds 0.05, by induction from the
last claim: suppose that from claim j + 1 on the chance of any false rejection is at most 0.05. If claim j's effect
lies within its margins, both its hypotheses are true and the chance of rejecting either is at most 0.025 + 0.025
(the regions are disjoint); a false rejection has then happened, whatever follows. If it lies beyond the margin in
the claimed direction, at d = (effect - margin) / se >= 0, the only false rejection at j is a contradiction, and the
chance of an error from j on is at most Phi(-d - c) + 0.05 Phi(d - c) (c = z_0.975, a normal statistic). That
product assumes the later claims' errors are independent of claim j passing; claims that read the same runs need not
be, and under arbitrary dependence the bound is Phi(-d - c) + min(Phi(d - c), 0.05), a little above 0.05 near d =
0.3 (0.0115 + 0.05): the argument holds for independent statistics, and for dependent ones it is an assumption,
which the pre-registration states. Under it the bound is at most 0.05 because Phi(-d - c) <= 0.05 Phi(c - d) at
every d >= 0 (0.025 against 0.049 at d = 0, and the ratio Phi(-d - c) / Phi(c - d) falls with d). If it lies beyond
the margin the other way, a rejection of the claimed direction (at most 0.025) is the only error. Only after the
whole sequence is reproduced does the rest get alpha: Holm at 0.05 over its one-sided hypotheses (M of them, two per
directional claim), which holds 0.05 by itself; its adjusted p is raised to the sequence's.

**Gates.** Each precondition of a claim is a number measured on validation runs before the run, with its threshold
fixed at pre-registration (`Gate`). A gate that fails before the run takes its row out of the family: "not testable
here: <gate> measured <value>, needs <threshold>"; a sequence claim taken out leaves the sequence, which goes on
without it. A gate that passed before the run and fails in the run keeps its row in the family at p = 1 (both
directions, and no equivalence): a sequence stops there; in Holm it still counts in M.

**Power.** A claim's pre-run power (`Slot.power`) is computed before the run on its own scale at the one-sided level
it is tested at if reached (`prerun_levels`: 0.025 in the sequence; ALPHA / M in the rest, M counted over the rows
whose gates passed before the run: Holm's first step, which its later steps only raise, so the power is a lower
bound), for `power_for` capped at the headroom (`reasonrl.estimands.claim_power`). A sequence claim's power is
the joint probability that it and every earlier one pass: the product of their powers (`sequence_power`), the
value under independence. Claims of a sequence read the same runs, and claims pointing the same way on them are
positively associated, under which the product is a lower bound (for normal statistics with correlations >= 0,
Slepian's inequality); a sequence must not hold claims that oppose each other on the same comparison (yue_cross and
zhang_edge cannot both pass). A rest row's power is its own at ALPHA / M: conditional on the sequence passing, which
is the only case in which it reads anything but "not reached".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .. import stats
from ..config import check, from_dict
from ..estimands import Crossing, Estimate, sign_test

ALPHA = 0.05  # the family's: both directions of every claim together
POWER = 0.8

# The verdicts, in the order a legend reads them; the words are the table's, the sentences the legend's.
REPRODUCED = "reproduced"
CONTRADICTED = "contradicted"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"
UNDERPOWERED = "underpowered"
NOT_REACHED = "not reached"
NOT_TESTABLE = "not testable here"
VERDICTS = {
    REPRODUCED: "the one-sided test in the claimed direction rejected, beyond the margin, at its level in the family",
    CONTRADICTED: "the one-sided test of the opposite direction rejected, beyond the margin, at its level in the "
                  "family",
    NOT_REPRODUCED: "equivalent: the interval at the claim's level lies inside the margin",
    INCONCLUSIVE: f"pre-run power >= {POWER:g}, and the interval reaches across the margin",
    UNDERPOWERED: f"pre-run power < {POWER:g}, and the interval reaches across the margin",
    NOT_REACHED: "an earlier claim of the pre-registered sequence was not reproduced, so no alpha reached this one",
    NOT_TESTABLE: "a gate fixed at pre-registration failed on the validation runs: the row left the family",
}


def legend() -> str:
    """The verdicts as a markdown list, generated from VERDICTS (a front page's legend)."""
    return "\n".join(f"- *{word}*: {meaning}" for word, meaning in VERDICTS.items())


@dataclass(frozen=True)
class Gate:
    """A precondition: `name` measured on validation runs `before` the run (and, once run, in it: `run`), passing
    when >= `threshold` (`at_least`) or <= it."""

    name: str
    threshold: float
    before: float
    run: float | None = None
    at_least: bool = True

    def passes(self, value: float) -> bool:
        return value >= self.threshold if self.at_least else value <= self.threshold

    @property
    def failed_before(self) -> bool:
        return not self.passes(self.before)

    @property
    def failed_in_run(self) -> bool:
        return not self.failed_before and self.run is not None and not self.passes(self.run)

    def text(self, value: float) -> str:
        return f"{self.name} measured {value:.3g}, needs {'≥' if self.at_least else '≤'} {self.threshold:g}"


@dataclass(frozen=True)
class GateSpec:
    """A gate as pre-registered in params (`studies.gates.<name>`), before it is measured: what it reads, its
    threshold and direction, and the extra bounds some gates measure with (`scripts/gates.py`)."""

    threshold: float
    what: str
    at_least: bool = True
    measured: float | None = None  # scripts/gates.py's value on the validation side runs, entered before the run
    ceiling: float | None = None  # crossing_arm: the arm's largest pass@k that leaves room below 1
    pass1: float | None = None  # exposure_foothold: a base's far pass@1 at most this (a foothold, not mastery)
    top_k: float | None = None  # exposure_foothold: and its far pass@256 at least this

    def __post_init__(self):
        check(bool(self.what.strip()), "what", "empty: say what the gate measures")
        for key in ("ceiling", "pass1", "top_k"):
            value = getattr(self, key)
            check(value is None or 0 <= value <= 1, key, f"{value!r} is not a share in [0, 1]")

    def gate(self, name: str, before: float | None = None) -> Gate:
        """The gate with its reading before the run (`measured` unless given)."""
        value = self.measured if before is None else before
        check(value is not None, f"{GATES_KEY}.{name}.measured", "not measured yet",
              "run scripts/gates.py and enter its value before the run")
        return Gate(name, self.threshold, value, at_least=self.at_least)


GATES_KEY = "studies.gates"
FOOTHOLD = (0.1, 0.2)  # exposure_foothold's bounds where params name none: pass@1 at most, pass@k at least


def foothold(spec: GateSpec | None, pass1: float, top: float) -> bool:
    """exposure_foothold's rule for one base (`scripts/gates.py` before the run, `gate_readings` in it): its far
    pass@1 at most the spec's `pass1` (a foothold, not mastery) and its pass@k at least its `top_k`."""
    most = FOOTHOLD[0] if spec is None or spec.pass1 is None else spec.pass1
    least = FOOTHOLD[1] if spec is None or spec.top_k is None else spec.top_k
    return pass1 <= most and top >= least


def gate_specs(params: Mapping) -> dict[str, GateSpec]:
    """params studies.gates: {name: GateSpec}, each checked (unknown keys and bad values name their key)."""
    node = (params.get("studies") or {}).get("gates") or {}
    check(isinstance(node, Mapping), GATES_KEY, f"expected a mapping, got {node!r}")
    return {name: from_dict(GateSpec, spec, f"{GATES_KEY}.{name}") for name, spec in node.items()}


@dataclass(frozen=True)
class Slot:
    """A pre-registered row: its key, its pre-run power (own, at `prerun_levels`' level), its gates, and whether it
    holds a one-sided test of the opposite direction (False: an intersection-union test)."""

    key: str
    power: float | None = None
    gates: tuple[Gate, ...] = ()
    opposite: bool = True

    @property
    def out_before(self) -> Gate | None:
        """The first gate that failed before the run, else None."""
        return next((g for g in self.gates if g.failed_before), None)

    @property
    def out_in_run(self) -> Gate | None:
        """The first gate that passed before the run and failed in it, else None."""
        return next((g for g in self.gates if g.failed_in_run), None)


@dataclass(frozen=True)
class Result:
    """A row's unadjusted one-sided p-values from the run: the claimed direction beyond the margin, the opposite
    direction (None: no such test), and the equivalence test (TOST; None: none)."""

    p_claimed: float
    p_opposite: float | None = None
    p_equivalent: float | None = None


def result_from_estimate(est: Estimate, direction: int, margin: float = 0.0, with_sign: bool = False) -> Result:
    """A directional claim's p-values from its estimate, margins on the estimate's own scale. `with_sign`: the claim
    of direction must hold on the exact sign test across units as well (an intersection-union test of the two, each
    p the larger; at 0.025 it needs >= 6 units, 1/32 = 0.031 at 5)."""
    p_c, p_o = est.p_beyond(margin, direction), est.p_beyond(margin, -direction)
    if with_sign:
        p_c = max(p_c, sign_test(est, direction, margin).p)
        p_o = max(p_o, sign_test(est, -direction, margin).p)
    return Result(p_c, p_o, est.p_equivalent(margin) if margin > 0 else None)


def result_from_crossing(c: Crossing) -> Result:
    """Yue's crossing: one hypothesis (the IUT's p), no opposite and no equivalence test."""
    return Result(c.p)


@dataclass(frozen=True)
class Judgement:
    """A row's verdict and why; `p`: its adjusted p (compared with ALPHA), `level`: the one-sided level its claimed
    test was held to, `family`: "sequence", "rest", or None (out of the family); `power`: the pre-run power its
    verdict read (the sequence's joint)."""

    key: str
    verdict: str
    reason: str
    family: str | None = None
    p: float | None = None
    level: float | None = None
    power: float | None = None


def sequence_power(powers: Sequence[float]) -> list[float]:
    """Power of each sequence claim as the joint probability that it and every earlier one pass: the running
    product (independence; a lower bound for positively associated claims, see the module's doc)."""
    out, joint = [], 1.0
    for p in powers:
        if not 0 <= p <= 1:
            raise ValueError(f"power {p!r} outside [0, 1]")
        joint *= p
        out.append(joint)
    return out


def prerun_levels(sequence: Sequence[Slot], rest: Sequence[Slot], alpha: float = ALPHA) -> dict[str, float | None]:
    """The one-sided level each row's claimed test is held to if reached, fixed before the run: alpha / 2 in the
    sequence, alpha / M in the rest (M: the rest's one-sided hypotheses whose rows passed their gates before the
    run); None for a row a gate takes out."""
    _check_keys(sequence, rest)
    m = sum(1 + s.opposite for s in rest if s.out_before is None)
    out = {s.key: (alpha / 2 if s.out_before is None else None) for s in sequence}
    return out | {s.key: (alpha / m if s.out_before is None else None) for s in rest}


def verdict(p_claimed: float, p_opposite: float | None, p_equivalent: float | None, power: float,
            alpha: float = ALPHA, gates: Sequence[Gate] = (), stopped_at: str | None = None) -> tuple[str, str]:
    """(verdict, reason) of one row from its adjusted p-values (each compared with `alpha`), its pre-run power and
    its gates, in this order: a gate failed before the run (not testable here); the sequence stopped before it (not
    reached: `stopped_at` names where); a gate failed in the run (p = 1: inconclusive or underpowered, by power);
    the claimed direction rejected (reproduced); the opposite one (contradicted); equivalence (not reproduced);
    else inconclusive (power >= 0.8) or underpowered."""
    out = next((g for g in gates if g.failed_before), None)
    if out is not None:
        return NOT_TESTABLE, f"{NOT_TESTABLE}: {out.text(out.before)}"
    if stopped_at is not None:
        return NOT_REACHED, f"the sequence stopped at {stopped_at}"
    powered = power >= POWER
    undecided = INCONCLUSIVE if powered else UNDERPOWERED
    power_text = f"pre-run power {power:.2f} {'≥' if powered else '<'} {POWER:g}"
    late = next((g for g in gates if g.failed_in_run), None)
    if late is not None:
        return undecided, f"{late.text(late.run)} in the run (it passed before): held at p = 1; {power_text}"
    if p_claimed <= alpha:
        return REPRODUCED, f"adjusted p {p_claimed:.3g} ≤ {alpha:g} in the claimed direction"
    if p_opposite is not None and p_opposite <= alpha:
        return CONTRADICTED, f"adjusted p {p_opposite:.3g} ≤ {alpha:g} in the opposite direction"
    if p_equivalent is not None and p_equivalent <= alpha:
        return NOT_REPRODUCED, f"equivalent: adjusted p {p_equivalent:.3g} ≤ {alpha:g} for |effect| < margin"
    return undecided, f"{power_text}; the interval reaches across the margin"


def _check_keys(sequence: Sequence[Slot], rest: Sequence[Slot]) -> None:
    keys = [s.key for s in (*sequence, *rest)]
    if len(set(keys)) != len(keys):
        raise ValueError(f"row keys must be unique across the sequence and the rest: {keys}")


def _held(slot: Slot, results: Mapping[str, Result]) -> Result:
    """The row's p-values: p = 1 where a gate failed in the run, else the run's."""
    if slot.out_in_run is not None:
        return Result(1.0, 1.0 if slot.opposite else None, None)
    if slot.key not in results:
        raise KeyError(f"{slot.key}: no result from the run (a precondition that can fail is a Gate)")
    r = results[slot.key]
    if (r.p_opposite is not None) != slot.opposite:
        raise ValueError(f"{slot.key}: the slot {'holds' if slot.opposite else 'has no'} opposite test, the result "
                         f"{'has none' if slot.opposite else 'has one'}")
    return r


def _power(slot: Slot) -> float:
    if slot.power is None or not 0 <= slot.power <= 1:
        raise ValueError(f"{slot.key}: its pre-run power must be fixed in [0, 1], got {slot.power!r}")
    return slot.power


def judge(sequence: Sequence[Slot], rest: Sequence[Slot], results: Mapping[str, Result],
          alpha: float = ALPHA) -> dict[str, Judgement]:
    """Every row's Judgement, sequence first, then the rest (each in its given order). See the module's doc."""
    _check_keys(sequence, rest)
    out: dict[str, Judgement] = {}
    gated = [s for s in (*sequence, *rest) if s.out_before is not None]
    for s in gated:
        out[s.key] = Judgement(s.key, *verdict(1.0, None, None, 0.0, alpha, s.gates))
    seq = [s for s in sequence if s.out_before is None]
    running, stopped = 0.0, None
    joint = sequence_power([_power(s) for s in seq])
    for s, power in zip(seq, joint):
        if stopped is not None:
            out[s.key] = Judgement(s.key, *verdict(1, None, None, power, alpha, s.gates, stopped), "sequence",
                                   power=power)
            continue
        r = _held(s, results)
        adj = [None if p is None else max(running, min(1.0, 2 * p)) for p in (r.p_claimed, r.p_opposite,
                                                                               r.p_equivalent)]
        out[s.key] = Judgement(s.key, *verdict(*adj, power, alpha, s.gates), "sequence", adj[0], alpha / 2, power)
        running = adj[0]
        if running > alpha:
            stopped = s.key
    rest_in = [s for s in rest if s.out_before is None]
    if stopped is not None:
        for s in rest_in:
            out[s.key] = Judgement(s.key, *verdict(1, None, None, _power(s), alpha, s.gates, stopped), "rest",
                                   power=_power(s))
    elif rest_in:
        held = {s.key: _held(s, results) for s in rest_in}
        hyps = [(s.key, kind, p) for s in rest_in
                for kind, p in (("claimed", held[s.key].p_claimed), ("opposite", held[s.key].p_opposite))
                if p is not None]
        adjusted, _ = stats.holm([p for _, _, p in hyps], alpha)
        adj = {(k, kind): max(running, a) for (k, kind, _), a in zip(hyps, adjusted)}
        rejected = sum(a <= alpha for a in adjusted)
        remaining = len(hyps) - rejected  # Holm stopped: the hypotheses left are held at alpha / remaining
        ranks = sorted(range(len(hyps)), key=lambda i: hyps[i][2])
        level = {hyps[i][:2]: alpha / (len(hyps) - min(rank, rejected)) for rank, i in enumerate(ranks)}
        for s in rest_in:
            r = held[s.key]
            p_eq = None if r.p_equivalent is None else max(running, min(1.0, max(remaining, 1) * r.p_equivalent))
            v = verdict(adj[s.key, "claimed"], adj.get((s.key, "opposite")), p_eq, _power(s), alpha, s.gates)
            out[s.key] = Judgement(s.key, *v, "rest", adj[s.key, "claimed"], level[s.key, "claimed"], _power(s))
    order = [s.key for s in (*sequence, *rest)]
    return {k: out[k] for k in order}
