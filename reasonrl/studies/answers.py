"""Arms of per-problem outcomes, their paired comparisons, and the answer files and tables a study writes
from them (one `Answer` per compared pair)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from .. import stats
from ..config import check
from ..io import write_json
from . import ANSWER_EXTRA
from .markdown import md_table
from .paths import answer_path, run_outcomes_path

# an arm's per-problem outcome (a column of outcomes_<checkpoint>.csv): the greedy answer, or the share of N samples
# at T = 1, verified (answer and trace right: reasonrl/evaluate.py); `<m>_answer`: by the answer alone
EVAL_SETS = ("in", "edge", "far")  # the test sets (roles) stages/eval.py writes outcomes for
MEASURES = {"correct": "verified greedy accuracy", "sampled": "verified sampled accuracy (pass@1 at T = 1)",
            "correct_answer": "answer-only greedy accuracy", "sampled_answer": "answer-only sampled accuracy"}


@dataclass
class ArmOutcomes:
    """One arm's per-problem outcomes on one set: {seed: (problems,) array}; seed None for a single
    checkpoint that is not a seeded run (a base), which pairs with every seed of the other arm."""

    label: str
    by_seed: dict[int | None, np.ndarray]
    problems: list[str]  # problem_key per column
    answer: ArmOutcomes | None = None  # the same judged by the answer alone (the measure verified: `with_answer`)


def with_answer(arm: ArmOutcomes, answer: ArmOutcomes) -> ArmOutcomes:
    """`arm` with its answer-only outcomes; a verified outcome above its answer-only one was mislabelled upstream."""
    if any((v > answer.by_seed[s]).any() for s, v in arm.by_seed.items()):
        raise ValueError(f"arm {arm.label!r}: a verified outcome exceeds its answer-only one")
    return replace(arm, answer=answer)


def check_measure(measure: str, set_name: str) -> None:
    """ConfigError naming `measure` unless it is one of MEASURES, and `set` unless it is a set the eval stages write."""
    check(measure in MEASURES, "measure", f"{measure!r} is not one of {list(MEASURES)}")
    check(set_name in EVAL_SETS, "set", f"{set_name!r} is not one of the eval stages' sets {list(EVAL_SETS)}")


def read_outcomes(root: Path, path: str, set_name: str) -> pd.DataFrame:
    df = pd.read_csv(root / path)
    df = df[df["set"] == set_name]
    if df.empty:
        raise KeyError(f"{path}: no outcomes on set {set_name!r}; its eval stage must evaluate that set")
    return df


def arm_outcomes(root: Path, label: str, files: dict[int | None, str], set_name: str,
                 column: str = "correct") -> ArmOutcomes:
    """An arm from its outcome files by seed (the same problems in the same order), with its answer-only outcomes."""
    by_seed, problems = {}, None
    for seed, path in files.items():
        df = read_outcomes(root, path, set_name)
        if problems is None:
            problems = df["problem"].tolist()
        elif df["problem"].tolist() != problems:
            raise ValueError(f"{path}: its problems differ from the other seeds' of arm {label!r}")
        by_seed[seed] = df[column].to_numpy(dtype=float)
    arm = ArmOutcomes(label, by_seed, problems or [])
    return arm if f"{column}_answer" not in MEASURES else with_answer(
        arm, arm_outcomes(root, label, files, set_name, f"{column}_answer"))


def run_arm(root: Path, label: str, runs: list[str], loaded: dict, set_name: str = "edge",
            measure: str = "correct") -> ArmOutcomes:
    """An arm of RL runs, keyed by each run's seed (`loaded`: the runs' `Run`s); `measure` is a key of MEASURES."""
    files: dict[int | None, str] = {}
    for r in runs:
        seed = int(loaded[r].job["seed"])
        if seed in files:
            raise ValueError(f"arm {label!r}: runs {r} and {files[seed]} share seed {seed}; one run per seed")
        files[seed] = run_outcomes_path(r, task=loaded[r].job["task"])
    return arm_outcomes(root, label, files, set_name, measure)


def scalar_arm(label: str, runs: list[str], loaded: dict, value) -> ArmOutcomes:
    """An arm of one number per run (say, a training curve's final value), keyed by the run's seed: its
    intervals resample seeds only."""
    return ArmOutcomes(label, {int(loaded[r].job["seed"]): np.array([float(value(loaded[r]))]) for r in runs},
                       ["run"])


def common_seeds(a: ArmOutcomes, b: ArmOutcomes) -> int:
    """How many seeds two arms pair on (a seedless arm pairs with every seed of the other)."""
    if None in a.by_seed or None in b.by_seed:
        return max(len(a.by_seed), len(b.by_seed))
    return len(set(a.by_seed) & set(b.by_seed))


def paired_matrices(a: ArmOutcomes, b: ArmOutcomes) -> tuple[np.ndarray, np.ndarray]:
    """(seeds, problems) arrays of two arms on their common seeds (a seedless arm pairs with every seed)."""
    if a.problems != b.problems:
        raise ValueError(f"arms {a.label!r} and {b.label!r} were evaluated on different problems")
    if None in a.by_seed or None in b.by_seed:
        seeds = [s for s in (b.by_seed if None in a.by_seed else a.by_seed) if s is not None] or [None]
    else:
        seeds = sorted(set(a.by_seed) & set(b.by_seed))
    if not seeds:
        raise ValueError(f"arms {a.label!r} (seeds {sorted(a.by_seed)}) and {b.label!r} (seeds {sorted(b.by_seed)}) "
                         "share no seed to pair on")

    return tuple(np.stack([x.by_seed[None] if None in x.by_seed else x.by_seed[s] for s in seeds]) for x in (a, b))


def compare(a: ArmOutcomes, b: ArmOutcomes) -> stats.Comparison:
    """Arm b against arm a, paired by seed and problem, with its 95% run-level t-interval."""
    xa, xb = paired_matrices(a, b)
    return stats.paired(xa, xb)


def arm_interval(arm: ArmOutcomes) -> stats.Interval:
    """An arm's mean over its seeds and problems with its 95% run-level t-interval."""
    return stats.mean_ci(np.stack(list(arm.by_seed.values())))


@dataclass
class Answer:
    """One compared pair: arm b against arm a, its numbers and worded answer (`equivalence`: params
    studies.equivalence; `bounds`: the range b - a's printed interval is cut to, None for a length)."""

    pair: str
    a: str
    b: str
    cmp: stats.Comparison
    equivalence: float = stats.EQUIVALENCE
    bounds: tuple[float, float] | None = stats.SHARE_DIFF
    answer_only: stats.Comparison | None = None  # the same pair judged by the answer alone (cmp: verified)
    extra: dict[str, float] = field(default_factory=dict)  # further numbers, keys of ANSWER_EXTRA (a claim's mechanism)

    def __post_init__(self):
        if unknown := sorted(set(self.extra) - set(ANSWER_EXTRA)):
            raise ValueError(f"answer {self.pair}: extra keys {unknown} are not in reasonrl.studies.ANSWER_EXTRA")
        self.extra = {k: stats.kept(float(v)) for k, v in self.extra.items()}  # as to_json keeps them

    @classmethod
    def of(cls, pair: str, a: str, b: str, x: ArmOutcomes, y: ArmOutcomes, equivalence: float, **kw) -> Answer:
        """Arm y against arm x (`compare`), and by the answer alone where both arms carry it."""
        return cls(pair, a, b, compare(x, y), equivalence, **kw,
                   answer_only=compare(x.answer, y.answer) if x.answer and y.answer else None)

    @property
    def text(self) -> str:
        return stats.word(self.cmp, self.a, self.b, self.equivalence, self.bounds)

    @property
    def side(self) -> int:
        """+1 (b above a) or -1 (below) where the interval excludes 0 and is not inside the equivalence
        region; 0 otherwise: the direction a summary may state."""
        c, e = self.cmp, self.equivalence
        if c.ci_lo > 0 and c.ci_hi > e:
            return 1
        if c.ci_hi < 0 and c.ci_lo < -e:
            return -1
        return 0


def write_answers(root: Path, study: str, answers: list[Answer]) -> None:
    """reports/<study>/answers/<pair>.json for every answer: the keys of stats.ANSWER_KEYS and its `extra`."""
    names = [x.pair for x in answers]
    if len(set(names)) != len(names):
        raise ValueError(f"{study}: two answers share a file name: {sorted(n for n in names if names.count(n) > 1)}")
    for x in answers:
        write_json(root / answer_path(study, x.pair), x.cmp.to_json() | x.extra)


def answers_table(answers: list[Answer], title: str, what: str) -> str:
    """The comparisons as a markdown table: effect b - a with its 95% CI, the MDE, and the wording."""
    rows = [{"comparison (b vs a)": f"{x.b} vs {x.a}", "a": x.cmp.a, "b": x.cmp.b,
             "b − a [95% CI]": stats.fmt_effect(x.cmp, x.bounds),
             "MDE": stats.fmt_mde(x.cmp), "df": f"{x.cmp.df:g}", "seeds": x.cmp.seeds,
             "problems": x.cmp.problems, "answer": x.text, "file": f"answers/{x.pair}.json"}
            | ({"answer-only a → b, b − a [95% CI]": f"{x.answer_only.a:.3f} → {x.answer_only.b:.3f}, "
                f"{stats.fmt_effect(x.answer_only, x.bounds)}"} if x.answer_only else {})
            for x in answers]
    eq = answers[0].equivalence if answers else stats.EQUIVALENCE
    return md_table(pd.DataFrame(rows), title,
                    f"{what} Paired by seed and problem; 95% t-interval whose unit is the run (df = seeds − 1; "
                    "one seed: over problems only, for that run alone), with the test set's problem term "
                    "(reasonrl.stats, docs/studies.md). MDE: the effect this design detects with 80% power, "
                    f"(t_0.975 + t_0.8) × se; — where nothing varies. Equivalent: the interval inside ±{eq:g}. "
                    "Exploratory: not adjusted for multiplicity (the claims in reports/index.md are).")
