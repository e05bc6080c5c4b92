"""`reports/index.md`: every figure of every study with one sentence and its key number, and links to
the tables — built from the studies' manifests (the exact toy's included)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from .. import stats
from ..config import check, from_dict, node_at
from ..io import read_json, write_text
from .common import manifest_path, study_metrics_path

STUDIES = ("headline", "methods", "passk", "zero", "hacking", "ablations", "exact")
INDEX = "reports/index.md"
EXACT_METRICS = "reports/metrics/exact.json"  # the exact stage's key numbers (reasonrl.studies.exact.METRICS)


@dataclass
class Claim:
    """A published claim and its one primary comparison, fixed in params (studies.claims) before the run:
    the answer file `primary` of `study`, expected in direction `expect` (+1: b > a, -1: a > b).
    `ceiling`: the largest value the measure can take (1 for accuracies; None when unbounded, as for a
    length), which says whether the claimed direction has room to show a difference; `equivalence` and
    `mde_target` override studies.equivalence and studies.mde_target for a measure on another scale."""

    paper: str
    claim: str
    study: str
    primary: str
    expect: int
    ceiling: float | None = 1.0
    equivalence: float | None = None
    mde_target: float | None = None  # overrides studies.mde_target for a measure on another scale
    task: str = "hop"  # the task `primary` is measured on
    tasks: dict[str, str] = field(default_factory=dict)  # the same claim's primary on further tasks: task -> pair

    def primaries(self) -> dict[str, str]:
        """{task: its primary answer file}: each is one test of the Holm family."""
        return {self.task: self.primary, **self.tasks}

    def __post_init__(self):
        check(self.study in STUDIES, "study", f"{self.study!r} is not one of {list(STUDIES)}")
        check(self.expect in (1, -1), "expect", f"{self.expect!r} must be +1 (b > a) or -1 (a > b)")
        check(bool(self.primary), "primary", "name the answer file (pair) of the claim's primary comparison")
        check(self.task not in self.tasks, "tasks", f"{self.task!r} is the task of `primary` already")
        check(self.mde_target is None or self.mde_target > 0, "mde_target", f"{self.mde_target!r} must be > 0")


@dataclass
class Config:
    claims: dict[str, Claim] = field(default_factory=dict)  # claim id -> its primary comparison
    equivalence: float = stats.EQUIVALENCE  # set from params studies.equivalence
    mde_target: float = 0.05  # the MDE each primary comparison should reach: how many seeds would it take?

    def __post_init__(self):
        self.claims = {k: v if isinstance(v, Claim) else from_dict(Claim, v, f"{SECTION}.{k}")
                       for k, v in self.claims.items()}
        check(self.mde_target > 0, MDE_TARGET, f"{self.mde_target!r} must be > 0")


SECTION = "studies.claims"
SEEDS_COLUMN = "MDE (seeds); seeds for the target MDE"
MDE_TARGET = "studies.mde_target"


def load_config(params: dict) -> Config:
    target = (params.get("studies") or {}).get("mde_target")
    check(target is None or (isinstance(target, (int, float)) and not isinstance(target, bool)), MDE_TARGET,
          f"{target!r} is not a number")
    return Config(claims=dict(node_at(params, SECTION) or {}), **({} if target is None else {"mde_target": target}))


def inputs(cfg: Config) -> list[str]:
    return [manifest_path(s) for s in STUDIES] + [EXACT_METRICS]  # the toy's claim reads its final KLs


def outputs(cfg: Config) -> list[str]:
    return [INDEX]


def link(path: str) -> str:
    return f"[{path}]({path})"


def study_section(m: dict) -> str:
    lines = [f"## {m['title']}", "", f"*Question.* {m['question']}", "", f"*Answer.* {m['answer']}", ""]
    if m.get("answers"):
        lines += ["Exploratory answers (b − a, 95% run-level t-interval, MDE; not adjusted for multiplicity; "
                  f"files in `reports/{m['study']}/answers/`):", ""]
        lines += [f"- `{a['pair']}`: {a['text']}" for a in m["answers"]] + [""]
    lines += ["Runs: " + "; ".join(m["runs"]), "", "Figures:", ""]
    lines += [f"- {link(f['file'])} — {f['caption']}" for f in m["figures"]]
    lines += ["", "Tables: " + ", ".join(link(t) for t in m["tables"]) + ". Metrics: "
              + link(study_metrics_path(m["study"])[len("reports/"):]) + ".", ""]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- claims against the papers

REPRODUCED, NOT_REPRODUCED, CONTRADICTED, NOT_TESTABLE = ("reproduced", "not reproduced", "contradicted",
                                                          "not testable here")
EXACT_CLAIM = ("KL-regularised RL (analytic optimum)", "REINFORCE with KL in the reward reaches π* ∝ π_ref·exp(r/β)")
EXACT_TOLERANCE = 0.01  # KL(π‖π*) at the end of training below which the toy counts as having reached π*
HOLDS_EXACTLY = "holds exactly"  # the exact toy: enumerated expectations, no sampling, so no interval to adjust


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


def no_variance(answer: dict | None, claim: Claim, primary: str) -> str | None:
    """Why the claim's primary comparison cannot be computed or carries no interval, else None."""
    if answer is None:
        return f"its primary comparison {claim.study}/{primary} was not computed (no such arms in this run)"
    if answer.get("constant") is not None:
        return "neither arm varies (both at the same value on every problem and run)"
    if answer["se"] == 0:
        return "the difference is the same on every problem and run: no interval to test"
    return None


