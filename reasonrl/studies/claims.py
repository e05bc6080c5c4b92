"""The claims against the papers: each claim's primary comparison, fixed in params (studies.claims) before
the run, judged once in one Holm family (`judge_all`). `reasonrl.studies.index` writes the verdicts."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from .. import stats
from ..config import check
from . import gatekeeping as G
from .paths import HEADLINE_TASKS, headline_study

STUDIES = (*map(headline_study, HEADLINE_TASKS), "methods", "passk", "zero", "hacking", "ablations", "exact")


@dataclass
class Claim:
    """A published claim and its one primary comparison, fixed in params (studies.claims) before the run:
    the answer file `primary` of `study`, expected in direction `expect` (+1: b > a, -1: a > b).
    `ceiling`: the largest value the measure can take (1 for accuracies; None when unbounded, as for a
    length), which says whether the claimed direction has room to show a difference; `equivalence` and
    `mde_target` override studies.equivalence and studies.mde_target for a measure on another scale;
    `equivalence_rel` instead sets the margin relative to arm a's value (`margin`)."""

    paper: str
    claim: str
    study: str
    primary: str
    expect: int
    ceiling: float | None = 1.0
    equivalence: float | None = None
    equivalence_rel: float | None = None  # the margin as a share of |arm a's value| (answer["a"]), not absolute
    mde_target: float | None = None  # overrides studies.mde_target for a measure on another scale
    task: str = "hop"  # the task `primary` is measured on
    tasks: dict[str, str] = field(default_factory=dict)  # the same claim's primary on further tasks: task -> pair
    # Where the claim's mechanism must act for the comparison to test it: {key: a number the primary answer
    # carries, min: the least value at which the mechanism acts, what: the words for it}; below, or absent, the
    # claim is not testable here (a rule fixed before the run, so it leaves the Holm family).
    mechanism: dict[str, float | str] | None = None
    # seeds per arm the design registered for the primary (docs/studies.md's power table): one number, or per task
    seeds: int | dict[str, int] | None = None
    power_for: float = 0.10  # the true effect (beyond the equivalence region's centre) the design is powered for

    def seeds_on(self, task: str) -> int | None:
        """The seeds per arm registered for the primary on `task`."""
        return self.seeds.get(task) if isinstance(self.seeds, dict) else self.seeds

    def primaries(self) -> dict[str, str]:
        """{task: its primary answer file}: each is one test of the Holm family."""
        return {self.task: self.primary, **self.tasks}

    def __post_init__(self):
        check(self.study in STUDIES, "study", f"{self.study!r} is not one of {list(STUDIES)}")
        check(self.expect in (1, -1), "expect", f"{self.expect!r} must be +1 (b > a) or -1 (a > b)")
        check(bool(self.primary), "primary", "name the answer file (pair) of the claim's primary comparison")
        check(self.task not in self.tasks, "tasks", f"{self.task!r} is the task of `primary` already")
        check(self.mde_target is None or self.mde_target > 0, "mde_target", f"{self.mde_target!r} must be > 0")
        check(self.equivalence_rel is None or self.equivalence_rel > 0, "equivalence_rel",
              f"{self.equivalence_rel!r} must be > 0")
        check(self.equivalence is None or self.equivalence_rel is None, "equivalence_rel",
              "give the margin as `equivalence` (absolute) or `equivalence_rel` (relative to arm a), not both")
        check(self.power_for > (self.equivalence or 0), "power_for", f"{self.power_for!r} must lie beyond the "
              f"equivalence region (±{self.equivalence or 0:g}): no smaller effect can be found beyond it")
        per_task = self.seeds if isinstance(self.seeds, dict) else {t: self.seeds for t in self.primaries()}
        check(set(per_task) == set(self.primaries()) or self.seeds is None, "seeds",
              f"{self.seeds!r}: name the seeds of every task of the claim, {sorted(self.primaries())}")
        check(all(n is None or n >= 2 for n in per_task.values()), "seeds",
              f"{self.seeds!r}: a run-level interval needs >= 2")
        if self.mechanism is not None:
            unknown = set(self.mechanism) - {"key", "min", "what"}
            check(not unknown and {"key", "min"} <= set(self.mechanism) and isinstance(self.mechanism["key"], str)
                  and isinstance(self.mechanism["min"], (int, float)), "mechanism",
                  f"{self.mechanism!r} must be {{key: <answer key>, min: <number>, what: <words>}}")


