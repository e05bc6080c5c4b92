"""The measurement behind the passk study (stage passk@<label>): N samples per problem of one model on
several fixed sets -> pass@k for k up to N (verified, and answer-only beside it), the random-guess baseline,
distinct answers and entropy."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace

from ..config import check
from ..evaluate import EvalConfig, sampling_report
from ..tasks import Problem
from . import PasskModel, draw_seed

READS = ("sets", "eval", "models")  # the keys of `passk:` the measurement reads (the rest: the report's)


@dataclass
class Config:
    """The part of the `passk:` params section the passk@ stages read (READS)."""

    sets: list[str] = field(default_factory=lambda: ["edge", "far"])  # roles of data.<task>
    eval: EvalConfig = field(default_factory=EvalConfig)  # N, ks, temperature, seed, entropy samples
    models: dict[str, PasskModel] = field(default_factory=dict)  # label -> checkpoint and task

    def __post_init__(self):
        check(bool(self.sets), "sets", "must not be empty")
        for label, m in self.models.items():
            check(set(m.sets) <= set(self.sets), f"models.{label}.sets", f"{m.sets} must be of passk.sets {self.sets}")

    def plan(self, label: str) -> tuple[list[str], EvalConfig]:
        """The sets model `label` samples and its sampling config: a second draw's own generator seed (draw_seed),
        and only its own sets, so N samples are spent only where the second draw is read."""
        m = self.models[label]
        return m.sets or self.sets, replace(self.eval, seed=draw_seed(self.eval.seed, m.draw))


def measure(model, sets: dict[str, list[Problem]], cfg: EvalConfig) -> dict:
    """{"N", "seed", "sets": {name: {difficulties, problems, pass_at_k, pass_at_k_answer, random_baseline,
    distinct_answers, entropy, counts, counts_answer}}}: counts are the verified samples out of N per problem,
    what the report's intervals resample (counts_answer: the samples with a right answer)."""
    out = {}
    for name, problems in sets.items():
        print(f"passk: {name}, {len(problems)} problems x {cfg.passk_N} samples", file=sys.stderr)
        rep = sampling_report(model, problems, cfg)
        out[name] = {"difficulties": sorted({p.difficulty for p in problems}), "problems": len(problems),
                     **{k: rep[k] for k in ("pass_at_k", "pass_at_k_answer", "random_baseline",
                                            "distinct_answers", "entropy", "counts", "counts_answer")}}
    return {"N": cfg.passk_N, "seed": cfg.seed, "sets": out}


def curve_csv(result: dict) -> str:
    """Plot data: one row per k, a verified pass@k column per set, an answer-only one per set, then a
    random-guess column per set."""
    sets = result["sets"]
    ks = list(next(iter(sets.values()))["pass_at_k"])
    cols = ["k", *sets, *(f"answer_{s}" for s in sets), *(f"random_{s}" for s in sets)]
    rows = [[k, *(f"{d[key][k]:.6f}" for key in ("pass_at_k", "pass_at_k_answer", "random_baseline")
                  for d in sets.values())] for k in ks]
    return "\n".join(",".join(map(str, r)) for r in [cols, *rows]) + "\n"
