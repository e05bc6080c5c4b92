"""The numbers answers carry for the claims' mechanisms (studies/mechanisms.py, Answer.extra) and the claims'
relative equivalence margin (Claim.equivalence_rel), on hand-built runs and answers with the numbers written out."""

import io
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from scipy import stats as sps

from reasonrl import stats
from reasonrl.config import ConfigError
from reasonrl.io import read_json
from reasonrl.studies import ANSWER_EXTRA, ablations, claims, hacking, index
from reasonrl.studies.answers import Answer, write_answers
from reasonrl.studies.manifest import manifest_answers
from reasonrl.studies.paths import answer_path, run_outcomes_path
from reasonrl.studies.runs import Run

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import power  # noqa: E402

HEAD = "step,reward/true,rollout/count,losses/clip_frac,losses/grad_norm,rollout/entropy,rollout/length_wrong\n"
# arm a ("sym", num_iterations 2): per run the mean clip fraction, the updates (2 x steps with grad_norm > 0) and the
# true reward weighted by rollout/count
HISTORIES = {
    "a0": "1,0.5,8,0.1,1.0,1.0,20\n2,0.25,8,0.3,0.0,0.9,21\n3,0.75,16,0.2,2.0,0.8,22\n4,1.0,8,0.0,0.5,0.7,0\n",
    # clip (0.1 + 0.3 + 0.2 + 0) / 4 = 0.15; updates 2 x 3 = 6; reward (4 + 2 + 12 + 8) / 40 = 0.65
    "a1": "1,0.0,8,0.05,0.0,1.1,30\n2,0.5,8,0.15,1.0,1.0,31\n3,0.5,8,0.1,1.0,0.9,32\n4,0.25,8,0.1,1.0,0.8,33\n",
    # clip 0.4 / 4 = 0.1; updates 2 x 3 = 6; reward (0 + 4 + 4 + 2) / 32 = 0.3125
    # arm b ("hi", num_iterations 1, fewer steps, as dynamic sampling ends early)
    "b0": "1,0.5,8,0.2,1.0,1.2,25\n2,0.5,24,0.4,1.0,1.1,26\n3,0.5,8,0.0,1.0,1.0,27\n",  # clip 0.2; updates 3
    "b1": "1,0.0,8,0.5,0.0,1.3,40\n2,0.5,8,0.1,1.0,1.2,41\n",  # clip 0.3; updates 1
}
ITERATIONS = {"a": 2, "b": 1}
# clip_frac: arm b's (0.2 + 0.3) / 2; clip_frac_a: arm a's (0.15 + 0.1) / 2; updates_ratio: b's mean updates
# (3 + 1) / 2 = 2 over a's (6 + 6) / 2 = 6; wrong_share: 1 - a's mean reward (0.65 + 0.3125) / 2. (Pooling the
# runs' rollouts instead would give 1 - 36 / 72 = 0.5.)
EXPECTED = {"clip_frac": 0.25, "clip_frac_a": 0.125, "updates_ratio": 0.333333, "wrong_share": 0.51875}


def fake_run(name: str, **job) -> Run:
    history = pd.read_csv(io.StringIO(HEAD + HISTORIES[name])).set_index("step")
    job = {"task": "hop", "seed": int(name[1]), "num_iterations": ITERATIONS[name[0]]} | job
    return Run(name, history, pd.DataFrame(), {"job": job, "evals": []}, None)


def write_outcomes(root: Path, run: str, correct: list[int]) -> None:
    path = root / run_outcomes_path(run, task="hop")
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [{"problem": f"p{i}", "set": "edge", "correct": c, "correct_answer": c} for i, c in enumerate(correct)]
    pd.DataFrame(rows).to_csv(path, index=False)


def test_an_ablations_answer_carries_the_arms_mechanism_numbers(tmp_path):
    runs = {name: fake_run(name) for name in HISTORIES}
    for name, correct in {"a0": [1, 0, 0, 1], "a1": [0, 1, 0, 0], "b0": [1, 1, 0, 1], "b1": [1, 1, 1, 0]}.items():
        write_outcomes(tmp_path, name, correct)
    group = ablations.Group("clip", {"sym": ["a0", "a1"], "hi": ["b0", "b1"]})
    cfg = ablations.Config(groups={"clip": group})
    answers, _ = ablations.group_answers(cfg, tmp_path, "clip", group, runs)
    # the accuracy answer and the two curve answers (two common seeds) of the one pair, all with the same numbers
    assert [x.pair for x in answers] == ["clip_hi_vs_sym", "clip_hi_vs_sym_wrong_length", "clip_hi_vs_sym_entropy"]
    for x in answers:
        assert x.extra == pytest.approx(EXPECTED, abs=1e-9)
    # written into the answer file and the manifest's answer dict, beside the comparison's keys
    write_answers(tmp_path, "ablations", answers)
    written = read_json(tmp_path / answer_path("ablations", "clip_hi_vs_sym"))
    assert set(written) == set(stats.ANSWER_KEYS) | set(EXPECTED)
    assert {k: written[k] for k in EXPECTED} == pytest.approx(EXPECTED, abs=1e-9)
    listed = manifest_answers(answers)[0]
    assert {k: listed[k] for k in EXPECTED} == pytest.approx(EXPECTED, abs=1e-9)
    # the stability map's answers carry them too (variant b at an lr against the reference variant at that lr)
    st = ablations.Config(stability=ablations.Stability(variants={"sym": {"1e-3": ["a0", "a1"]},
                                                                  "hi": {"1e-3": ["b0", "b1"]}}))
    (x,), _ = ablations.stability_answers(st, tmp_path, runs)
    assert x.extra == pytest.approx(EXPECTED, abs=1e-9)