# One set of verdict words, gatekeeping's (run 2's family); run 1's judge below uses the five it shares with it, and
# its "underpowered" verdict names the seeds: "underpowered at 5 seeds"
REPRODUCED, NOT_REPRODUCED, CONTRADICTED, NOT_TESTABLE = G.REPRODUCED, G.NOT_REPRODUCED, G.CONTRADICTED, G.NOT_TESTABLE
UNDERPOWERED = G.UNDERPOWERED
EXACT_CLAIM = ("KL-regularised RL (analytic optimum)", "REINFORCE with KL in the reward reaches π* ∝ π_ref·exp(r/β)")
EXACT_TOLERANCE = 0.01  # KL(π‖π*) at the end of training below which the toy counts as having reached π*
HOLDS_EXACTLY = "holds exactly"  # the exact toy: its KL is enumerated, not estimated, so there is no interval to adjust
HOLDS, DOES_NOT_HOLD = "holds", "does not hold"  # the exact toy over sampling seeds: its interval is the seeds'
EXACT_NAMES = {"none": "plain REINFORCE"}  # the estimator `none` (no baseline): "reached by none" would read as no one


def comparison(answer: dict) -> stats.Comparison:
    """The stats.Comparison an answer dict of a manifest was written from."""
    fields = [f.name for f in dataclasses.fields(stats.Comparison)]
    return stats.Comparison(**{k: answer[k] for k in fields if k in answer})


def seeds_text(answer: dict | None, target: float) -> str:
    """The primary comparison's MDE with its seeds, and the seeds per arm an MDE of `target` would take."""
    if answer is None or answer["mde"] is None:
        return "—"
    now = f"{answer['mde']:.3g} ({answer['seeds']})"
    if answer["mde"] <= target:
        return f"{now}, ≤ {target:g}"
    if "run_sd" not in answer:  # written before answers kept their run spread
        return f"{now}; run spread not recorded"
    need = stats.seeds_for(comparison(answer), target)
    if need is None:
        return f"{now}; {target:g}: " + ("one seed measures no run term" if answer["seeds"] < 2 else
                                         "not by seeds alone (the test set's problem term)")
    return f"{now}; {target:g}: {need} seeds"


def no_variance(answer: dict | None, claim: Claim, primary: str, missing: str | None = None) -> str | None:
    """Why the claim's primary comparison cannot be computed (`missing`: the study's reason) or carries no
    interval, else None."""
    if answer is None:
        why = missing or "no such arms in this run"
        return f"its primary comparison {claim.study}/{primary} was not computed ({why})"
    if answer.get("constant") is not None:
        return "neither arm varies (both at the same value on every problem and run)"
    if answer["se"] == 0:
        return "the difference is the same on every problem and run: no interval to test"
    return None


def no_room(claim: Claim, answer: dict, equivalence: float) -> str | None:
    """Why the claimed direction has no room beyond the equivalence region (a ceiling), else None. The
    claim is not testable here whichever way its effect points: the rule is fixed before the run, so it leaves
    the Holm family (`untestable`)."""
    if claim.ceiling is None:
        return None
    start = answer["a"] if claim.expect > 0 else answer["b"]  # the arm that must be beaten
    room = claim.ceiling - start
    if room > equivalence:
        return None
    return (f"at the ceiling: the arm to beat is at {start:.3f}, leaving {room:.3f} of room, within the "
            f"{fmt_margin(equivalence)} equivalence region")


def at_chance(answer: dict, equivalence: float) -> str | None:
    """Why the comparison sits where guessing does (both arms within the equivalence region of the measure's
    guess floor, when the answer carries it as `chance`), else None."""
    chance = answer.get("chance")
    if chance is None or max(abs(answer["a"] - chance), abs(answer["b"] - chance)) > equivalence:
        return None
    return f"at chance: both arms within {fmt_margin(equivalence)} of the guess floor {chance:.3f}"


