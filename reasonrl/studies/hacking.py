"""Study `hacking`: how a proxy reward gets exploited.

GRPO with the true reward, learned verifiers (ORM, full-step PRM), a random reward, and defences (a
format guard, a length penalty): proxy and true reward against step, one figure per run; the outcome
mix at the end; the "fooled" examples (proxy > 0.9, wrong). And the random reward at μ = 1 vs μ = 2:
does it move the policy only when the PPO clip acts?

An arm is one run or a list of runs (one per seed): curves are drawn as the mean with a 95% CI band
over seeds; every arm is compared with the reference arm (default `true`), plus any `pairs`, and with
the starting base, paired by seed and problem on greedy accuracy (reports/hacking/answers/). The
random-reward controls (optimiser x μ x seeds, a shuffled true reward, zero advantages) are arms like
any other."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .. import stats
from ..config import check
from ..io import read_json, write_json
from ..stats import fmt_share
from . import pair_name, slug
from .answers import Answer, answers_table, arm_interval, arm_outcomes, check_measure, run_arm, write_answers
from .figures import (
    FAILURE_BAR,
    FAILURE_TITLE,
    RANGES,
    SEED_RANGE,
    SHARE_YLIM,
    SMOOTH_NOTE,
    Panel,
    centred_mean,
    evaluated,
    failure_figure,
    palette,
    panel_figure,
    smoothed,
)
from .floors import chance, guess_sets
from .manifest import Manifest, manifest_answers
from .markdown import code, md_table, write_markdown
from .mechanisms import arm_mean, clip_extra, run_clip
from .paths import (
    answers_dir,
    base_metrics_path,
    manifest_path,
    outcomes_path,
    run_inputs,
    study_metrics_path,
    task_of,
)
from .runs import Run, as_runs, describe, eval_column, load_runs, seed_count, tail_mean
from .wording import CONSTANT, DOWN, NONE, UP, kind, neutral

SECTION = "studies.hacking"
GUESS_ROLE = "val_edge"  # where every run evaluates in training: its figures' random guess, on its task's set
OUT = "reports/hacking"
SETTINGS = ("reward", "guard", "len_pen", "num_iterations", "beta")  # what distinguishes the runs
CLIP_COLUMNS = {"mu": "μ", "clip_frac": "mean clip fraction", "kl_end": "KL to the start (last 10%)",
                "acc_start": "greedy acc. at step 0", "acc_end": "greedy acc. at the end",
                "entropy_end": "entropy (last 10%)"}


@dataclass
class Config:
    base: str = "cot"  # the runs' starting base: its eval_base@ outcome mix is the "before"
    runs: dict[str, list[str] | str] = field(default_factory=dict)  # reward label -> runs (one per seed)
    reference: str | None = None  # the arm every other arm is compared with (None: the first)
    pairs: list[list[str]] = field(default_factory=list)  # further [a, b] comparisons (b against a), by label
    random_pair: list[str] = field(default_factory=list)  # two arms: the random reward at μ = 1 and μ = 2
    set: str = "edge"  # the test set of the eval stages' outcome files the answers are computed on
    equivalence: float = 0.01  # half-width of the equivalence region (set from params studies.equivalence)
    tasks: dict[str, str] = field(default_factory=dict)  # checkpoint -> its task, from params (stage.load_config)

    def __post_init__(self):
        self.runs = {label: as_runs(rs) for label, rs in self.runs.items()}
        check(bool(self.runs) and all(self.runs.values()), "runs", "need at least one arm with one run")
        check(self.reference is None or self.reference in self.runs, "reference",
              f"{self.reference!r} is not one of the arms {list(self.runs)}")
        check_measure("correct", self.set)
        check(len(self.random_pair) == 2 and all(r in self.runs for r in self.random_pair),
              "random_pair", f"need two arms of `runs` (μ = 1, μ = 2), got {self.random_pair}")
        for pair in self.pairs:
            check(len(pair) == 2 and all(p in self.runs for p in pair), "pairs",
                  f"each pair is two arms of `runs`, got {pair}")

    @property
    def ref(self) -> str:
        return self.reference or next(iter(self.runs))

    def comparisons(self) -> list[tuple[str, str]]:
        out = [(self.ref, label) for label in self.runs if label != self.ref]
        return out + [(a, b) for a, b in self.pairs if (a, b) not in out]


def all_runs(cfg: Config) -> list[str]:
    return list(dict.fromkeys(r for rs in cfg.runs.values() for r in rs))


def base_task(cfg: Config) -> str:
    return task_of(cfg.tasks, f"base_{cfg.base}")


def base_outcomes(cfg: Config) -> str:
    return outcomes_path(f"base_{cfg.base}", task=base_task(cfg))


def inputs(cfg: Config) -> list[str]:
    return [base_metrics_path(cfg.base, base_task(cfg)), base_outcomes(cfg), *run_inputs(all_runs(cfg), cfg.tasks),
            *guess_sets(all_runs(cfg), cfg.tasks, GUESS_ROLE)]


def reward_png(label: str) -> str:
    return f"{OUT}/reward_{slug(label)}.png"


def outputs(cfg: Config) -> list[str]:
    return [*(reward_png(label) for label in cfg.runs), f"{OUT}/failure_mix.png", f"{OUT}/random_clip.png",
            f"{OUT}/table.md", manifest_path("hacking"), study_metrics_path("hacking"), answers_dir("hacking")]


def reward_curves(arm: list[Run]) -> list:
    """The proxy, the true reward and the greedy accuracy of an arm, each run drawn (`figures.MIN_BAND_RUNS`): a
    band over three runs that split (one collapses) would hide which run did what."""
    job = arm[0].job
    share = RANGES["reward/true"]
    # the proxy is a share like the true reward unless a length penalty can push it below 0
    proxy = share if not job.get("len_pen") and not job.get("overlong") else None
    return [smoothed("proxy reward (training signal)", [r.history["reward/proxy"] for r in arm], bounds=proxy),
            smoothed("true reward of the samples (verified)", [r.history["reward/true"] for r in arm], bounds=share),
            evaluated("greedy accuracy on the validation set (eval, verified)", [eval_column(r, "acc") for r in arm])]


def shared_ylim(arms: list[list[Run]]) -> tuple[float, float]:
    """One y-range for every reward figure, so that sibling arms compare at a glance: the share axis (SHARE_YLIM).
    A length-penalised proxy is not a share and can dip below 0 (in its first steps): it is cut at the axis, and
    its figure says so (`below_axis`), rather than stretch every sibling's axis for it."""
    return SHARE_YLIM


