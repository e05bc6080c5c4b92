"""Shared pieces of the study reports: where a run's outputs live and how to load them, band plots,
failure-mix bars, markdown tables, and the manifest each study leaves for the index."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from .. import stats  # noqa: E402
from ..config import check  # noqa: E402
from ..io import read_json, write_json, write_text  # noqa: E402
from . import ANSWER_EXTRA, pair_name, slug  # noqa: E402, F401  pair_name, slug: the study modules name answer files by them
from .figures import (  # noqa: E402, F401  re-exported: the study modules take their figure helpers from here
    FAILURE_COLORS,
    RANGES,
    SMOOTH,
    STEP,
    Curve,
    Panel,
    band,
    band_stats,
    evaluated,
    failure_bars,
    failure_figure,
    legend_below,
    palette,
    panel_figure,
    save_figure,
    smoothed,
)

# an arm's per-problem outcome (a column of outcomes_<checkpoint>.csv): the greedy answer, or the share of N samples
# at T = 1, verified (answer and trace right: reasonrl/evaluate.py); `<m>_answer`: by the answer alone
EVAL_SETS = ("in", "edge", "far")  # the test sets (roles) stages/eval.py writes outcomes for
MEASURES = {"correct": "verified greedy accuracy", "sampled": "verified sampled accuracy (pass@1 at T = 1)",
            "correct_answer": "answer-only greedy accuracy", "sampled_answer": "answer-only sampled accuracy"}
TAIL = 0.1  # the "final" value of a per-step curve: mean over the last 10% of its steps (at least one)


# ----------------------------------------------------------------------------- where outputs live
# `folder` is where the stages write: reports/, or reports/headline/ for the headline chain

def history_path(run: str, folder: str = "reports") -> str:
    return f"{folder}/rl/{run}.csv"


def summary_path(run: str, folder: str = "reports") -> str:
    return f"{folder}/rl/{run}.json"


def run_metrics_path(run: str, folder: str = "reports") -> str:
    return f"{folder}/eval/rl_{run}.json"


def base_metrics_path(base: str) -> str:
    return f"reports/eval/base_{base}.json"


def study_metrics_path(study: str) -> str:
    return f"reports/metrics/{study}.json"


def manifest_path(study: str) -> str:
    return f"reports/{study}/manifest.json"


def outcomes_path(checkpoint: str, folder: str = "reports") -> str:
    """Per-problem greedy outcomes of a checkpoint (models/<checkpoint>.pt), written by its eval stage."""
    return f"{folder}/eval/outcomes_{checkpoint}.csv"


def run_outcomes_path(run: str, folder: str = "reports") -> str:
    return outcomes_path(f"rl_{run}", folder)


def answers_dir(study: str) -> str:
    """The study's answer files, one flat JSON per compared pair (a DVC metrics directory)."""
    return f"reports/{study}/answers"


def answer_path(study: str, pair: str) -> str:
    return f"{answers_dir(study)}/{pair}.json"


def run_inputs(runs: Iterable[str], metrics: bool = True) -> list[str]:
    """The files `load_run` reads for each run, in order, without repeats (with `metrics`, also the
    eval stage's per-problem outcomes)."""
    out: list[str] = []
    for run in runs:
        extra = (run_metrics_path(run), run_outcomes_path(run)) if metrics else ()
        for path in (history_path(run), summary_path(run)) + extra:
            if path not in out:
                out.append(path)
    return out


# ----------------------------------------------------------------------------- loading

@dataclass
class Run:
    name: str
    history: pd.DataFrame  # one row per step, indexed by step; columns as in the RL record
    evals: pd.DataFrame  # one row per in-training evaluation, indexed by step; nested keys joined by "."
    summary: dict  # reports/rl/<run>.json
    metrics: dict | None  # reports/eval/rl_<run>.json (the eval@ stage), when asked for

    @property
    def job(self) -> dict:
        return self.summary["job"]


def evals_frame(evals: list[dict]) -> pd.DataFrame:
    """In-training evaluations as a frame indexed by step ({"by_k": {"3": x}} -> column "by_k.3", for a task
    whose difficulty is k)."""
    if not evals:
        return pd.DataFrame(index=pd.Index([], name="step"))
    return pd.json_normalize(evals, sep=".").set_index("step").sort_index()


def load_run(root: Path, name: str, metrics: bool = True) -> Run:
    history = pd.read_csv(root / history_path(name)).set_index("step").sort_index()
    summary = read_json(root / summary_path(name))
    return Run(name=name, history=history, evals=evals_frame(summary["evals"]), summary=summary,
               metrics=read_json(root / run_metrics_path(name)) if metrics else None)


