"""The measurement behind the passk study (stage passk@<label>): N samples per problem of one model on
several fixed sets -> pass@k for k up to N (verified, and answer-only beside it), the random-guess baseline,
distinct answers and entropy (a uniform guess's beside each); on every problem of a set, or on a fixed
stratified subset (`subset`)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace

from ..config import check
from ..evaluate import EvalConfig, sampling_report
from ..tasks import Problem
from . import PasskModel, draw_seed

READS = ("sets", "eval", "models")  # the keys of `passk:` the measurement reads (the rest: the report's)
KEY = "passk.eval.problems"


@dataclass
class PasskEval(EvalConfig):
    """`passk.eval`: the keys of `eval:` and `problems`, which the eval stages do not read (`eval:` rejects it)."""

    problems: int | None = None  # problems measured per set, the first problems/cells of each cell (None: all)

    def __post_init__(self):
        super().__post_init__()
        check(self.problems is None or self.problems >= 1, "problems", f"must be at least 1, got {self.problems}")


def cell_of(p: Problem) -> tuple[int, int]:
    """The evaluation cell of a problem (tasks.base.cell): its size n and its difficulty."""
    return p.n, p.difficulty


def subset(problems: list[Problem], m: int | None, where: str = "the set") -> list[Problem]:
    """The first m / c problems of each of the set's c cells (`cell_of`), in file order: stratified as the whole
    set, the same for every model, and nested (a larger m holds a smaller m's problems). None: every problem.
    An m that does not split evenly over the cells, or a cell short of m / c problems, is a ConfigError."""
    if m is None:
        return problems
    sizes: dict[tuple[int, int], int] = {}
    for p in problems:
        sizes[cell_of(p)] = sizes.get(cell_of(p), 0) + 1
    c = len(sizes)
    fits = [x for x in (m // c * c, m // c * c + c) if 0 < x <= c * min(sizes.values())]
    check(m % c == 0, KEY, f"{m} problems do not split evenly over the {c} (n, {problems[0].task.difficulty}) "
          f"cells of {where}", f"a multiple of {c}: {' or '.join(map(str, fits)) or 'none fits'}")
    check(m // c <= min(sizes.values()), KEY, f"{m} problems take {m // c} of each of the {c} cells of {where}, "
          f"but a cell holds only {min(sizes.values())}", f"at most {c * min(sizes.values())}")
    taken: dict[tuple[int, int], int] = {}
    out = []
    for p in problems:
        taken[cell_of(p)] = taken.get(cell_of(p), 0) + 1
        if taken[cell_of(p)] <= m // c:
            out.append(p)
    return out


@dataclass
class Config:
    """The part of the `passk:` params section the passk@ stages read (READS)."""

    sets: list[str] = field(default_factory=lambda: ["edge", "far"])  # roles of data.<task>
    eval: PasskEval = field(default_factory=PasskEval)  # N, ks, temperature, seed, entropy samples, problems
    models: dict[str, PasskModel] = field(default_factory=dict)  # label -> checkpoint and task

    def __post_init__(self):
        check(bool(self.sets), "sets", "must not be empty")
        for label, m in self.models.items():
            check(set(m.sets) <= set(self.sets), f"models.{label}.sets", f"{m.sets} must be of passk.sets {self.sets}")

    def plan(self, label: str) -> tuple[list[str], PasskEval]:
        """The sets model `label` samples and its sampling config: a second draw's own generator seed (draw_seed),
        and only its own sets, so N samples are spent only where the second draw is read."""
        m = self.models[label]
        return m.sets or self.sets, replace(self.eval, seed=draw_seed(self.eval.seed, m.draw))


def measure(model, sets: dict[str, list[Problem]], cfg: EvalConfig) -> dict:
    """{"N", "seed", "sets": {name: {difficulties, problems, of, pass_at_k, pass_at_k_answer, random_baseline,
    distinct_answers, guess_distinct, entropy, guess_answer_entropy, counts, counts_answer}}}: counts are the
    verified samples out of N per problem measured (`subset` of cfg.problems; `problems` of the set's `of`), what
    the report's intervals resample (counts_answer: the samples with a right answer); guess_*: a uniform guess's
    distinct answers and answer entropy (evaluate.uniform_guess_diversity). Every set's subset is checked before
    any sampling."""
    chosen = {name: subset(ps, getattr(cfg, "problems", None), f"set {name!r}") for name, ps in sets.items()}
    out = {}
    for name, problems in chosen.items():
        print(f"passk: {name}, {len(problems)} problems x {cfg.passk_N} samples", file=sys.stderr)
        rep = sampling_report(model, problems, cfg)
        out[name] = {"difficulties": sorted({p.difficulty for p in problems}), "problems": len(problems),
                     "of": len(sets[name]),
                     **{k: rep[k] for k in ("pass_at_k", "pass_at_k_answer", "random_baseline",
                                            "distinct_answers", "guess_distinct", "entropy",
                                            "guess_answer_entropy", "counts", "counts_answer")}}
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