def below_axis(arm: list[Run], ylim: tuple[float, float]) -> float | None:
    """The lowest drawn (smoothed, per run) value of an arm's curves where it lies below the axis, else None."""
    low = min(float(centred_mean(s, c.smooth).min()) for c in reward_curves(arm) for s in c.series)
    return low if low < ylim[0] else None


def reward_figure(label: str, arm: list[Run], path: Path, ylim: tuple[float, float] | None = None,
                  guess: float | None = None) -> None:
    job = arm[0].job
    ylim = ylim or SHARE_YLIM
    low = below_axis(arm, ylim)
    cut = "" if low is None else f"; the length-penalised proxy reaches {low:.2f}, below the axis (cut there)"
    panel_figure([Panel("Proxy (training) reward vs true reward" + cut, "reward (batch mean, 0–1); points: accuracy",
                        reward_curves(arm), guess=guess, ylim=ylim)],
                 f"Reward {label}, runs {', '.join(r.name for r in arm)}\n"
                 + ", ".join(f"{k} {job[k]}" for k in SETTINGS) + f"; mean over seeds, {SEED_RANGE}; {SMOOTH_NOTE}",
                 path, ncols=1, size=(8.5, 4.2))


def random_clip_figure(cfg: Config, runs: dict[str, Run], path: Path, guess: float | None = None) -> None:
    arms = {f"{label} (μ = {runs[cfg.runs[label][0]].job['num_iterations']})": [runs[r] for r in cfg.runs[label]]
            for label in cfg.random_pair}
    colors = palette(arms)

    # three seeds of a random reward split widely: each is drawn; the eight of mu 2 take a run-level t-interval
    def curves(column):
        if column == "acc":
            return [evaluated(label, [eval_column(r, "acc") for r in arm], colors[label])
                    for label, arm in arms.items()]
        return [smoothed(label, [r.history[column] for r in arm], colors[label], RANGES[column])
                for label, arm in arms.items()]

    panel_figure([
        Panel("Fraction of tokens whose ratio was clipped", "clip fraction", curves("losses/clip_frac")),
        Panel("KL to the starting model (k3 estimate)", "KL (nats per token)", curves("losses/kl")),
        Panel("Greedy accuracy on the validation set during training (verified)", "accuracy (fraction correct)",
              curves("acc"), guess=guess),
        Panel("True reward of the training samples (verified)", "mean reward per sample (0–1)", curves("reward/true")),
    ], f"Random reward: does it change the policy only when clipping acts? (mean over seeds, {SEED_RANGE}; "
       f"{SMOOTH_NOTE})", path)