def no_room(claim: Claim, answer: dict, equivalence: float) -> str | None:
    """Why the claimed direction has no room beyond the equivalence region (a ceiling), else None. The
    other direction may still show: such a claim can be contradicted, not reproduced."""
    if claim.ceiling is None:
        return None
    start = answer["a"] if claim.expect > 0 else answer["b"]  # the arm that must be beaten
    room = claim.ceiling - start
    if room > equivalence:
        return None
    return (f"at the ceiling: the arm to beat is at {start:.3f}, leaving {room:.3f} of room, within the "
            f"±{equivalence:g} equivalence region")


def judge_all(claims: dict[str, Claim], by_study: dict[str, dict[str, dict]], equivalence: float,
              alpha: float = 1 - stats.CONFIDENCE) -> dict[tuple[str, str], dict]:
    """A row per claim and task, {(claim id, task): row}: its primary answer on that task, Holm-adjusted
    across every (claim, task) whose answer has an interval.

    Each claim tests whether its effect lies beyond the equivalence region (|effect| > e, two-sided: p of
    `stats.p_value` with margin e), and Holm adjusts those p-values across the claims. A claim is
    reproduced when its adjusted p is below alpha and the effect points the claimed way, contradicted when
    it points the other way; its interval, at Holm's level for it, then lies beyond ±e by construction.
    Otherwise it is not testable here (the claimed direction has no room: a ceiling) or not reproduced,
    with the reason: equivalent (the adjusted interval inside ±e), or no difference shown beyond ±e."""
    rows, family = {}, {}
    for cid, c in claims.items():
        for task, primary in c.primaries().items():
            ans = by_study.get(c.study, {}).get(primary)
            eq = c.equivalence if c.equivalence is not None else equivalence
            why = no_variance(ans, c, primary)
            rows[cid, task] = {"claim": c, "task": task, "primary": primary, "answer": ans, "equivalence": eq,
                               "why": why}
            if why is None:
                family[cid, task] = ans
            else:
                rows[cid, task]["verdict"] = NOT_TESTABLE
    ids = list(family)
    pvals = [stats.p_value(family[i]["effect"], family[i]["se"], family[i]["df"], rows[i]["equivalence"])
             for i in ids]
    adjusted, levels = stats.holm(pvals, alpha)
    for cid, p_adj, level in zip(ids, adjusted, levels):
        row, ans, c = rows[cid], family[cid], rows[cid]["claim"]
        eq = row["equivalence"]
        lo, hi = comparison(ans).at_level(level)
        row |= {"p_holm": p_adj, "level": level, "lo": lo, "hi": hi}
        sign = 1 if ans["effect"] > 0 else -1
        ceiling = no_room(c, ans, eq)
        if p_adj < alpha:
            row["verdict"] = REPRODUCED if sign == c.expect else CONTRADICTED
            side = "in" if sign == c.expect else "against"
            row["why"] = f"Holm-adjusted interval beyond ±{eq:g}, {side} the claimed direction"
        elif ceiling:
            row["verdict"], row["why"] = NOT_TESTABLE, ceiling
        elif -eq <= lo and hi <= eq:
            row["verdict"], row["why"] = NOT_REPRODUCED, f"equivalent within ±{eq:g} (Holm-adjusted interval)"
        elif lo > 0 or hi < 0:
            row["verdict"] = NOT_REPRODUCED
            row["why"] = f"a difference, but not shown beyond ±{eq:g} after Holm's adjustment"
        else:
            row["verdict"] = NOT_REPRODUCED
            mde = stats.fmt_mde(comparison(ans))
            row["why"] = f"no detectable difference after Holm's adjustment (unadjusted MDE {mde})"
    return rows


