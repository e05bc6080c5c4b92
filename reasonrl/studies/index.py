"""`reports/index.md`: every figure of every study with one sentence and its key number, and links to
the tables — built from the studies' manifests (the exact toy's included)."""

from __future__ import annotations

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
    length), which says whether the claimed direction has room to show a difference; `equivalence`
    overrides studies.equivalence for a measure on another scale."""

    paper: str
    claim: str
    study: str
    primary: str
    expect: int
    ceiling: float | None = 1.0
    equivalence: float | None = None

    def __post_init__(self):
        check(self.study in STUDIES, "study", f"{self.study!r} is not one of {list(STUDIES)}")
        check(self.expect in (1, -1), "expect", f"{self.expect!r} must be +1 (b > a) or -1 (a > b)")
        check(bool(self.primary), "primary", "name the answer file (pair) of the claim's primary comparison")


@dataclass
class Config:
    claims: dict[str, Claim] = field(default_factory=dict)  # claim id -> its primary comparison
    equivalence: float = stats.EQUIVALENCE  # set from params studies.equivalence

    def __post_init__(self):
        self.claims = {k: v if isinstance(v, Claim) else from_dict(Claim, v, f"{SECTION}.{k}")
                       for k, v in self.claims.items()}


SECTION = "studies.claims"


def load_config(params: dict) -> Config:
    return Config(claims=dict(node_at(params, SECTION) or {}))


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


def no_variance(answer: dict | None, claim: Claim) -> str | None:
    """Why the claim's primary comparison cannot be computed or carries no information, else None."""
    if answer is None:
        return f"its primary comparison {claim.study}/{claim.primary} was not computed (no such arms in this run)"
    if answer.get("constant") is not None or answer["mde"] is None:
        return "neither arm varies (both at the same value on every problem and run)"
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
              alpha: float = 1 - stats.CONFIDENCE) -> dict[str, dict]:
    """Each claim's row: its primary answer, Holm-adjusted across the claims whose answer varies.

    A claim is reproduced only when its Holm-adjusted p is below alpha, the effect points the claimed way
    and the adjusted interval (level 1 - alpha / (m - rank), the level Holm tests it at) lies beyond the
    equivalence region; contradicted when the same holds the other way; not testable here when its
    answer has no variance, or when the claimed direction has no room (a ceiling) and it is not
    contradicted; otherwise not reproduced, with the reason (equivalent, or no detectable difference)."""
    rows, family = {}, {}
    for cid, c in claims.items():
        ans = by_study.get(c.study, {}).get(c.primary)
        eq = c.equivalence if c.equivalence is not None else equivalence
        why = no_variance(ans, c)
        rows[cid] = {"claim": c, "answer": ans, "equivalence": eq, "why": why}
        if why is None:
            family[cid] = ans
        else:
            rows[cid]["verdict"] = NOT_TESTABLE
    ids = list(family)
    adjusted, shares = stats.holm([family[i]["p"] for i in ids])
    for cid, p_adj, share in zip(ids, adjusted, shares):
        row, ans, c = rows[cid], family[cid], rows[cid]["claim"]
        eq = row["equivalence"]
        level = 1 - alpha * share
        half = stats.t_quantile(level, ans["df"]) * ans["se"]
        lo, hi = ans["effect"] - half, ans["effect"] + half
        row |= {"p_holm": p_adj, "level": level, "lo": lo, "hi": hi}
        sign = 1 if ans["effect"] > 0 else -1
        detected = p_adj < alpha and ((lo > eq) if sign > 0 else (hi < -eq))
        ceiling = no_room(c, ans, eq)
        if detected:
            row["verdict"] = REPRODUCED if sign == c.expect else CONTRADICTED
            side = "in" if sign == c.expect else "against"
            row["why"] = f"Holm-adjusted interval beyond ±{eq:g}, {side} the claimed direction"
        elif ceiling:
            row["verdict"], row["why"] = NOT_TESTABLE, ceiling
        elif -eq <= lo and hi <= eq:
            row["verdict"], row["why"] = NOT_REPRODUCED, f"equivalent within ±{eq:g}"
        elif p_adj < alpha:
            row["verdict"] = NOT_REPRODUCED
            row["why"] = "the adjusted interval excludes 0 but reaches into the equivalence region"
        else:
            row["verdict"] = NOT_REPRODUCED
            row["why"] = f"no detectable difference after Holm's adjustment (unadjusted MDE {ans['mde']:.3f})"
    return rows


def result_text(row: dict) -> str:
    ans = row["answer"]
    if ans is None:
        return "—"
    if "lo" not in row:
        return ans["text"]
    spec = ".4f" if row["hi"] - row["lo"] < 0.01 else ".3f"
    return (f"{ans['text']}; Holm-adjusted: {stats.fmt_ci(ans['effect'], row['lo'], row['hi'], spec, sign=True)} "
            f"at {row['level']:.2%} confidence, p = {row['p_holm']:.3g}")


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
        rows.append({"paper": c.paper, "claim": c.claim, "primary comparison": f"{c.study}/{c.primary}",
                     "our result [95% CI]": result_text(r), "verdict": r["verdict"], "why": r.get("why") or ""})
    result, verdict, why = exact_claim(exact_metrics)
    rows.append({"paper": EXACT_CLAIM[0], "claim": EXACT_CLAIM[1], "primary comparison": "exact/final_kl_opt",
                 "our result [95% CI]": result, "verdict": verdict, "why": why})
    return rows


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
              "Our result is that answer's wording (95% interval, the run as the unit), then its interval and "
              "p-value Holm-adjusted across the claims that can be tested. Reproduced (or contradicted) only when "
              "the adjusted p is below 0.05 and the adjusted interval lies beyond the equivalence region "
              f"(±{cfg.equivalence:g}) in the claimed (or the other) direction; not testable here when the design "
              "leaves no room for the difference. Every other answer below is exploratory: unadjusted.", "",
              claims_table(cfg, manifests, exact)]
    body = ["\n".join(claims)] + [study_section(m) for m in manifests]
    write_text(root / INDEX, "\n".join(head + body))