def clip_effect(label: str, arm: list[Run]) -> dict:
    """The random-reward arm's clipping and drift, averaged over its seeds."""
    def mean(f):
        return arm_mean(arm, f)

    return {"arm": label, "mu": arm[0].job["num_iterations"], "seeds": len(arm), "clip_frac": mean(run_clip),
            "kl_end": mean(lambda r: tail_mean(r.history["losses/kl"])),
            "acc_start": mean(lambda r: float(eval_column(r, "acc").iloc[0])),
            "acc_end": mean(lambda r: float(eval_column(r, "acc").iloc[-1])),
            "entropy_end": mean(lambda r: tail_mean(r.history["rollout/entropy"]))}


def clip_answer(effects: list[dict]) -> str:
    a, b = effects
    parts = [f"μ = {e['mu']} (mean clip fraction {e['clip_frac']:.3f}): KL to the start {e['kl_end']:.4f}, greedy "
             f"accuracy {e['acc_start']:.3f} → {e['acc_end']:.3f}" for e in effects]
    ratio = b["kl_end"] / a["kl_end"] if a["kl_end"] > 0 else float("inf")
    return (f"Random reward (means over seeds) — {'; '.join(parts)}; μ = {b['mu']} ends {ratio:.1f}× as far from "
            "the start (KL).")


def random_clip(cfg: Config, arms: dict[str, list[Run]], a: str | None, b: str) -> dict[str, float]:
    """The clip fractions of the random-reward arms of a pair (`mechanisms.clip_extra`: clip_frac of arm b,
    clip_frac_a of arm a), each where that arm is random_pair's or trains on the random reward; a = None: the base."""
    rnd = set(cfg.random_pair) | {k for k, arm in arms.items() if all(r.job.get("reward") == "random" for r in arm)}
    return clip_extra(arms[a] if a in rnd else None, arms[b] if b in rnd else None)


def fooled_rows(label: str, run: Run) -> list[dict]:
    """The fooled examples of the last recorded step that has any."""
    found = [e for e in run.summary.get("examples", []) if e["fooled"]]
    if not found:
        return []
    last = found[-1]
    return [{"reward": label, "run": run.name, "step": last["step"], "prompt": code(f["prompt"]),
             "gold": code(f["gold"]), "response": code(f["response"]), "proxy score": f["proxy"]}
            for f in last["fooled"]]


