"""The exact study's report: a figure and a markdown table per demonstration, the world's table, and the
manifest the index is built from, all from the `Results` that stage `exact` wrote (reasonrl.studies.exact)."""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from ..io import read_json, write_text  # noqa: E402
from . import exact as study  # noqa: E402
from .figures import legend_below, save_figure  # noqa: E402
from .manifest import Manifest  # noqa: E402
from .paths import manifest_path  # noqa: E402

ESTIMATOR_NAMES = {"none": "none (plain REINFORCE)", "mean": "batch mean", "rloo": "RLOO", "grpo": "GRPO"}
SHORT_NAMES = {"none": "none", "mean": "batch mean", "rloo": "RLOO", "grpo": "GRPO"}
# one colour per estimator in every figure (matplotlib's first three for the training curves' three)
COLORS = {"none": "tab:blue", "rloo": "tab:orange", "grpo": "tab:green", "mean": "tab:gray"}
MODE_NAMES = {"reward_k1": "KL in reward (k1)", "loss_k3": "KL in loss (k3)"}
POLICY_NAMES = {"optimal": "analytic π*", "k3 fixed point": "k3-in-loss fixed point (exact, unbiased estimator)"}


def _build(tp, data):
    # JSON, as dataclasses.asdict wrote it, back into the annotated type
    if dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp)
        return tp(**{f.name: _build(hints[f.name], data[f.name]) for f in dataclasses.fields(tp)})
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is list:
        return [_build(args[0], x) for x in data]
    if origin is dict:
        return {k: _build(args[1], v) for k, v in data.items()}
    return data


def load_results(path: str | Path) -> study.Results:
    return _build(study.Results, read_json(path))


def table(df: pd.DataFrame, title: str, note: str) -> str:
    # four significant digits: the KLs to pi* span 1e-6 to 1, which markdown.md_table's 3 decimals would hide
    return f"### {title}\n\n{df.to_markdown(index=False, floatfmt='.4g')}\n\n{note}\n"


def frame(rows: list) -> pd.DataFrame:
    return pd.DataFrame([dataclasses.asdict(r) for r in rows])


def gradient_quality(res: study.Results, path: Path) -> str:
    gq = res.gradient_quality
    cols = {"mean cosine to exact": "cosine", "relative MSE": "rel_mse", "mean ⟨g, ∇J⟩ / ‖∇J‖²": "along"}
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    short = [SHORT_NAMES[k] for k in gq.estimators]
    # the component along the exact gradient tests bias in that direction only: the panel names what it measures
    titles = {"mean ⟨g, ∇J⟩ / ‖∇J‖²": "mean estimate along the exact gradient\n(1: unbiased along it)",
              "mean cosine to exact": "mean cosine of one estimate to exact\n(per batch: noise and bias together)"}
    for ax, (col, key) in zip(axes, cols.items()):
        mid = [getattr(q, key) for q in gq.estimators.values()]
        lo, hi = zip(*(getattr(q, f"{key}_ci") for q in gq.estimators.values()))
        ax.bar(short, mid, color=[COLORS[k] for k in gq.estimators],
               yerr=[[m - a for m, a in zip(mid, lo)], [b - m for m, b in zip(mid, hi)]], capsize=4, ecolor="k")
        ax.set(title=titles.get(col, col), xlabel="advantage estimator", ylabel=col)
    axes[2].axhline(1.0, color="k", lw=0.8, ls="--", label="as the exact gradient (= 1)")
    axes[2].set_ylim(0, 1.35)
    axes[2].legend(loc="upper center")
    fig.suptitle(f"Sampled policy gradient (none = plain REINFORCE) vs exact gradient at the reference policy\n"
                 f"(β = {gq.beta:g}, {gq.trials} trials of {gq.batch} samples; whiskers: 95% interval over the trials)")
    fig.tight_layout()
    save_figure(fig, path)
    df = pd.DataFrame([{"estimator": ESTIMATOR_NAMES[k],
                        **{col: "{:#.4g} [{:#.4g}, {:#.4g}]".format(getattr(q, key), *getattr(q, f"{key}_ci"))
                           for col, key in cols.items()}} for k, q in gq.estimators.items()])
    return table(df, "Gradient quality at the reference policy",
                 f"β = {gq.beta:g}; {gq.trials} estimates of {gq.batch} samples each, the same samples "
                 f"for every estimator; exact gradient norm {gq.exact_norm:.4g}. Each column is a mean over the "
                 "estimates g: the cosine to ∇J, |g − ∇J|² / |∇J|² and ⟨g, ∇J⟩ / |∇J|² (1 when the estimator is "
                 "unbiased along ∇J). In brackets, the 95% t interval over the estimates (their Monte Carlo "
                 "error); the squared errors are right-skewed, so the relative MSE's upper bound may sit a little "
                 "low.")