def load_runs(root: Path, names: Iterable[str], metrics: bool = True) -> dict[str, Run]:
    return {name: load_run(root, name, metrics) for name in dict.fromkeys(names)}


def tail_mean(series: pd.Series, frac: float = TAIL) -> float:
    """Mean of the last `frac` of a per-step series (at least its last value)."""
    return float(series.iloc[-max(1, math.ceil(len(series) * frac)):].mean())


def eval_column(run: Run, column: str) -> pd.Series:
    if column not in run.evals:
        raise KeyError(f"{summary_path(run.name)}: the run's evaluations have no {column!r} "
                       f"(its eval is {run.job.get('eval')!r}); give the run the eval this study needs")
    return run.evals[column]


def seed_count(n: int) -> str:
    return f"{n} seed" + ("s" if n != 1 else "")


def describe(run: Run, keys: Iterable[str]) -> str:
    """'name (key value, key value)' from the run's job, for tables and the index."""
    return f"{run.name} (" + ", ".join(f"{k} {run.job[k]}" for k in keys) + ")"


# ----------------------------------------------------------------------------- numbers

def mean_sd(values: Iterable[float], fmt: str = ".3f") -> str:
    """'m ± sd' (sample standard deviation; one value gives just the value)."""
    s = pd.Series(list(values), dtype=float)
    return f"{s.mean():{fmt}}" if len(s) < 2 else f"{s.mean():{fmt}} ± {s.std():{fmt}}"


def mean_mix(mixes: list[dict[str, float]]) -> dict[str, float]:
    """The outcome-type shares averaged over several evaluations (types in the first one's order)."""
    return {t: sum(m[t] for m in mixes) / len(mixes) for t in mixes[0]}


# ----------------------------------------------------------------------------- arms and paired answers


def as_runs(value: str | list[str]) -> list[str]:
    """An arm named by one run or by a list of runs (one per seed)."""
    return [value] if isinstance(value, str) else list(value)


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
        files[seed] = run_outcomes_path(r)
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


# ----------------------------------------------------------------------------- tables and manifest

def code(text: str) -> str:
    """Text as a markdown code span that is safe inside a table cell (| escaped, backticks dropped)."""
    return "`" + str(text).replace("`", "'").replace("|", "\\|") + "`"


def cell(value) -> str:
    """A table cell: floats with 3 decimals (small ones in scientific notation), a missing value empty,
    anything else as written."""
    if not isinstance(value, float):
        return str(value)
    return "" if math.isnan(value) else f"{value:.2e}" if 0 < abs(value) < 0.01 else f"{value:.3f}"


def md_table(df: pd.DataFrame, title: str, note: str = "") -> str:
    """A markdown table under a heading, cells formatted here (no parsing of "+0.020"), numeric ones right-aligned."""
    align = ["right" if pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c]) else "left"
             for c in df]
    body = df.map(cell).to_markdown(index=False, disable_numparse=True, colalign=align)
    return f"### {title}\n\n{body}\n" + (f"\n{note}\n" if note else "")


def write_markdown(path: Path, title: str, intro: str, parts: list[str]) -> None:
    write_text(path, f"## {title}\n\n{intro}\n\n" + "\n".join(parts))


@dataclass
class Manifest:
    """What a study produced, for the index: figure paths are relative to reports/."""

    study: str
    title: str
    question: str
    answer: str  # one line with the key numbers
    runs: list[str]  # run descriptions (name and the settings the study varies)
    figures: list[tuple[str, str]] = field(default_factory=list)  # (path, one sentence with the key number)
    tables: list[str] = field(default_factory=list)
    answers: list[dict] = field(default_factory=list)  # {"pair", "text", **Comparison.to_json()} per answer
    summary: str = ""  # the front page's paragraph where `answer` is longer (cut at a clause to 80 words there)
    key_figure: str = ""  # the figure the front page shows; "" for the first
    not_computed: dict[str, str] = field(default_factory=dict)  # answer file (pair) -> why the study wrote none

    def write(self, root: Path) -> None:
        write_json(root / manifest_path(self.study),
                   asdict(self) | {"figures": [{"file": f, "caption": c} for f, c in self.figures]})


def manifest_answers(answers: list[Answer]) -> list[dict]:
    return [{"pair": x.pair, "text": x.text, "a_label": x.a, "b_label": x.b, "equivalence": x.equivalence,
             "bounds": x.bounds, "constant": x.cmp.constant, **x.cmp.to_json(), **x.extra,
             "answer_only": x.answer_only.to_json() if x.answer_only else None} for x in answers]