def test_no_updates_in_arm_a_leaves_the_ratio_unmeasured():
    from reasonrl.studies.mechanisms import ablation_extra

    a = [fake_run("b1")]
    a[0].history["losses/grad_norm"] = 0.0
    extra = ablation_extra(a, [fake_run("b0")])
    assert "updates_ratio" not in extra and extra["wrong_share"] == pytest.approx(0.75)  # 1 - (0 + 4) / 16


def test_hacking_random_arms_carry_their_clip_fraction():
    cfg = hacking.Config(runs={"true": ["a0"], "random, mu 1": ["a1"], "random, mu 2": ["b0"], "coin": ["b1"],
                               "shuffled": ["b1"]}, random_pair=["random, mu 1", "random, mu 2"])
    arms = {label: [fake_run(r, reward="random" if label == "coin" else "true") for r in rs]
            for label, rs in cfg.runs.items()}
    assert hacking.random_clip(cfg, arms, None, "random, mu 1") == {"clip_frac": 0.1}  # against the base
    assert hacking.random_clip(cfg, arms, "true", "random, mu 2") == {"clip_frac": pytest.approx(0.2)}
    assert hacking.random_clip(cfg, arms, "random, mu 1", "random, mu 2") == pytest.approx(
        {"clip_frac": 0.2, "clip_frac_a": 0.1})  # the random pair
    assert hacking.random_clip(cfg, arms, "true", "coin") == {"clip_frac": pytest.approx(0.3)}  # reward random
    assert hacking.random_clip(cfg, arms, "true", "shuffled") == {}
    assert hacking.random_clip(cfg, arms, None, "true") == {}


def answer(effect=0.03, se=0.005, a=0.2, df=4, **kw) -> dict:
    return {"a": a, "b": a + effect, "effect": effect, "ci_lo": effect - 2.776 * se, "ci_hi": effect + 2.776 * se,
            "se": se, "df": df, "p": 0.01, "mde": 3.7 * se, "seeds": df + 1, "problems": 100, "constant": None,
            "a_label": "A", "b_label": "B", **kw}


def claim(primary="x", **kw) -> claims.Claim:
    return claims.Claim("P", "c", "ablations", primary, 1, **kw)


def test_a_mechanism_below_its_min_takes_the_claim_out_of_the_family():
    answers = {"x": answer(clip_frac_a=0.002)}
    judged = {m: claims.judge_all({"c": claim(mechanism={"key": "clip_frac_a", "min": m, "what": "the clip binds"})},
                                  {"ablations": answers}, 0.01)["c", "hop"] for m in (0.001, 0.002, 0.003)}
    assert judged[0.003]["verdict"] == claims.NOT_TESTABLE and "family" not in judged[0.003]
    assert judged[0.003]["why"] == "mechanism absent: the clip binds 0.002 < 0.003"
    assert judged[0.001]["family"] == judged[0.002]["family"] == 1  # at its min the mechanism acts
    assert judged[0.002]["verdict"] == claims.REPRODUCED


def test_equivalence_rel_sets_the_margin_relative_to_arm_a():
    assert claims.margin(claim(equivalence_rel=0.05), {"a": 0.2}, 0.3) == pytest.approx(0.01)
    assert claims.margin(claim(equivalence_rel=0.05), {"a": -0.2}, 0.3) == pytest.approx(0.01)
    assert claims.margin(claim(equivalence_rel=0.05), None, 0.3) == 0.3  # no answer: the studies' margin
    assert claims.margin(claim(equivalence=0.02), {"a": 0.2}, 0.3) == 0.02
    assert claims.margin(claim(), {"a": 0.2}, 0.3) == 0.3
    # effect 0.03, se 0.005, 4 df. Beyond ±0.01 (0.05 x 0.2): p = 2 t_4.sf(4) = 0.016, reproduced. Beyond ±0.15
    # (0.75 x 0.2) the interval [0.016, 0.044] lies inside: equivalent. The studies' own ±0.05 would leave it
    # undecided at this power.
    rows = claims.judge_all({"rel": claim(equivalence_rel=0.05), "wide": claim(equivalence_rel=0.75)},
                            {"ablations": {"x": answer()}}, 0.05)
    rel, wide = rows["rel", "hop"], rows["wide", "hop"]
    assert rel["equivalence"] == pytest.approx(0.01) and wide["equivalence"] == pytest.approx(0.15)
    assert rel["family"] == 2  # one comparison, two regions: two tests
    assert rel["p_holm"] == pytest.approx(min(1.0, 2 * 2 * sps.t.sf(4.0, 4)))
    assert rel["verdict"] == claims.REPRODUCED and "±0.01" in rel["why"]
    assert wide["verdict"] == claims.NOT_REPRODUCED and wide["why"].startswith("equivalent within ±0.15")
    assert rel["power"] == pytest.approx(stats.power(0.005, 4, 0.1, 0.01, 0.05 / 2))
    plain = claims.judge_all({"abs": claim()}, {"ablations": {"x": answer()}}, 0.05)["abs", "hop"]
    assert plain["verdict"] != claims.REPRODUCED and plain["equivalence"] == 0.05
    # the rules fixed before the run read the same margin: the ceiling's room 1 - 0.96 = 0.04 is within ±0.048
    top = claims.judge_all({"top": claim(equivalence_rel=0.05)}, {"ablations": {"x": answer(a=0.96)}}, 0.01)
    assert top["top", "hop"]["why"].startswith("at the ceiling") and "±0.048" in top["top", "hop"]["why"]