def training(res: study.Results, path: Path) -> str:
    tr = res.training
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4))
    for name, curve in tr.curves.items():
        ax1.plot(curve.step, curve.J, marker=".", label=ESTIMATOR_NAMES[name], color=COLORS[name])
        ax2.plot(curve.step, curve.kl_opt, marker=".", label=ESTIMATOR_NAMES[name], color=COLORS[name])
    ax1.axhline(tr.J_opt, color="k", ls="--", lw=0.8, label="J(π*), analytic optimum")
    ax1.axhline(tr.J_ref, color="gray", ls=":", lw=0.8, label="J(π_ref)")
    ax1.set(title="Exact objective J during training", xlabel="step", ylabel="J = E[r] − β KL(π‖π_ref)")
    # the claim's tolerance: judged on every seed's last quarter (training.md); these curves are the first seed
    seeds = len(next(iter(res.claim.estimators.values())).seeds)
    ax2.axhline(res.claim.tolerance, color="tab:red", ls=":", lw=0.9,
                label=f"the claim's tolerance {res.claim.tolerance:.2g} (judged on {seeds} seeds; curves: the first)")
    ax2.set(yscale="log", title="Distance to the analytic optimum", xlabel="step", ylabel="KL(π ‖ π*)")
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
    fig.suptitle(f"REINFORCE with KL in the reward, β = {tr.beta:g}")
    legend_below(fig, ax1, ax2)
    save_figure(fig, path)
    rows = []
    for step in tr.table_steps:
        row = {"step": step}
        for name, curve in tr.curves.items():
            i = curve.step.index(step)
            row[f"{ESTIMATOR_NAMES[name]}: J"] = curve.J[i]
            row[f"{ESTIMATOR_NAMES[name]}: KL(π‖π*)"] = curve.kl_opt[i]
        rows.append(row)
    return table(pd.DataFrame(rows), "Training towards the analytic optimum",
                 f"β = {tr.beta:g}. J(π_ref) = {tr.J_ref:.4f}, J(π*) = {tr.J_opt:.4f} "
                 f"(KL(π*‖π_ref) = {tr.kl_ref_opt:.3f}). Exact J and KL(π‖π*) of the trained policy.")


def beta_sweep(res: study.Results, path: Path) -> str:
    sw, ref = res.sweep, res.world.reference
    front, pts = frame(sw.frontier), frame(sw.rows)
    rl = pts[pts["policy"] == "RL"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.2))
    for ax, key, label in ((ax1, "reward", "reward-model score"), (ax2, "gold", "gold reward")):
        ax.plot(front["kl_ref"], front[key], color="tab:blue", lw=1.5, label="analytic optimum π*, β from 10 to 0.1")
        ax.scatter(rl["kl_ref"], rl[key], color="tab:red", zorder=3, label=f"RL ({sw.estimator}), trained")
        ax.scatter([0.0], [getattr(ref, key)], color="k", marker="s", zorder=3, label="reference π_ref")
        for _, r in rl.iterrows():
            ax.annotate(f"β={r['beta']:g}", (r["kl_ref"], r[key]), textcoords="offset points", xytext=(6, -12))
        ax.set(xscale="symlog", xlabel="KL(π ‖ π_ref)  (symlog scale)", ylabel=f"expected {label}",
               title=f"Expected {label} vs distance from the reference")
        ax.grid(alpha=0.3)
    fig.suptitle("β sweep: the reward model keeps rising, the gold reward peaks and then falls")
    legend_below(fig, ax1, ax2)
    save_figure(fig, path)
    cols = {"beta": "β", "policy": "policy", "kl_ref": "KL(π‖π_ref)", "reward": "reward", "gold": "gold",
            "length": "length", "fancy": "fancy", "points": "points", "kl_opt": "KL(π‖π*)"}
    df = pts[list(cols)].rename(columns=cols)
    df["policy"] = df["policy"].map({"RL": f"RL ({sw.estimator})", "optimal": "analytic π*"})
    top = "; ".join(f"β = {r.beta:g}: " + ", ".join(f"“{t.text}” ({t.prob:.3f})" for t in r.top)
                    for r in sw.rows if r.policy == "RL")
    return table(df, "β sweep: RL policy vs analytic optimum",
                 f"Reference: reward {ref.reward:.3f}, gold {ref.gold:.3f}, length {ref.length:.2f}, "
                 f"fancy {ref.fancy:.2f}, points {ref.points:.2f}. Most likely responses of the RL "
                 f"policies: {top}.")


