"""The studies: each answers one research question from the outputs of its RL runs.

One module per study (`methods`, `passk`, `zero`, `hacking`, `ablations`) plus `index`, built on the shared
pieces by concept: `paths` (where outputs live), `runs` (a run's outputs loaded), `answers` (arms, paired
comparisons, answer files), `markdown`, `manifest`, `figures` and `wording`.
A study module has the same shape everywhere:

- `SECTION` and `Config`: its params section and the dataclass it loads into;
- `inputs(cfg)` / `outputs(cfg)`: the files it reads and writes, relative to the repository root (the
  report stage's deps and outs in dvc.yaml list the same files; tests/test_report.py checks that);
- `report(cfg, root)`: read the inputs, write figures, a markdown table, the study's metrics and a
  manifest (figures with captions, tables, runs) that the index is built from.

`passk_eval` is the sampling measurement behind the passk study (stage passk@<model>).
"""

import re
import unicodedata
from dataclasses import dataclass, field

from ..config import check

PASSK_DATA = "reports/passk/data"  # stage passk@<label> writes <label>.json here; report_passk reads the folder


def passk_data_path(label: str) -> str:
    return f"{PASSK_DATA}/{label}.json"


# The numbers an answer may carry beside its comparison (answers.Answer.extra: written into its answer file and the
# manifest), so that a claim's `mechanism` (claims.no_mechanism) can ask whether the mechanism acted in the runs
# behind it. Each is computed from the runs' training histories (reports/rl/<task>/<run>.csv) by studies/mechanisms.py.
ANSWER_EXTRA = {
    "clip_frac": "arm b's share of response tokens the PPO clip cut: losses/clip_frac averaged over each run's "
                 "steps, then over the arm's runs",
    "clip_frac_a": "the same for arm a (in DAPO's clip pair, the symmetric arm 'mu 2, symmetric')",
    "updates_ratio": "arm b's updates / arm a's, a run's updates being num_iterations x its steps with "
                     "losses/grad_norm > 0, each arm's the mean over its runs",
    "wrong_share": "arm a's share of wrong training responses: 1 - reward/true averaged over each run's steps "
                   "weighted by rollout/count, then over the arm's runs",
}

GREEK = {"μ": "mu", "β": "beta", "ε": "eps", "α": "alpha", "π": "pi"}


def slug(text: str) -> str:
    """An answer-file name part: ASCII [a-z0-9_] ("random, μ = 2" -> "random_mu_2")."""
    for greek, name in GREEK.items():
        text = text.replace(greek, f" {name} ")
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    out = re.sub(r"[^a-z0-9]+", "_", text).strip("_")
    if not out:
        raise ValueError(f"{text!r}: no ASCII letters or digits to name an answer file by")
    return out


def pair_name(a: str, b: str, *suffix: str) -> str:
    """'<b>_vs_<a>[_suffix]': the answer file of arm b compared with arm a."""
    return "_".join([slug(b), "vs", slug(a), *map(slug, suffix)])


@dataclass
class PasskModel:
    """One entry of passk.models: a checkpoint and its task (stage passk@ reads data/<task>_<set>.jsonl)."""

    task: str  # key of reasonrl/tasks; checked against the checkpoint's own task
    model: str  # checkpoint models/<model>.pt
    # 2: the same checkpoint sampled again from another generator seed (`draw_seed`), independent of draw 1, so
    # that a problem no sample of one draw solved can be asked of another draw (reasonrl.studies.newsol)
    draw: int = 1
    sets: list[str] = field(default_factory=list)  # a subset of passk.sets to sample ([]: all of them)

    def __post_init__(self):
        check(self.draw in (1, 2), "draw", f"{self.draw!r}: 1 (the curves' draw) or 2 (a second, independent one)")


# Added to passk.eval.seed for draw 2: any other seed gives independent samples; a fixed one keeps them reproducible
DRAW_SEED_OFFSET = 1000


def draw_seed(seed: int, draw: int) -> int:
    """The sampling generator's seed of draw `draw` of a model (draw 1: `seed` itself, shared by every model)."""
    return seed + (draw - 1) * DRAW_SEED_OFFSET
