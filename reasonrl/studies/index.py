"""`reports/index.md`: every figure of every study with one sentence and its key number, and links to
the tables — built from the studies' manifests (the exact toy's included)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..io import read_json, write_text
from .common import manifest_path, study_metrics_path

STUDIES = ("headline", "methods", "passk", "zero", "hacking", "ablations", "exact")
INDEX = "reports/index.md"
EXACT_METRICS = "reports/metrics/exact.json"  # the exact stage's key numbers (reasonrl.studies.exact.METRICS)


@dataclass
class Config:
    """The index reads no params."""


def load_config(params: dict) -> Config:
    return Config()


def inputs(cfg: Config) -> list[str]:
    return [manifest_path(s) for s in STUDIES] + [EXACT_METRICS]  # the toy's claim reads its final KLs


def outputs(cfg: Config) -> list[str]:
    return [INDEX]


def link(path: str) -> str:
    return f"[{path}]({path})"


def study_section(m: dict) -> str:
    lines = [f"## {m['title']}", "", f"*Question.* {m['question']}", "", f"*Answer.* {m['answer']}", ""]
    if m.get("answers"):
        lines += ["Answers (b − a, 95% paired bootstrap CI, MDE; files in "
                  f"`reports/{m['study']}/answers/`):", ""]
        lines += [f"- `{a['pair']}`: {a['text']}" for a in m["answers"]] + [""]
    lines += ["Runs: " + "; ".join(m["runs"]), "", "Figures:", ""]
    lines += [f"- {link(f['file'])} — {f['caption']}" for f in m["figures"]]
    lines += ["", "Tables: " + ", ".join(link(t) for t in m["tables"]) + ". Metrics: "
              + link(study_metrics_path(m["study"])[len("reports/"):]) + ".", ""]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- claims against the papers

REPRODUCED, NOT_REPRODUCED, NOT_TESTABLE = "reproduced", "not reproduced", "not testable here"
# some comparisons detectably in the claimed direction and some detectably against it; or none for it and
# some against it: either is a different finding from "no detectable difference"
MIXED, CONTRADICTED = "mixed", "contradicted"


@dataclass(frozen=True)
class Claim:
    """A published claim and the study answers that test it: `pattern` picks answer files (pair names)
    of `study`; the claim holds when each picked answer's interval excludes 0 in direction `expect`
    (+1: b > a, -1: a > b) for at least one of them (`any`) or all of them, and none excludes 0 the other
    way (then it is `mixed`, or `contradicted` when none supports it: `judge`). `how="cross"` judges
    pass@k curves instead (`crossing_counts`)."""

    paper: str
    claim: str
    study: str
    pattern: str
    expect: int
    how: str = "any"
    why_untestable: str = "no study answer tests it"


CLAIMS = (
    # SFT on gold traces is supervised, not RL: the two Yue claims read the RL arms only
    Claim("Yue et al. 2025", "RL raises pass@1 over the base", "passk", r"^(?!sft_).*_vs_base_n16_k001$", +1),
    Claim("Yue et al. 2025", "…but the base solves more at large k (the pass@k curves cross)", "passk",
          r"^(?!sft_).*_vs_base_[a-z0-9_]+_k\d+$", -1, how="cross"),
    Claim("Shao et al. 2025", "a spurious (random) reward still raises accuracy over the base", "hacking",
          r"^random.*_vs_base$", +1, why_untestable="needs a random-reward arm (its comparison with the base)"),
    Claim("Dr. GRPO (Liu et al. 2025)", "the per-response length normaliser (seq_mean_token_mean) lets wrong "
          "responses grow longer than token_mean", "ablations",
          r"^loss_agg_seq_mean_token_mean_vs_token_mean_wrong_length$", +1,
          why_untestable="needs a loss_agg group with two seeds or more per arm (a per-seed length answer)"),
    Claim("Dr. GRPO (Liu et al. 2025)", "removing the std normalisation improves on GRPO", "ablations",
          r"^dr_grpo_[a-z0-9_]*_vs_[a-z0-9_]*(?<!_wrong_length)(?<!_entropy)$", +1,
          why_untestable="needs a dr_grpo ablation group"),
    Claim("DAPO (Yu et al. 2025)", "clip-higher beats the symmetric clip", "ablations",
          r"^clip_[a-z0-9_]*clip_higher_vs_[a-z0-9_]*symmetric[a-z0-9_]*(?<!_wrong_length)(?<!_entropy)$", +1,
          why_untestable="needs a clip group pair: clip-higher against the symmetric clip"),
    Claim("DAPO (Yu et al. 2025)", "clip-higher keeps the entropy higher than the symmetric clip", "ablations",
          r"^clip_[a-z0-9_]*clip_higher_vs_[a-z0-9_]*symmetric[a-z0-9_]*_entropy$", +1,
          why_untestable="needs that clip pair with two seeds or more per arm (a per-seed entropy answer)"),
    Claim("DAPO (Yu et al. 2025)", "dynamic sampling beats plain GRPO", "ablations",
          r"^dynamic_[a-z0-9_]*_vs_[a-z0-9_]*(?<!_wrong_length)(?<!_entropy)$", +1,
          why_untestable="needs a dynamic-sampling group"),
    Claim("DeepSeek-R1-Zero 2025", "RL makes a base that rarely reasons write reasoning traces (the 'aha')",
          "zero", r"_after_vs_before$", +1, why_untestable="needs zero-study arms"),
)
EXACT_CLAIM = ("KL-regularised RL (analytic optimum)", "REINFORCE with KL in the reward reaches π* ∝ π_ref·exp(r/β)")
EXACT_TOLERANCE = 0.01  # KL(π‖π*) at the end of training below which the toy counts as having reached π*


CURVE = re.compile(r"^(?P<curve>.+)_k(?P<k>\d+)$")  # a pass@k answer: <arm>_vs_base_<set>_k<k>


def crossing_counts(picked: list[dict]) -> tuple[list, list, list[str]]:
    """(curves that cross, curves that contradict, one line per curve) from pass@k answers against the base.

    A curve (arm and set) crosses when the arm is detectably above the base at k = 1 and detectably below it
    at its largest k: RL sharpens pass@1 and the base solves more with many samples. It contradicts the claim
    when it is detectably above the base at its largest k. Anything else (no difference, or below at both
    ends) is neither."""
    curves: dict[str, dict[int, dict]] = {}
    for a in picked:
        m = CURVE.match(a["pair"])
        curves.setdefault(m["curve"], {})[int(m["k"])] = a
    held, against, lines = [], [], []
    for name, by_k in curves.items():
        first, last = by_k[min(by_k)], by_k[max(by_k)]
        if len(by_k) >= 2 and first["ci_lo"] > 0 and last["ci_hi"] < 0:
            held.append(name)
        elif last["ci_lo"] > 0:
            against.append(name)
        lines.append(f"{first['text']}; {last['text']}" if len(by_k) >= 2 else first["text"])
    return held, against, lines


def judge(claim: Claim, answers: list[dict]) -> tuple[str, str, str]:
    """(our result, verdict, why) of one claim from the answers of its study (manifest answer dicts)."""
    picked = [a for a in answers if re.search(claim.pattern, a["pair"])]
    if not picked:
        return "—", NOT_TESTABLE, claim.why_untestable
    if claim.how == "cross":
        held, against, lines = crossing_counts(picked)
        counts = (f"{len(held)} of {len(lines)} pass@k curves cross the base's (above at k = 1, below at the "
                  f"largest k), {len(against)} are above it at the largest k (CI excluding 0)")
        return "; ".join(lines), *verdict(bool(held), bool(held), bool(against), counts)
    held = [a for a in picked if (a["ci_lo"] > 0 if claim.expect > 0 else a["ci_hi"] < 0)]
    against = [a for a in picked if (a["ci_hi"] < 0 if claim.expect > 0 else a["ci_lo"] > 0)]
    counts = (f"{len(held)} of {len(picked)} comparisons in the claimed direction, {len(against)} against it "
              "(CI excluding 0)")
    ok = bool(held) if claim.how == "any" else len(held) == len(picked)
    return "; ".join(a["text"] for a in picked), *verdict(ok, bool(held), bool(against), counts)


def verdict(ok: bool, held: bool, against: bool, counts: str) -> tuple[str, str]:
    """(verdict, why): `ok` the claim's rule is met, `held`/`against` some evidence excludes 0 for/against it."""
    if ok and not against:
        return REPRODUCED, counts
    if held and against:
        return MIXED, counts
    if against:
        return CONTRADICTED, counts
    return NOT_REPRODUCED, ("no comparison's 95% CI excludes 0 in the claimed direction "
                            "(see the MDE for what this design could detect)")


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
    verdict = REPRODUCED if best < EXACT_TOLERANCE else NOT_REPRODUCED
    return result, verdict, f"exact (enumerated) expectations; reached when KL < {EXACT_TOLERANCE}"


def claims_rows(manifests: list[dict], exact_metrics: dict | None,
                claims: tuple[Claim, ...] = CLAIMS) -> list[dict]:
    by_study = {m["study"]: m.get("answers", []) for m in manifests}
    rows = []
    for c in claims:
        result, verdict, why = judge(c, by_study.get(c.study, []))
        rows.append({"paper": c.paper, "claim": c.claim, "our result [95% CI]": result, "verdict": verdict,
                     "why": why})
    result, verdict, why = exact_claim(exact_metrics)
    rows.append({"paper": EXACT_CLAIM[0], "claim": EXACT_CLAIM[1], "our result [95% CI]": result,
                 "verdict": verdict, "why": why})
    return rows


def claims_table(manifests: list[dict], exact_metrics: dict | None) -> str:
    """The claims-against-papers table (markdown) for reports/index.md and the README."""
    rows = claims_rows(manifests, exact_metrics)
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
    claims = ["## Claims against the papers", "", "Each claim, our result with its 95% interval, and the verdict "
              "(reproduced only when the interval excludes 0 in the claimed direction).", "",
              claims_table(manifests, exact)]
    body = ["\n".join(claims)] + [study_section(m) for m in manifests]
    write_text(root / INDEX, "\n".join(head + body))