def placement_label(r: study.PlacementRow) -> str:
    return POLICY_NAMES.get(r.policy) or f"RL: {ESTIMATOR_NAMES[r.estimator]}, {MODE_NAMES[r.kl_mode]}"


def kl_placement(res: study.Results, path: Path) -> str:
    kp = res.kl_placement
    fp = next(r for r in kp.rows if r.policy == "k3 fixed point")
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4))
    for name, curve in kp.curves.items():
        est, mode = name.split(" ")
        ls, label = "-" if mode == "reward_k1" else "--", f"{ESTIMATOR_NAMES[est]}, {MODE_NAMES[mode]}"
        ax1.plot(curve.step, curve.kl_opt, ls=ls, marker=".", label=label, color=COLORS[est])
        ax2.plot(curve.step, curve.kl_fp, ls=ls, marker=".", label=label, color=COLORS[est])
    ax1.axhline(fp.kl_opt, color="k", lw=0.8, ls=":", label="k3 fixed point")
    ax1.set(yscale="log", title="Distance to the analytic optimum π*", xlabel="step", ylabel="KL(π ‖ π*)")
    ax2.set(yscale="log", title="Distance to the k3-in-loss fixed point π_k3", xlabel="step",
            ylabel="KL(π ‖ π_k3)")
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
    fig.suptitle(f"Where the KL goes: in the reward (sequence k1) or in the loss (token k3), β = {kp.beta:g}")
    legend_below(fig, ax1, ax2)
    save_figure(fig, path)
    df = pd.DataFrame([{"policy": placement_label(r), "J": r.J, "KL(π‖π_ref)": r.kl_ref, "reward": r.reward,
                        "gold": r.gold, "length": r.length, "KL(π‖π*)": r.kl_opt, "KL(π‖π_k3)": r.kl_fp}
                       for r in kp.rows])
    return table(df, "KL in the reward (k1) vs KL in the loss (k3)",
                 f"β = {kp.beta:g}, same steps, batch and learning rate as above. π_k3 is the point where the "
                 "expected k3-in-loss update (unbiased advantages) vanishes, found by full-batch ascent; "
                 f"remaining update norm {kp.fixed_point_residual:.2g}.")


def world_table(res: study.Results) -> str:
    wd = res.world
    df = pd.DataFrame({"token": list(wd.rm_weights), "reward-model weight": list(wd.rm_weights.values())})
    return table(df, "The fitted reward model",
                 f"Linear in token counts, fitted by Bradley–Terry to {res.config.bt_pairs} crowd comparisons "
                 f"of responses from the reference policy (crowd agrees with gold on "
                 f"{wd.crowd_agreement:.1%} of the pairs gold is not indifferent about). "
                 f"The reference policy's KL to the data distribution is {wd.sft_kl:.2g}.")