def gap(arm: list[Run]) -> dict:
    """Proxy − true reward over the last 10% of steps, net of the length penalty: that penalty (len_pen x
    the response length) is in the proxy by construction, so the raw gap of a penalised run is the penalty,
    not a proxy the policy learned to exploit. Its interval is over seeds (t, df = seeds − 1)."""
    length = [tail_mean(r.history["rollout/length"]) for r in arm]
    pen = [r.job.get("len_pen", 0.0) * n for r, n in zip(arm, length)]
    net = [tail_mean(r.history["reward/proxy"]) - tail_mean(r.history["reward/true"]) + p for r, p in zip(arm, pen)]
    iv = stats.mean_ci(np.array(net)[:, None]) if len(arm) > 1 else None
    return {"penalty": float(np.mean(pen)), "length": float(np.mean(length)),
            "net": float(np.mean(net)), "lo": iv.lo if iv else None, "hi": iv.hi if iv else None,
            "mde": stats.mde(iv.se, iv.df) if iv and iv.se > 0 else None}


# The history keeps 6 significant digits ('.6g'), so a net gap rebuilt from it (proxy − true + len_pen x length)
# carries rounding of about 1e-6 per step: an interval narrower than this, around a gap this small, is that rounding.
RECORDED = 1e-4


def gap_text(label: str, g: dict, equivalence: float) -> tuple[str, str]:
    """(what the net gap's interval supports, 'label +0.049 [-0.1, 0.2]')."""
    if g["lo"] is None:
        return "one seed", f"{label} {g['net']:+.3f}"
    # a gap the same on every seed has no interval to judge (as `wording.of`): 0 (the true reward plus its
    # penalty, by construction) is not testable, not "equivalent"; any other keeps its sign
    if g["hi"] - g["lo"] <= RECORDED:
        k = CONSTANT if abs(g["net"]) <= RECORDED else UP if g["net"] > 0 else DOWN
    else:
        k = kind(g["lo"], g["hi"], equivalence)
    mde = f", MDE {g['mde']:.3g}" if k == NONE and g.get("mde") is not None else ""  # what seeds could resolve
    return k, f"{label} {stats.fmt_ci(g['net'], g['lo'], g['hi'], sign=True, bounds=stats.SHARE_DIFF)}{mde}"


GAP_WORDS = {UP: "proxy above true in", DOWN: "proxy below true in", "one seed": "one seed (no interval):"}


def gap_sentence(rows: list[dict], equivalence: float, head: str = "Proxy − true reward at the end, net of any "
                 "length penalty [95% CI over seeds]: ") -> str:
    """The net gaps grouped by what their intervals support; a penalised arm's raw gap named as its penalty."""
    by: dict[str, list[str]] = {UP: [], DOWN: []}  # the directed kinds first, then in order of appearance
    for k, text in (gap_text(r["reward"], r["gap"], equivalence) for r in rows):
        by.setdefault(k, []).append(text)
    parts = [f"{GAP_WORDS.get(k) or neutral(k, equivalence) + ' in'} " + ", ".join(ts) for k, ts in by.items() if ts]
    pens = [f"{r['reward']}'s raw {r['proxy (last 10%)'] - r['true (last 10%)']:+.3f} is its length penalty "
            f"({g['penalty'] / g['length']:g} × {g['length']:.1f} characters), not a hacking gap"
            for r in rows if (g := r["gap"])["penalty"] > 0]
    return head + "; ".join(parts) + "." + (" " + "; ".join(pens) + "." if pens else "")