def fmt_margin(eq: float) -> str:
    """An equivalence region as printed: 3 significant digits (a relative one, 5% of 8.61486, is not known to 6)."""
    return f"±{eq:.3g}"


def margin(claim: Claim, answer: dict | None, equivalence: float) -> float:
    """The claim's equivalence half-width: equivalence_rel x |arm a's value| where the claim sets it relative
    (studies' `equivalence` while there is no answer), else its own `equivalence`, else the studies'."""
    if claim.equivalence_rel is not None and answer is not None:
        return claim.equivalence_rel * abs(answer["a"])
    return claim.equivalence if claim.equivalence is not None else equivalence


def no_mechanism(claim: Claim, answer: dict) -> str | None:
    """Why the claim's mechanism does not act in this comparison (Claim.mechanism), else None."""
    if claim.mechanism is None:
        return None
    key, least = claim.mechanism["key"], claim.mechanism["min"]
    what = claim.mechanism.get("what", key)
    value = answer.get(key)
    if value is None:
        return f"its mechanism ({what}) was not measured"
    return None if value >= least else f"mechanism absent: {what} {value:.3g} < {least:g}"


def untestable(claim: Claim, answer: dict | None, primary: str, equivalence: float,
               missing: str | None = None) -> str | None:
    """The rules fixed before the run under which a claim is not testable here, in order: no answer or no
    variance, a ceiling in the claimed direction, both arms at chance, the mechanism absent."""
    why = no_variance(answer, claim, primary, missing)
    if why is None:
        why = no_room(claim, answer, equivalence) or at_chance(answer, equivalence) or no_mechanism(claim, answer)
    return why


def needs_text(row: dict, ans: dict) -> str:
    """The seeds per arm that would give the power, as the verdict's reason says it."""
    if "run_sd" not in ans:  # answers written before they kept their run spread
        return ""
    if ans["seeds"] < 2:
        return " (one seed measures no run term to project from)"
    return f" (needs {row['needs']} for {stats.POWER:g})" if row["needs"] else " (not within 400 seeds)"


def unadjusted_side(ans: dict, expect: int, lo: float, hi: float) -> str:
    """Where the unadjusted interval beside an undecided verdict excludes 0, which way, and whether the
    Holm-adjusted one [lo, hi] does too: a reader sees the unadjusted one in the table."""
    if ans["ci_lo"] <= 0 <= ans["ci_hi"]:
        return ""
    side = "in" if (1 if ans["ci_lo"] > 0 else -1) == expect else "against"
    adjusted = "the Holm-adjusted one does not" if lo <= 0 <= hi else "so does the Holm-adjusted one"
    return f"; the unadjusted interval excludes 0, {side} the claimed direction; {adjusted}"


def n_seeds(n: int) -> str:
    return f"{n} seed" + ("s" if n != 1 else "")