def result_text(row: dict) -> str:
    """The primary answer worded with the claim's own equivalence region, then its Holm-adjusted interval."""
    ans = row["answer"]
    if ans is None:
        return "—"
    cmp = comparison(ans)
    text = stats.word(cmp, ans.get("a_label", "a"), ans.get("b_label", "b"), row["equivalence"])
    if "lo" not in row:
        return text
    spec = ".4f" if row["hi"] - row["lo"] < 0.01 else ".3f"
    return (f"{text}; Holm-adjusted: {stats.fmt_ci(cmp.effect, row['lo'], row['hi'], spec, sign=True)} at "
            f"{row['level']:.2%} confidence, p (beyond ±{row['equivalence']:g}) = {row['p_holm']:.3g}")


def exact_claim(metrics: dict | None) -> tuple[str, str, str]:
    if not metrics:
        return "—", NOT_TESTABLE, "the exact toy has not run"
    kls = {k[len("final_kl_opt_"):]: v for k, v in metrics.items()
           if k.startswith("final_kl_opt_") and isinstance(v, (int, float))}
    if not kls:
        return "—", NOT_TESTABLE, "the exact toy's metrics hold no final KL(π‖π*)"
    result = "final KL(π‖π*): " + ", ".join(f"{k} {v:.3g}" for k, v in kls.items())
    best = min(kls.values())
    # exact expectations, no sampling noise between reruns: a tolerance, not an interval
    verdict = HOLDS_EXACTLY if best < EXACT_TOLERANCE else "does not hold exactly"
    return result, verdict, (f"exact (enumerated) expectations, no sampling: outside the Holm family; "
                             f"reached when KL < {EXACT_TOLERANCE}")


def claims_rows(cfg: Config, manifests: list[dict], exact_metrics: dict | None) -> list[dict]:
    by_study = {m["study"]: {a["pair"]: a for a in m.get("answers", [])} for m in manifests}
    judged = judge_all(cfg.claims, by_study, cfg.equivalence)
    rows = []
    for r in judged.values():
        c = r["claim"]
        rows.append({"paper": c.paper, "claim": c.claim, "task": r["task"], "primary comparison":
                     f"{c.study}/{r['primary']}", "our result [95% CI]": result_text(r), "verdict": r["verdict"],
                     "why": r.get("why") or "", SEEDS_COLUMN:
                     seeds_text(r["answer"], c.mde_target if c.mde_target is not None else cfg.mde_target)})
    result, verdict, why = exact_claim(exact_metrics)
    rows.append({"paper": EXACT_CLAIM[0], "claim": EXACT_CLAIM[1], "task": "—", "primary comparison":
                 "exact/final_kl_opt", "our result [95% CI]": result, "verdict": verdict, "why": why,
                 SEEDS_COLUMN: "—"})
    return rows