def arm_row(label: str, arm: list[Run], iv, set_name: str) -> dict:
    mixes = [r.metrics[set_name]["failure_mix"] for r in arm]
    mix = {t: sum(m[t] for m in mixes) / len(arm) for t in mixes[0]}
    worst = max((t for t in mix if t != "correct"), key=lambda t: mix[t])
    return {"reward": label, "runs": ", ".join(r.name for r in arm), **{k: arm[0].job[k] for k in SETTINGS[1:]},
            "proxy (last 10%)": sum(tail_mean(r.history["reward/proxy"]) for r in arm) / len(arm),
            "true (last 10%)": sum(tail_mean(r.history["reward/true"]) for r in arm) / len(arm),
            "greedy acc. [95% CI]": fmt_share(iv), "acc": iv.mean, "acc_ci_lo": iv.lo,
            "acc_ci_hi": iv.hi, "main failure": f"{worst} {mix[worst]:.2f}", "failure_mix": mix,
            "fooled examples": sum(len(fooled_rows(label, r)) for r in arm), "gap": gap(arm)}


TABLE_DROP = ("acc", "acc_ci_lo", "acc_ci_hi", "failure_mix", "gap")  # kept for metrics, not shown in the table


def report(cfg: Config, root: Path) -> None:
    runs = load_runs(root, all_runs(cfg), cfg.tasks)
    base = read_json(root / base_metrics_path(cfg.base, base_task(cfg)))[cfg.set]
    out = root / OUT
    arms = {label: [runs[r] for r in rs] for label, rs in cfg.runs.items()}
    ylim, guess = shared_ylim(list(arms.values())), chance(runs[all_runs(cfg)[0]].job, root, inputs(cfg))
    for label, arm in arms.items():
        reward_figure(label, arm, root / reward_png(label), ylim, guess)
    outcomes = {label: run_arm(root, label, rs, runs, cfg.set) for label, rs in cfg.runs.items()}
    ivs = {label: arm_interval(a) for label, a in outcomes.items()}
    answers = [Answer.of(pair_name(a, b), a, b, outcomes[a], outcomes[b], cfg.equivalence,
                         extra=random_clip(cfg, arms, a, b)) for a, b in cfg.comparisons()]
    # every arm against the starting base too: does the reward move accuracy at all (the spurious-reward claim)
    base_arm = arm_outcomes(root, f"base {cfg.base}", {None: base_outcomes(cfg)}, cfg.set)
    answers += [Answer.of(pair_name("base", label), base_arm.label, label, base_arm, outcomes[label], cfg.equivalence,
                          extra=random_clip(cfg, arms, None, label)) for label in arms]
    rows = [arm_row(label, arm, ivs[label], cfg.set) for label, arm in arms.items()]
    before = f"before: base {cfg.base}"
    names = {label: f"{label} ({seed_count(len(arm))})" for label, arm in arms.items()}
    mixes = {before: base["failure_mix"]} | {names[row["reward"]]: row["failure_mix"] for row in rows}
    # the bars' "correct" is an outcome type, judged by the answer: its error bar is the answer-only interval
    ci = {before: arm_interval(base_arm.answer)} | {names[k]: arm_interval(outcomes[k].answer) for k in arms}
    failure_figure(mixes, f"{FAILURE_TITLE}, at the end of each arm; error bar: {FAILURE_BAR}", out / "failure_mix.png",
                   ci, cfg.set)
    random_clip_figure(cfg, runs, out / "random_clip.png", guess)
    fooled = [f for label, arm in arms.items() for r in arm for f in fooled_rows(label, r)]
    effects = [clip_effect(label, arms[label]) for label in cfg.random_pair]
    write_markdown(out / "table.md", "Study: reward hacking", answer(rows, effects, answers), [
        md_table(pd.DataFrame(rows).drop(columns=list(TABLE_DROP)), "Proxy vs true reward at the end of each arm",
                 "Proxy and true: mean reward per training sample over the last 10% of steps, mean over seeds. "
                 f"Greedy accuracy on the {cfg.set} set (eval stages) with its 95% t-interval (the seed is the "
                 "unit, with the test set's problem term); the main failure type (share, mean over seeds)."),
        answers_table(answers, "Paired comparisons", f"Greedy accuracy on the {cfg.set} set."),
        md_table(pd.DataFrame(fooled) if fooled else pd.DataFrame({"fooled examples": ["none recorded"]}),
                 "Fooled examples: proxy score above 0.9, true reward 0",
                 "From the last recorded step with any (recorded for GRPO with a reward other than `true`)."),
        md_table(pd.DataFrame(effects).rename(columns=CLIP_COLUMNS), "Random reward: μ = 1 vs μ = 2",
                 clip_answer(effects))])
    metrics = {row["reward"]: {"proxy_end": row["proxy (last 10%)"], "true_end": row["true (last 10%)"],
                               "acc": row["acc"], "acc_ci_lo": row["acc_ci_lo"], "acc_ci_hi": row["acc_ci_hi"],
                               "failure_mix": row["failure_mix"]} for row in rows}
    write_json(root / study_metrics_path("hacking"), {**metrics, "random_clip": effects})
    write_answers(root, "hacking", answers)
    manifest(cfg, runs, rows, effects, answers).write(root)