def test_power_script_reads_the_relative_margin(tmp_path):
    path = tmp_path / "ablations" / "answers" / "x.json"
    path.parent.mkdir(parents=True)
    path.write_text(pd.Series(answer(run_sd=0.01, se_run=0.005)).to_json())
    # 0.25 x |0.2| = 0.05, not the studies' default ±0.01
    table, m = power.rows(index.Config(claims={"rel": claim(equivalence_rel=0.25)}), tmp_path, 0.8, 400)
    assert m == 1 and table[0]["power_for"] == "0.1 beyond ±0.05"
    assert table[0]["power at its seeds"] == f"{stats.power(0.005, 4, 0.1, 0.05, 0.05):.2f}"


def test_claims_shaped_like_params_load_a_mechanism_and_a_relative_margin():
    params = yaml.safe_load((Path(__file__).resolve().parents[1] / "params.yaml").read_text())
    params["studies"]["claims"]["dapo_clip"] |= {
        "mechanism": {"key": "clip_frac", "min": 0.001, "what": "the clip binds"}, "equivalence_rel": 0.05}
    c = index.load_config(params).claims["dapo_clip"]
    assert c.mechanism == {"key": "clip_frac", "min": 0.001, "what": "the clip binds"} and c.equivalence_rel == 0.05
    assert yaml.safe_load(yaml.safe_dump({"mechanism": c.mechanism}))["mechanism"] == c.mechanism  # round-trips
    base = {"paper": "P", "claim": "c", "study": "ablations", "primary": "x", "expect": 1}
    assert index.Config(claims={"x": base | {"mechanism": {"key": "clip_frac", "min": 1}}}).claims["x"].mechanism[
        "min"] == 1.0
    for bad, field in (({"equivalence_rel": 0.0}, "equivalence_rel"), ({"equivalence_rel": -0.1}, "equivalence_rel"),
                       ({"equivalence_rel": 0.05, "equivalence": 0.01}, "equivalence_rel"),
                       ({"mechanism": {"key": "clip_frac", "min": "often"}}, "mechanism"),
                       ({"mechanism": {"key": "clip_frac"}}, "mechanism")):
        with pytest.raises(ConfigError, match=field):
            index.Config(claims={"x": base | bad})


def test_an_unknown_extra_key_fails():
    cmp = stats.Comparison(0.5, 0.6, 0.1, 0.0, 0.2, 0.05, 4, 0.1, 0.2, 5, 8)
    with pytest.raises(ValueError, match="clip_fraction"):
        Answer("p", "a", "b", cmp, extra={"clip_fraction": 0.1})
    assert Answer("p", "a", "b", cmp, extra={"clip_frac": 0.1234567}).extra == {"clip_frac": 0.123457}
    # no extra key shadows a key the answer already carries
    assert not set(ANSWER_EXTRA) & (set(stats.ANSWER_KEYS) | set(manifest_answers([Answer("p", "a", "b", cmp)])[0]))


def test_seeds_register_per_task_and_the_index_shows_them():
    base = {"paper": "P", "claim": "c", "study": "passk", "primary": "x", "expect": 1, "tasks": {"chain": "y"}}
    c = index.Config(claims={"x": base | {"seeds": {"hop": 10, "chain": 5}}}).claims["x"]
    assert (c.seeds_on("hop"), c.seeds_on("chain")) == (10, 5)
    assert index.Config(claims={"x": base | {"seeds": 8}}).claims["x"].seeds_on("chain") == 8
    for bad in ({"hop": 10}, {"hop": 10, "chain": 1}, 1):
        with pytest.raises(ConfigError, match="seeds"):
            index.Config(claims={"x": base | {"seeds": bad}})
    rows = claims.judge_all({"x": c}, {"passk": {"x": answer(), "y": answer(df=2)}}, 0.01)
    assert index.seeds_power(rows["x", "chain"]).startswith("3 of 5; ")
    assert index.seeds_power(rows["x", "hop"]).startswith("5 of 10; ")