def by_task_cell(row: dict) -> str:
    """A claim's verdict on one task, then its primary effect with the 95% interval (unadjusted)."""
    ans = row["answer"]
    if not ans or ans.get("ci_lo") is None:
        return row["verdict"]
    return f"{row['verdict']}: {stats.fmt_ci(ans['effect'], ans['ci_lo'], ans['ci_hi'], sign=True)}"


def by_task_table(cfg: Config, manifests: list[dict]) -> str:
    """The claims tested on more than one task, a column per task (the verdict, then the effect and its
    unadjusted 95% interval), and one line saying where the tasks' verdicts agree and where they do not
    ("" when no claim is tested on two tasks)."""
    by_study = {m["study"]: {a["pair"]: a for a in m.get("answers", [])} for m in manifests}
    judged = judge_all(cfg.claims, by_study, cfg.equivalence)
    several = [cid for cid, c in cfg.claims.items() if c.tasks]
    if not several:
        return ""
    tasks = list(dict.fromkeys(t for cid in several for t in cfg.claims[cid].primaries()))
    lines = ["| claim | " + " | ".join(tasks) + " |", "|" + "---|" * (len(tasks) + 1)]
    agree, differ = [], []
    for cid in several:
        verdicts = {t: judged[cid, t]["verdict"] for t in cfg.claims[cid].primaries()}
        cells = {t: by_task_cell(judged[cid, t]) for t in cfg.claims[cid].primaries()}
        lines.append(f"| {cid} | " + " | ".join(cells.get(t, "—") for t in tasks) + " |")
        (agree if len(set(verdicts.values())) == 1 else differ).append(cid)
    said = [f"the tasks agree on {', '.join(agree)}" if agree else "the tasks agree on no claim",
            f"they differ on {', '.join(differ)}" if differ else "they differ on none"]
    line = "; ".join(said)
    return "\n".join(lines) + "\n\n" + line[0].upper() + line[1:] + ".\n"


def claims_table(cfg: Config, manifests: list[dict], exact_metrics: dict | None) -> str:
    """The claims-against-papers table (markdown) for reports/index.md."""
    rows = claims_rows(cfg, manifests, exact_metrics)
    cols = list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(r[c]).replace("|", "\\|") for c in cols) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def report(cfg: Config, root: Path) -> None:
    manifests = [read_json(root / manifest_path(s)) for s in STUDIES]
    head = ["# Study index", "", "Generated by the `report_index` stage from each study's manifest "
            "(`reports/<study>/manifest.json`); do not edit. Figures are regenerated by `dvc repro`; "
            "see docs/studies.md for what each study asks and how to vary it.", ""]
    exact = read_json(root / EXACT_METRICS)
    claims = ["## Claims against the papers", "",
              "Each claim has one primary comparison, fixed in params.yaml (`studies.claims`) before the run. "
              "Our result is that answer's wording (95% interval, the run as the unit), then its interval and the "
              "p-value of an effect beyond the equivalence region (±"
              f"{cfg.equivalence:g} unless the claim sets its own), both Holm-adjusted across the claims that can be "
              "tested. Reproduced (or contradicted) only when that adjusted p is below 0.05 in the claimed (or the "
              "other) direction: the adjusted interval then lies beyond the region. Not testable here when the "
              "design leaves no room for the difference. The last column gives the primary comparison's MDE (80% "
              "power, unadjusted) with its seeds per arm, and the seeds per arm that would bring it to the target "
              f"({cfg.mde_target:g} unless the claim sets its own), projected from its run term (docs/studies.md). "
              "Every other answer below is exploratory: unadjusted.", "",
              claims_table(cfg, manifests, exact)]
    if table := by_task_table(cfg, manifests):
        claims += ["", "### The claims tested on more than one task", "",
                   "Each cell: the verdict on that task, then the primary effect with its 95% interval (unadjusted).",
                   "", table]
    body = ["\n".join(claims)] + [study_section(m) for m in manifests]
    write_text(root / INDEX, "\n".join(head + body))