def judge_all(claims: dict[str, Claim], by_study: dict[str, dict[str, dict]], equivalence: float,
              alpha: float = 1 - stats.CONFIDENCE) -> dict[tuple[str, str], dict]:
    """A row per claim and task, {(claim id, task): row}: its primary answer on that task, judged in one Holm
    family.

    A claim the rules of `untestable` exclude is "not testable here" and stays out of the family. Each
    remaining distinct comparison (study, answer file and equivalence region) is one test, however many claims
    read it: whether its effect lies beyond the equivalence region (|effect| > e, two-sided: p of
    `stats.p_value` with margin e). A claim is reproduced when its comparison's Holm-adjusted p is below alpha
    and the effect points the claimed way, contradicted when it points the other way; its interval, at Holm's
    level for it, then lies beyond ±e by construction. Otherwise it is not reproduced when its adjusted
    interval lies inside ±e (equivalent), or when the design had the power (`stats.power`, at alpha / m: a
    bound Holm's step-down only raises) to find `Claim.power_for`; else it is underpowered at its seeds."""
    rows, family = {}, {}
    for cid, c in claims.items():
        for task, primary in c.primaries().items():
            ans = by_study.get(c.study, {}).get(primary)
            missing = ans["not_computed"] if ans and "not_computed" in ans else None  # unwritten, and why
            ans = None if missing is not None else ans
            eq = margin(c, ans, equivalence)
            why = untestable(c, ans, primary, eq, missing)
            rows[cid, task] = {"id": cid, "claim": c, "task": task, "primary": primary, "answer": ans,
                               "equivalence": eq, "why": why}
            if why is None:
                family.setdefault((c.study, primary, eq), []).append((cid, task))
            else:
                rows[cid, task]["verdict"] = NOT_TESTABLE
    tests = list(family)
    first = [rows[family[k][0]]["answer"] for k in tests]
    pvals = [stats.p_value(a["effect"], a["se"], a["df"], k[2]) for a, k in zip(first, tests)]
    adjusted, levels = stats.holm(pvals, alpha)
    for key, ans, p_adj, level in zip(tests, first, adjusted, levels):
        eq = key[2]
        lo, hi = comparison(ans).at_level(level)
        for cid in family[key]:
            row, c = rows[cid], rows[cid]["claim"]
            power = stats.power(ans["se"], ans["df"], c.power_for, eq, alpha / len(tests))
            row |= {"p_holm": p_adj, "level": level, "lo": lo, "hi": hi, "family": len(tests), "power": power}
            if "run_sd" in ans:  # answers written before they kept their run spread project nothing
                row["needs"] = stats.seeds_for_power(comparison(ans), c.power_for, eq, alpha / len(tests))
            sign = 1 if ans["effect"] > 0 else -1
            if p_adj < alpha:
                row["verdict"] = REPRODUCED if sign == c.expect else CONTRADICTED
                side = "in" if sign == c.expect else "against"
                row["why"] = f"Holm-adjusted interval beyond {fmt_margin(eq)}, {side} the claimed direction"
            elif -eq <= lo and hi <= eq:
                row["verdict"] = NOT_REPRODUCED
                row["why"] = f"equivalent within {fmt_margin(eq)} (Holm-adjusted interval)"
            elif power < stats.POWER:
                row["verdict"] = f"{UNDERPOWERED} at {n_seeds(ans['seeds'])}"
                row["why"] = (f"power {power:.2f} < {stats.POWER:g} to find {c.power_for:g} beyond {fmt_margin(eq)} at "
                              f"{n_seeds(ans['seeds'])}" + needs_text(row, ans)
                              + unadjusted_side(ans, c.expect, lo, hi))
            elif lo > 0 or hi < 0:
                row["verdict"] = NOT_REPRODUCED
                row["why"] = f"a difference, but not shown beyond {fmt_margin(eq)} after Holm's adjustment"
            else:
                row["verdict"] = NOT_REPRODUCED
                mde = stats.fmt_mde(comparison(ans))
                # the table beside it shows the unadjusted interval, which may exclude 0: say which one covers it
                row["why"] = (f"no detectable difference after Holm's adjustment ({adjusted_effect(ans, lo, hi)}; "
                              f"unadjusted MDE {mde})")
    return rows


def bounds(ans: dict) -> tuple[float, float] | None:
    """The range an answer's printed interval is cut to (answers written before it was recorded: a share's)."""
    return ans.get("bounds", stats.SHARE_DIFF)


def adjusted_effect(ans: dict, lo: float, hi: float) -> str:
    """The answer's effect with its Holm-adjusted interval [lo, hi], printed as its unadjusted one is."""
    return stats.fmt_effect(dataclasses.replace(comparison(ans), ci_lo=lo, ci_hi=hi), bounds(ans))