def claim_table(res: study.Results) -> str:
    """The claim over sampling seeds: each estimator's mean KL(pi || pi*) over the last quarter with its interval."""
    c = res.claim
    rows = [{"estimator": ESTIMATOR_NAMES[name], "seeds": len(s.seeds), "mean KL(π‖π*), last quarter": s.mean,
             "95% CI": f"[{s.ci_lo:.4g}, {s.ci_hi:.4g}]", "per seed": ", ".join(f"{v:.3g}" for v in s.tail_kl),
             "whole interval under the tolerance": "yes" if s.ci_hi < c.tolerance else "no"}
            for name, s in c.estimators.items()]
    return table(pd.DataFrame(rows), "The claim over sampling seeds",
                 f"β = {c.beta:g}. Each estimator trained from {rows[0]['seeds']} "
                 f"sampling seeds; per seed, the exact KL(π‖π*) averaged over the logged steps after step "
                 f"{c.from_step}; the mean over seeds with its 95% t interval (df = seeds − 1). Tolerance "
                 f"{c.tolerance:.4g} = KL(π*(β·{1 + c.tolerance_beta:g}) ‖ π*(β)), how far a {c.tolerance_beta:.0%} "
                 "change of β moves the optimum.")


def manifest(res: study.Results) -> Manifest:
    """Figures with their key numbers, for reports/index.md."""
    cfg, kp = res.config, res.kl_placement

    def numbers(pairs) -> str:
        return ", ".join(f"{name} {value:.3g}" for name, value in pairs)

    cosines = numbers((SHORT_NAMES[k], q.cosine) for k, q in res.gradient_quality.estimators.items())
    final = numbers((SHORT_NAMES[k], c.kl_opt[-1]) for k, c in res.training.curves.items())
    gold = numbers((f"β={r.beta:g}", r.gold) for r in res.sweep.rows if r.policy == "RL")
    placed = numbers((f"{SHORT_NAMES[r.estimator]} {r.kl_mode}" if r.estimator else r.policy, r.kl_opt)
                     for r in kp.rows if r.policy != "optimal")
    return Manifest(
        "exact", "The exact toy: REINFORCE with KL on an enumerable policy",
        "On a policy small enough to enumerate, how good are the sampled policy-gradient estimators, does "
        "REINFORCE reach the analytic optimum π* ∝ π_ref·exp(r/β), and where should the KL penalty go?",
        f"Mean cosine of a sampled gradient to the exact one: {cosines}. KL(π‖π*) after training, by KL "
        f"placement: {placed}. Gold reward of the RL policy by β: {gold}.",
        [f"{len(res.world.rm_weights)}-token toy, {res.world.n_responses} responses; β = {cfg.beta:g}, "
         f"{cfg.steps} steps of {cfg.batch} samples, lr {cfg.lr:g}, seed {cfg.train_seed}"],
        [("exact/gradient_quality.png", "Sampled policy-gradient estimators against the exact gradient at the "
          f"reference policy; mean cosine to the exact gradient: {cosines}."),
         ("exact/training.png", "Exact objective J and distance to the analytic optimum during REINFORCE with KL "
          f"in the reward; final KL(π‖π*): {final}."),
         ("exact/beta_sweep.png", "β sweep: the reward-model score keeps rising while the gold reward peaks and "
          f"falls; gold reward of the RL policy: {gold}."),
         ("exact/kl_placement.png", "KL in the reward (k1) vs in the loss (k3): which reaches π*; "
          f"KL(π‖π*): {placed}.")],
        [f"exact/{name}.md" for name in study.TABLES], key_figure="exact/training.png")


# ----------------------------------------------------------------------------- the stage report_exact

Config = study.Config
load_config = study.load_config


def inputs(cfg: Config) -> list[str]:
    return [study.RESULTS]


def outputs(cfg: Config) -> list[str]:
    return ([f"{study.OUT}/{name}.png" for name in study.FIGURES] + [f"{study.OUT}/{name}.md" for name in study.TABLES]
            + [manifest_path("exact")])


def report(cfg: Config, root: Path) -> None:
    write(root)


def write(root: Path) -> None:
    """Every output of report_exact under root, from root/RESULTS."""
    res = load_results(root / study.RESULTS)
    out = root / study.OUT
    figures = {"gradient_quality": gradient_quality, "training": training, "beta_sweep": beta_sweep,
               "kl_placement": kl_placement}
    tables = {"world": world_table(res), **{name: figures[name](res, out / f"{name}.png") for name in study.FIGURES}}
    tables["training"] += "\n" + claim_table(res)  # the training demonstration, judged over seeds
    for name, text in tables.items():
        write_text(out / f"{name}.md", text)
    manifest(res).write(root)