def answer(rows: list[dict], effects: list[dict], answers: list[Answer]) -> str:
    eq = answers[0].equivalence if answers else stats.EQUIVALENCE
    return (f"{gap_sentence(rows, eq)} Greedy accuracy: " + "; ".join(x.text for x in answers)
            + f". {clip_answer(effects)}")


def summary(cfg: Config, runs: dict[str, Run], rows: list[dict], answers: list[Answer]) -> str:
    """The front page's paragraph: the learned verifiers and the defences (a guard, a length penalty) —
    their net gap and their greedy accuracy against the reference (the random-reward controls: details)."""
    job = {label: runs[rs[0]].job for label, rs in cfg.runs.items()}
    shown = [r for r in rows if job[r["reward"]]["reward"] not in ("true", "random", "shuffled")
             or job[r["reward"]].get("guard") or job[r["reward"]].get("len_pen")]
    vs = {x.b: x for x in answers if x.a == cfg.ref}
    acc = ", ".join(f"{r['reward']} {stats.fmt_effect(vs[r['reward']].cmp, vs[r['reward']].bounds)}" for r in shown
                    if r["reward"] in vs and vs[r["reward"]].cmp.constant is None)
    head = "Proxy − true reward, net [95% CI]: "  # within the front page's 80 words
    return f"{gap_sentence(shown, answers[0].equivalence, head)} Greedy accuracy − {cfg.ref}'s: {acc}."


def manifest(cfg: Config, runs: dict[str, Run], rows: list[dict], effects: list[dict],
             answers: list[Answer]) -> Manifest:
    figures = [(reward_png(row["reward"])[len("reports/"):],
                f"Proxy and true reward against step for reward {row['reward']} (mean over seeds, {SEED_RANGE}; "
                f"{SMOOTH_NOTE}); at the end proxy {row['proxy (last 10%)']:.3f} vs true "
                f"{row['true (last 10%)']:.3f}.") for row in rows]
    correct = ", ".join(f"{row['reward']} {row['greedy acc. [95% CI]']}" for row in rows)
    a, b = effects
    figures += [("hacking/failure_mix.png", f"Outcome types of greedy answers at the end of each arm, judged by the "
                 f"answer alone (answer-only), with the {FAILURE_BAR}; verified greedy accuracy [95% CI] {correct}."),
                ("hacking/random_clip.png", f"Random reward at μ = {a['mu']} vs μ = {b['mu']}: clip fraction, KL to "
                 f"the start, accuracy and true reward (mean over seeds, {SEED_RANGE}); KL at the end "
                 f"{a['kl_end']:.4f} vs {b['kl_end']:.4f}.")]
    return Manifest("hacking", "Reward hacking", "How do learned and random rewards get exploited, and what "
                    "do a format guard and a length penalty change?", answer(rows, effects, answers),
                    [describe(runs[r], SETTINGS) for r in all_runs(cfg)], figures, ["hacking/table.md"],
                    manifest_answers(answers), summary=summary(cfg, runs, rows, answers),
                    key_figure="hacking/failure_mix.png")