def result_text(row: dict) -> str:
    """The primary answer worded with the claim's own equivalence region, then its Holm-adjusted interval."""
    ans = row["answer"]
    if ans is None:
        return "—"
    cmp = comparison(ans)
    text = stats.word(cmp, ans.get("a_label", "a"), ans.get("b_label", "b"), row["equivalence"],
                      bounds(ans)).replace(f"±{row['equivalence']:g}", fmt_margin(row["equivalence"]))
    if "lo" not in row:
        return text
    # the first wording reads the unadjusted interval, which may say more than the verdict (read off the adjusted one)
    return (f"unadjusted: {text}; Holm-adjusted: {adjusted_effect(ans, row['lo'], row['hi'])} at "
            f"{row['level']:.2%} confidence, p (beyond {fmt_margin(row['equivalence'])}) = {row['p_holm']:.3g}")


def exact_claim(metrics: dict | None) -> tuple[str, str, str]:
    if not metrics:
        return "—", NOT_TESTABLE, "the exact toy has not run"
    if "kl_tolerance" in metrics:
        return exact_claim_over_seeds(metrics)
    kls = {k[len("final_kl_opt_"):]: v for k, v in metrics.items()
           if k.startswith("final_kl_opt_") and isinstance(v, (int, float))}
    if not kls:
        return "—", NOT_TESTABLE, "the exact toy's metrics hold no final KL(π‖π*)"
    result = "final KL(π‖π*): " + ", ".join(f"{k} {v:.3g}" for k, v in kls.items())
    best = min(kls.values())
    # the KL is enumerated over every response, so no measurement noise: a tolerance, not an interval; the training
    # that led there samples its gradients (one run per estimator), which the reason says
    verdict = HOLDS_EXACTLY if best < EXACT_TOLERANCE else "does not hold exactly"
    reached = ", ".join(EXACT_NAMES.get(k, k) for k, v in kls.items() if v < EXACT_TOLERANCE) or "no estimator"
    return result, verdict, (f"KL computed exactly over every response, one training run per estimator: outside "
                             f"the Holm family; KL < {EXACT_TOLERANCE} reached by {reached}")


def exact_measure(metrics: dict | None) -> tuple[str, str]:
    """The exact claim's measure, as the front page names it, and its metrics keys (exact/<key>)."""
    if metrics and "kl_tolerance" in metrics:
        return "KL(π‖π*), last ¼ [upper]", "exact/tail_kl_opt"
    return "final KL(π‖π*), exact", "exact/final_kl_opt"


def exact_claim_over_seeds(metrics: dict) -> tuple[str, str, str]:
    """The exact claim judged over sampling seeds (the exact stage's `claim`): each estimator's mean KL(π‖π*) over the
    last quarter of the steps, and the upper end of its 95% interval over the seeds against the tolerance."""
    tol, seeds = metrics["kl_tolerance"], int(metrics["claim_seeds"])
    his = {k[len("tail_kl_opt_"):-len("_hi")]: v for k, v in metrics.items()
           if k.startswith("tail_kl_opt_") and k.endswith("_hi")}
    result = (f"mean KL(π‖π*) over the last quarter, {seeds} seeds [95% CI upper]: "
              + ", ".join(f"{k} {metrics[f'tail_kl_opt_{k}']:.2g} [{hi:.2g}]" for k, hi in his.items()))
    reached = [EXACT_NAMES.get(k, k) for k, hi in his.items() if hi < tol]
    # "holds" alone only where every estimator reached pi*: one that did not is part of the claim's answer
    verdict = (DOES_NOT_HOLD if not reached else HOLDS if len(reached) == len(his)
               else f"{HOLDS} for {', '.join(reached)}")
    return result, verdict, (f"KL computed exactly over every response, each estimator trained from {seeds} sampling "
                             f"seeds: outside the Holm family; holds where the whole interval lies under {tol:.3g}, "
                             f"the KL from π* to the optimum at a β {metrics['tolerance_beta']:.0%} larger; reached by "
                             f"{', '.join(reached) or 'no estimator'}")


def by_task_cell(row: dict) -> str:
    """A claim's verdict on one task, then its primary effect with the 95% interval (unadjusted)."""
    ans = row["answer"]
    if not ans or ans.get("ci_lo") is None:
        return row["verdict"]
    return f"{row['verdict']}: {effect_text(ans)}"


