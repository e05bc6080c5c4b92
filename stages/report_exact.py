"""Stage `report-exact`: figures and markdown tables of the exact toy from reports/exact/results.json."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from reasonrl.io import atomic_path, read_json, write_text  # noqa: E402

ESTIMATOR_NAMES = {"none": "none (plain REINFORCE)", "mean": "batch mean", "rloo": "RLOO", "grpo": "GRPO"}
SHORT_NAMES = {"none": "none", "mean": "batch mean", "rloo": "RLOO", "grpo": "GRPO"}
MODE_NAMES = {"reward_k1": "KL in reward (k1)", "loss_k3": "KL in loss (k3)"}


def save(fig: plt.Figure, path: Path) -> None:
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=120, bbox_inches="tight", format="png")
    plt.close(fig)


def table(df: pd.DataFrame, title: str, note: str) -> str:
    return f"### {title}\n\n{df.to_markdown(index=False, floatfmt='.4g')}\n\n{note}\n"


def gradient_quality(res: dict, out: Path) -> str:
    gq = res["gradient_quality"]
    rows = [{"estimator": ESTIMATOR_NAMES[k], "mean cosine to exact": v["cosine"],
             "relative MSE": v["rel_mse"], "|mean gradient| / |exact|": v["norm_ratio"]}
            for k, v in gq["estimators"].items()]
    df = pd.DataFrame(rows)
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    short = [SHORT_NAMES[k] for k in gq["estimators"]]
    for ax, col in zip(axes, df.columns[1:]):
        ax.bar(short, df[col], color=["tab:gray", "tab:blue", "tab:green", "tab:orange"][: len(df)])
        ax.set_title(col)
        ax.set_xlabel("advantage estimator")
        ax.set_ylabel(col)
    axes[2].axhline(1.0, color="k", lw=0.8, ls="--", label="unbiased (= 1)")
    axes[2].set_ylim(0, 1.35)
    axes[2].legend(loc="upper center")
    fig.suptitle(f"Sampled policy gradient (none = plain REINFORCE) vs exact gradient at the reference policy\n"
                 f"(β = {gq['beta']:g}, {gq['trials']} trials of {gq['batch']} samples)")
    fig.tight_layout()
    save(fig, out / "gradient_quality.png")
    return table(df, "Gradient quality at the reference policy",
                 f"β = {gq['beta']:g}; {gq['trials']} estimates of {gq['batch']} samples each, the same samples "
                 f"for every estimator; exact gradient norm {gq['exact_norm']:.4g}. Relative MSE is "
                 "mean |g − ∇J|² / |∇J|².")


def training(res: dict, out: Path) -> str:
    tr = res["training"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4))
    for name, rec in tr["curves"].items():
        ax1.plot(rec["step"], rec["J"], marker=".", label=ESTIMATOR_NAMES[name])
        ax2.plot(rec["step"], rec["kl_opt"], marker=".", label=ESTIMATOR_NAMES[name])
    ax1.axhline(tr["J_opt"], color="k", ls="--", lw=0.8, label="J(π*), analytic optimum")
    ax1.axhline(tr["J_ref"], color="gray", ls=":", lw=0.8, label="J(π_ref)")
    ax1.set(title="Exact objective J during training", xlabel="step", ylabel="J = E[r] − β KL(π‖π_ref)")
    ax2.set_yscale("log")
    ax2.set(title="Distance to the analytic optimum", xlabel="step", ylabel="KL(π ‖ π*)")
    for ax in (ax1, ax2):
        ax.legend()
        ax.grid(alpha=0.3)
    fig.suptitle(f"REINFORCE with KL in the reward, β = {tr['beta']:g}")
    fig.tight_layout()
    save(fig, out / "training.png")
    rows = []
    for step in tr["table_steps"]:
        row = {"step": step}
        for name, rec in tr["curves"].items():
            i = rec["step"].index(step)
            row[f"{ESTIMATOR_NAMES[name]}: J"] = rec["J"][i]
            row[f"{ESTIMATOR_NAMES[name]}: KL(π‖π*)"] = rec["kl_opt"][i]
        rows.append(row)
    return table(pd.DataFrame(rows), "Training towards the analytic optimum",
                 f"β = {tr['beta']:g}. J(π_ref) = {tr['J_ref']:.4f}, J(π*) = {tr['J_opt']:.4f} "
                 f"(KL(π*‖π_ref) = {tr['kl_ref_opt']:.3f}). Exact J and KL(π‖π*) of the trained policy.")


def beta_sweep(res: dict, out: Path) -> str:
    sw = res["sweep"]
    ref = res["world"]["reference"]
    front = pd.DataFrame(sw["frontier"])
    pts = pd.DataFrame(sw["rows"])
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.2))
    for ax, key, label in ((ax1, "reward", "reward-model score"), (ax2, "gold", "gold reward")):
        ax.plot(front["kl_ref"], front[key], color="tab:blue", lw=1.5, label="analytic optimum π*, β from 10 to 0.1")
        rl = pts[pts["policy"] == "RL"]
        ax.scatter(rl["kl_ref"], rl[key], color="tab:red", zorder=3, label=f"RL ({sw['estimator']}), trained")
        ax.scatter([0.0], [ref[key]], color="k", marker="s", zorder=3, label="reference π_ref")
        for _, r in rl.iterrows():
            ax.annotate(f"β={r['beta']:g}", (r["kl_ref"], r[key]), textcoords="offset points", xytext=(6, -12))
        ax.set(xscale="symlog", xlabel="KL(π ‖ π_ref)  (symlog scale)", ylabel=f"expected {label}",
               title=f"Expected {label} vs distance from the reference")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("β sweep: the reward model keeps rising, the gold reward peaks and then falls")
    fig.tight_layout()
    save(fig, out / "beta_sweep.png")
    cols = {"beta": "β", "policy": "policy", "kl_ref": "KL(π‖π_ref)", "reward": "reward", "gold": "gold",
            "length": "length", "fancy": "fancy", "points": "points", "kl_opt": "KL(π‖π*)"}
    df = pts[list(cols)].rename(columns=cols)
    df["policy"] = df["policy"].map({"RL": f"RL ({sw['estimator']})", "optimal": "analytic π*"})
    top = "; ".join(f"β = {r['beta']:g}: " + ", ".join(f"“{t['text']}” ({t['prob']:.3f})" for t in r["top"])
                    for r in sw["rows"] if r["policy"] == "RL")
    return table(df, "β sweep: RL policy vs analytic optimum",
                 f"Reference: reward {ref['reward']:.3f}, gold {ref['gold']:.3f}, length {ref['length']:.2f}, "
                 f"fancy {ref['fancy']:.2f}, points {ref['points']:.2f}. Most likely responses of the RL "
                 f"policies: {top}.")


def kl_placement(res: dict, out: Path) -> str:
    kp = res["kl_placement"]
    fp = next(r for r in kp["rows"] if r["policy"] == "k3 fixed point")
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4))
    for name, rec in kp["curves"].items():
        est, mode = name.split(" ")
        ls = "-" if mode == "reward_k1" else "--"
        label = f"{ESTIMATOR_NAMES[est]}, {MODE_NAMES[mode]}"
        ax1.plot(rec["step"], rec["kl_opt"], ls=ls, marker=".", label=label)
        ax2.plot(rec["step"], rec["kl_fp"], ls=ls, marker=".", label=label)
    ax1.axhline(fp["kl_opt"], color="k", lw=0.8, ls=":", label="k3 fixed point")
    ax1.set(yscale="log", title="Distance to the analytic optimum π*", xlabel="step", ylabel="KL(π ‖ π*)")
    ax2.set(yscale="log", title="Distance to the k3-in-loss fixed point π_k3", xlabel="step",
            ylabel="KL(π ‖ π_k3)")
    for ax in (ax1, ax2):
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    fig.suptitle(f"Where the KL goes: in the reward (sequence k1) or in the loss (token k3), β = {kp['beta']:g}")
    fig.tight_layout()
    save(fig, out / "kl_placement.png")
    names = {"optimal": "analytic π*", "k3 fixed point": "k3-in-loss fixed point (exact, unbiased estimator)"}
    rows = []
    for r in kp["rows"]:
        label = names.get(r["policy"]) or f"RL: {ESTIMATOR_NAMES[r['estimator']]}, {MODE_NAMES[r['kl_mode']]}"
        rows.append({"policy": label, "J": r["J"], "KL(π‖π_ref)": r["kl_ref"], "reward": r["reward"],
                     "gold": r["gold"], "length": r["length"], "KL(π‖π*)": r["kl_opt"], "KL(π‖π_k3)": r["kl_fp"]})
    return table(pd.DataFrame(rows), "KL in the reward (k1) vs KL in the loss (k3)",
                 f"β = {kp['beta']:g}, same steps, batch and learning rate as above. π_k3 is the point where the "
                 "expected k3-in-loss update (unbiased advantages) vanishes, found by full-batch ascent; "
                 f"remaining update norm {kp['fixed_point_residual']:.2g}.")


def world_table(res: dict) -> str:
    wd = res["world"]
    df = pd.DataFrame({"token": list(wd["rm_weights"]), "reward-model weight": list(wd["rm_weights"].values())})
    return table(df, "The fitted reward model",
                 f"Linear in token counts, fitted by Bradley–Terry to {res['config']['bt_pairs']} crowd comparisons "
                 f"of responses from the reference policy (crowd agrees with gold on "
                 f"{wd['crowd_agreement']:.1%} of the pairs gold is not indifferent about). "
                 f"The reference policy's KL to the data distribution is {wd['sft_kl']:.2g}.")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--results", default="reports/exact/results.json")
    parser.add_argument("--out", default="reports/exact")
    args = parser.parse_args(argv)
    res = read_json(args.results)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    parts = {"world": world_table(res), "gradient_quality": gradient_quality(res, out),
             "training": training(res, out), "beta_sweep": beta_sweep(res, out),
             "kl_placement": kl_placement(res, out)}
    for name, text in parts.items():
        write_text(out / f"{name}.md", text)
    print(f"report-exact: {len(parts)} tables, 4 figures -> {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
