"""New solutions, not sharper ones (Zhang, Neubig & Yue 2025), per problem: of the problems a base never solved
in N verified samples, how many does the RL model started from it solve, beyond what the base itself solves when
asked again? Read by the passk study (its table and answers), from the passk@ stages' per-problem counts.

A problem no sample of one draw of N solves is not out of the base's reach: one it solves once in 1,000 samples is
missed by most draws of 256. An RL model that solves such problems has found nothing new, so its share of them is
set against the base's own share from an independent draw of N on the same problems. Per seed s (the RL arm's s-th
model started from base seed s):

    U_s     problems the base's second draw (passk.models entry with `draw: 2`) solves in none of its N samples
    rl_s    share of U_s the RL model solves in at least one of its N verified samples
    base_s  share of U_s the base's first draw solves in at least one of its N verified samples
    effect  mean over seeds of rl_s - base_s: a t-interval whose unit is the seed (df = seeds - 1)

U is chosen on the second draw, and the base's first draw is the control, because every model's first draw
shares one generator seed (passk.eval.seed) and torch.multinomial with one generator draws the same tokens from
similar distributions. Chosen on the first draw, U would hold the problems the shared random numbers made hard,
an RL model close to its base would miss them again, and its share would fall below the independent second
draw's: the base itself would score below its own second draw. Chosen on the second draw, U is independent of
both shares' draws, which share their random numbers with each other: a model that is its base scores exactly 0.

A seed whose U is empty (the second draw solved every problem) has no share to read: it is dropped and named in
the table. Each seed weighs the same whatever its |U|: the seed is the unit the claim generalises over. With
fewer than two seeds left there is no run-level interval, and no answer is written (a claim on it is then not
testable: not computed)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from .. import stats
from ..config import check
from . import pair_name
from . import passk_data_path as data_path
from .answers import Answer
from .markdown import md_table
from .paths import CHECKPOINT_GROUPS

SUFFIX = "new"  # the answer file <arm>_vs_<base>_<set>_new.json


def second_draws(cfg) -> dict[str, str]:
    """{model key of a base arm: its second draw's key}: the passk.models entry of the same checkpoint and task
    with `draw: 2`. A second draw is read here only, never as an arm (its sets may be a subset)."""
    for label, keys in cfg.arms.items():
        check(all(cfg.models[k].draw == 1 for k in keys), "passk.arms", f"{label}: {keys} holds a second draw "
              "(draw: 2), which only the new-solutions measure reads")
    seconds = {k: m for k, m in cfg.models.items() if m.draw == 2}
    out = {}
    for key in (k for b in cfg.bases for k in cfg.arms[b]):
        m = cfg.models[key]
        found = [k for k, d in seconds.items() if (d.model, d.task) == (m.model, m.task)]
        check(len(found) <= 1, "passk.models", f"{found}: more than one second draw of models/{m.model}.pt")
        out |= {key: found[0]} if found else {}
    check(set(seconds) <= set(out.values()), "passk.models", f"{sorted(set(seconds) - set(out.values()))}: second "
          "draws of no base arm's model (nothing reads them)")
    return out


def inputs(cfg) -> list[str]:
    return [data_path(k) for k in second_draws(cfg).values()]


def aligned(data: dict[str, dict]) -> dict[str, dict]:
    """`data` (passk data files by model key), after checking that every model of a task measured the same
    problems of each set (`problems` of `of`, passk.eval.problems): the counts pair by position."""
    seen: dict[tuple[str, str], tuple[str, tuple[int, int]]] = {}
    for key, d in data.items():
        for s, x in d["sets"].items():
            n = (x["problems"], x.get("of", x["problems"]))
            first, m = seen.setdefault((d.get("task"), s), (key, n))
            if m != n or len(x["counts"]) != n[0]:
                raise ValueError(f"passk data {key}, set {s}: {len(x['counts'])} counts of {n[0]} of {n[1]} problems, "
                                 f"but {first} has {m[0]} of {m[1]}: rerun the passk@ stages with one passk.eval")
    return data


@dataclass(frozen=True)
class Shares:
    """One seed: |U| and the shares of U the RL model and the base's first draw solve."""

    unsolved: int
    rl: float
    base: float


def seed_shares(select, rl, base) -> Shares | None:
    """Per-problem verified counts of the base's second draw (`select`, which picks U), the RL model and the base's
    first draw -> that seed's Shares; None when U is empty."""
    select, rl, base = (np.asarray(x) for x in (select, rl, base))
    if not select.shape == rl.shape == base.shape:
        raise ValueError(f"counts: one per problem in each draw, got shapes {select.shape}, {rl.shape}, {base.shape}")
    u = select == 0
    if not u.any():
        return None
    return Shares(int(u.sum()), float((rl[u] > 0).mean()), float((base[u] > 0).mean()))


def compare(shares: list[Shares | None]) -> stats.Comparison | None:
    """rl_s - base_s over the seeds with a non-empty U: stats.paired on (seeds, 1) arrays, whose interval is then
    the one-sample t-interval of the per-seed differences (df = seeds - 1); `problems`: |U| summed over those
    seeds. None with fewer than two such seeds."""
    kept = [s for s in shares if s is not None]
    if len(kept) < 2:
        return None
    cmp = stats.paired(np.array([[s.base] for s in kept]), np.array([[s.rl] for s in kept]))
    return replace(cmp, problems=sum(s.unsolved for s in kept))


@dataclass(frozen=True)
class Result:
    """The measure for one arm against its base on one set."""

    set: str
    arm: str
    base: str
    seeds: list[str]  # the RL arm's model keys, in seed order
    shares: list[Shares | None]  # verified, per seed; None: U empty, dropped
    answer: Answer | None  # None: fewer than two seeds with a non-empty U


def counts(data: dict, key: str, set_name: str, which: str) -> list[int] | None:
    return data[key]["sets"][set_name].get(which)


def measure(cfg, data: dict[str, dict], base: str, arm: str, set_name: str) -> Result:
    """`arm` against the base arm `base` on `set_name`, model by model in seed order."""
    draws = second_draws(cfg)
    trios = list(zip(cfg.arms[base], cfg.arms[arm]))

    def shares(which: str) -> list[Shares | None] | None:
        rows = [[counts(data, k, set_name, which) for k in (draws[b], r, b)] for b, r in trios]
        return None if any(c is None for row in rows for c in row) else [seed_shares(*row) for row in rows]

    verified, answer_only = shares("counts"), shares("counts_answer")
    cmp = compare(verified)
    twin = compare(answer_only) if answer_only else None
    answer = None if cmp is None else Answer(pair_name(base, arm, set_name, SUFFIX), f"{base} (another draw)", arm,
                                             cmp, cfg.equivalence, answer_only=twin)
    return Result(set_name, arm, base, list(cfg.arms[arm]), verified, answer)


def has_own_reference(cfg, pair: list[str]) -> bool:
    """Whether a further pair [a, b] compares with a reference other than the task's base: neither label is a base
    arm, and a's models are not all RL runs (checkpoints rl_*), so a is another base (the exposure base)."""
    rl = CHECKPOINT_GROUPS["runs"]
    return not set(pair) & set(cfg.bases) and not all(cfg.models[k].model.startswith(rl) for k in cfg.arms[pair[0]])


def results(cfg, data: dict[str, dict]) -> list[Result]:
    """Every other arm of a task against its base arm, on each set every second draw of that base sampled; an arm
    of another number of models than its base has no seed-by-seed pairing and is left out, and so is an arm of
    a further pair (passk.pairs) whose reference is another base (its models are no RL runs): those arms have a
    reference of their own (the exposure base and the runs started from it), not the base whose draws U is chosen
    on. A pair of two RL arms (the answer-only chain arm and its trace-verified twin) keeps both: each started
    from the base."""
    draws = second_draws(cfg)
    own = {label for pair in cfg.pairs if has_own_reference(cfg, pair) for label in pair}
    out = []
    for base, *arms in cfg.tasks().values():
        arms = [a for a in arms if a not in own]
        if not all(k in draws for k in cfg.arms[base]):
            continue
        sets = [s for s in data[draws[cfg.arms[base][0]]]["sets"] if
                all(s in data[draws[k]]["sets"] for k in cfg.arms[base])]
        out += [measure(cfg, data, base, arm, s) for s in sets for arm in arms
                if len(cfg.arms[arm]) == len(cfg.arms[base])]
    return out


def not_computed(found: list[Result]) -> dict[str, str]:
    """{answer file: why} for each arm and set whose measure has no answer (Manifest.not_computed)."""
    return {pair_name(r.base, r.arm, r.set, SUFFIX): "fewer than 2 seeds where the base's second draw left a problem "
            "unsolved" for r in found if r.answer is None}


def fmt_seeds(shares: list[Shares | None], field: str) -> str:
    return " / ".join("—" if s is None else f"{getattr(s, field):.3g}" for s in shares)


def table(found: list[Result]) -> str:
    """The passk table's section: a row per arm and set, with each seed's |U| and shares ("" with none)."""
    if not found:
        return ""
    rows = [{"set": r.set, "arm": r.arm, "base": r.base, "U size per seed": fmt_seeds(r.shares, "unsolved"),
             "RL share per seed": fmt_seeds(r.shares, "rl"), "base's share per seed": fmt_seeds(r.shares, "base"),
             "RL − base [95% CI]": "fewer than 2 seeds with U" if r.answer is None else
             stats.fmt_effect(r.answer.cmp, r.answer.bounds),
             "answer": "—" if r.answer is None else r.answer.text,
             "file": "—" if r.answer is None else f"answers/{r.answer.pair}.json"} for r in found]
    dropped = [f"{r.arm} on {r.set}: {', '.join(k for k, s in zip(r.seeds, r.shares) if s is None)}"
               for r in found if None in r.shares]
    return md_table(pd.DataFrame(rows), "New solutions: the base's unsolved problems that RL solves, beyond the base's "
                    "own other draw", "U: the problems the base's second draw (its own generator seed) solves in none "
                    "of its N verified samples. RL share: of U, those the RL model solves in at least one verified "
                    "sample; base's share: the same for the base's first draw (the curves' draw), so problems a "
                    "second look at the base solves are not counted as new. Effect: the mean over seeds of RL − "
                    "base, with a 95% t-interval whose unit is the seed (df = seeds − 1; 'problems' in the answer "
                    "file: U's sizes summed). A seed with an empty U is dropped (—)"
                    + (f": {'; '.join(dropped)}." if dropped else "; none was."))