def effect_text(ans: dict) -> str:
    """An answer's effect with its interval at `stats.precision` (a bound off 0 never prints as 0), cut to its
    measure's range."""
    return stats.fmt_effect(comparison(ans), bounds(ans))


# ----------------------------------------------------------------------------- what a row measures, and the legend

def measure_of(claim: Claim, primary: str) -> str:
    """The measure a claim's primary compares, in words, read off the study and the answer file's name: a think
    rate is not an accuracy, and an accuracy here is verified (answer and every step) unless it says otherwise."""
    if primary.endswith("_entropy"):
        return "token entropy"
    if primary.endswith("_wrong_length"):
        return "wrong-response length"
    if claim.study == "zero":
        return "think rate"
    if claim.study == "passk" and primary.endswith("_new"):
        return "share newly solved, verified"
    if claim.study == "passk" and primary[-4:-3] == "k" and primary[-3:].isdigit():
        return f"pass@{int(primary[-3:])}, verified"
    return "accuracy, verified"


def room_of(row: dict) -> float | None:
    """The room the claimed direction had: the measure's ceiling minus the arm to beat (None: no ceiling)."""
    c, ans = row["claim"], row["answer"]
    if c.ceiling is None or not ans:
        return None
    return c.ceiling - (ans["a"] if c.expect > 0 else ans["b"])


def legend(rows: list[dict], guesses: dict[str, tuple[float, float]] | None = None) -> list[str]:
    """Four lines under the verdict table, one per verdict word: what it does and does not mean, with the rows of
    this run a reader could misread named (`rows`: judge_all's). `guesses`: task -> the answer-only guess's pass@1
    and pass@k at the largest k, the reference a verified count is not held against."""
    def name(r):
        return f"{r['id']} ({r['task']})"

    undecided = [r for r in rows if r["verdict"].startswith(UNDERPOWERED)]
    short = [r for r in rows if r["verdict"] == NOT_REPRODUCED and (room_of(r) or 1) < r["claim"].power_for]
    hidden = [r for r in rows if r["verdict"] == NOT_TESTABLE and r["answer"] and r["answer"].get("ci_lo") is not None]
    other = [r for r in rows if r["verdict"] == REPRODUCED and not measure_of(r["claim"], r["primary"]).endswith(
        "verified")]
    power_for = sorted({r["claim"].power_for for r in undecided})
    lines = [
        f"- **{UNDERPOWERED} at N seeds** ({len(undecided)} rows): undecided, not \"no effect\"; the design had under "
        f"{stats.POWER:.0%} power to find its `power_for` ({' or '.join(f'{p:g}' for p in power_for)}, on the row's "
        "measure): a power for that effect, not for the one observed (power and seeds needed: claims.md).",
        "- **not reproduced**: equivalent within the region, or no effect beyond it though powered for `power_for`"
        + ("; where the arm to beat had less room to the ceiling than `power_for` ("
           + ", ".join(f"{name(r)}: {room_of(r):.3f} of room, powered for {r['claim'].power_for:g}" for r in short)
           + "), it rules out only an effect that large, not one that fits" if short else "") + ".",
        "- **not testable here**: a rule fixed before the run (a ceiling, chance, no variance, the mechanism absent) "
        "kept the row out of the test; the effect column still shows what was observed, untested"
        + (" (" + "; ".join(f"{name(r)}: {effect_text(r['answer'])}" for r in hidden) + ")" if hidden else "") + ".",
        "- **reproduced**: the Holm-adjusted interval lies beyond the region, in the claimed direction, on the row's "
        "measure" + (" (" + ", ".join(f"{name(r)}: a {measure_of(r['claim'], r['primary'])}, not an accuracy"
                                     for r in other) + ")" if other else "")
        + ". A verified count's floor is 0 (a guess verifies 0)"
        + ("; the answer-only guess (" + "; ".join(f"{t} {a:.3f} at pass@1, {b:.3f} at the largest k"
                                                   for t, (a, b) in guesses.items())
           + ") is a reference for answer-only counts, not a floor or a ceiling here" if guesses else "") + ".",
    ]
    return lines
