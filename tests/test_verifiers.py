import pytest
import torch

from reasonrl.config import ConfigError, from_dict
from reasonrl.model import CheckpointError, ModelConfig, load_checkpoint, save_checkpoint
from reasonrl.task import build_problem, make_eval_set
from reasonrl.verifiers import (
    Verifier,
    VerifierConfig,
    load_verifier,
    save_verifier,
    score,
    step_probs,
    step_targets,
    train_verifier,
)

# ring a>b>c>d>e>f>a, start a, k = 3: trace "bcd", answer d
P = build_problem((("a", "b"), ("b", "c"), ("c", "d"), ("d", "e"), ("e", "f"), ("f", "a")), "a", 3)
RESPONSES = ["bcd|d$", "bcde|e$", "bc|c$", "bce|e$", "bcd|b$", "bcdefab", "|d$", "ab$"]
SMALL = ModelConfig(d_model=32, n_heads=2, n_layers=2, max_len=96)


def test_failure_probes_reach_every_type():
    import random

    from reasonrl.evaluate import FAILURE_TYPES, classify
    from reasonrl.task import make_problem
    from reasonrl.verifiers import failure_probes

    rng = random.Random(0)
    for _ in range(300):
        n = rng.randint(2, 16)
        p = make_problem(rng, n, rng.randint(1, min(9, n - 1)))
        probes = failure_probes(p, rng)
        assert list(probes) == list(FAILURE_TYPES)
        assert all(classify(p, r) == t for t, r in probes.items())


def test_step_targets_orm_and_prm():
    # the answer check sits on the answer letter; without a parsable answer, on the last character
    assert step_targets("orm", P, "bcd|d$") == ([4], [1.0])
    assert step_targets("orm", P, "bce|e$") == ([4], [0.0])
    assert step_targets("orm", P, "bcd|dd$") == ([6], [0.0])
    # PRM: one label per trace letter, then the answer check
    assert step_targets("prm_full", P, "bcd|d$") == ([0, 1, 2, 4], [1.0, 1.0, 1.0, 1.0])
    assert step_targets("prm_full", P, "bce|e$") == ([0, 1, 2, 4], [1.0, 1.0, 0.0, 0.0])
    assert step_targets("prm_full", P, "bcde|e$") == ([0, 1, 2, 3, 5], [1.0, 1.0, 1.0, 1.0, 0.0])
    assert step_targets("prm_full", P, "|d$") == ([1], [1.0])
    assert step_targets("prm_full", P, "ab$") == ([0, 1, 2], [0.0, 1.0, 0.0])
    # all trace, never answered: the last step also carries the failed answer check
    assert step_targets("prm_full", P, "bcd") == ([0, 1, 2], [1.0, 1.0, 0.0])


@pytest.mark.parametrize("kind", ["orm", "prm_full"])
def test_scores_are_probabilities_and_deterministic(kind):
    v = Verifier(kind, SMALL, generator=torch.Generator().manual_seed(0))
    probs = [P] * len(RESPONSES)
    s = score(v, probs, RESPONSES)
    assert len(s) == len(RESPONSES) and all(isinstance(x, float) and 0.0 <= x <= 1.0 for x in s)
    assert s == score(v, probs, RESPONSES)  # the same call gives the same floats
    steps = step_probs(v, probs, RESPONSES)
    assert s == [min(ps) for ps in steps]
    assert [len(ps) for ps in steps] == [len(step_targets(kind, P, r)[0]) for r in RESPONSES]
    # a response's score does not depend on what else is in its batch (beyond float rounding)
    assert score(v, probs, RESPONSES, chunk=3) == pytest.approx(s, abs=1e-5)


def test_verifier_checkpoints_are_their_own_format(tmp_path, tiny_model):
    v = Verifier("prm_full", SMALL, generator=torch.Generator().manual_seed(1))
    save_verifier(tmp_path / "v.pt", v, {"name": "prm"})
    w = load_verifier(tmp_path / "v.pt")
    assert w.kind == "prm_full" and w.meta == {"name": "prm"} and not w.training
    assert score(w, [P] * 3, RESPONSES[:3]) == score(v, [P] * 3, RESPONSES[:3])
    save_checkpoint(tmp_path / "policy.pt", tiny_model, {})
    with pytest.raises(CheckpointError, match="not a reasonrl-verifier-v1 file"):
        load_verifier(tmp_path / "policy.pt")
    with pytest.raises(CheckpointError, match="not a reasonrl-checkpoint-v1 file"):
        load_checkpoint(tmp_path / "v.pt")
    data = (tmp_path / "v.pt").read_bytes()
    (tmp_path / "cut.pt").write_bytes(data[: len(data) // 2])
    for name in ("cut.pt", "missing.pt"):
        with pytest.raises(CheckpointError) as e:
            load_verifier(tmp_path / name)
        assert str(tmp_path / name) in str(e.value) and "\n" not in str(e.value)


def test_verifier_config_is_checked():
    with pytest.raises(ConfigError, match="verifiers.orm.kind"):
        from_dict(VerifierConfig, {"kind": "prm"}, "verifiers.orm")
    with pytest.raises(ConfigError, match="verifiers.orm.holdout"):
        from_dict(VerifierConfig, {"holdout": 1.0}, "verifiers.orm")
    with pytest.raises(ConfigError, match="verifiers.orm.step: unknown key"):
        from_dict(VerifierConfig, {"step": 3}, "verifiers.orm")
    cfg = from_dict(VerifierConfig, {"model": None}, "verifiers.orm")
    assert cfg.model is None
    cfg = from_dict(VerifierConfig, {"model": {"d_model": 32, "n_heads": 2}}, "verifiers.orm")
    assert cfg.model.d_model == 32


@pytest.mark.parametrize("kind", ["orm", "prm_full"])
def test_a_few_steps_beat_chance_and_rerun_identically(kind, tiny_model):
    # an untrained base writes garbage, so the correct examples are the gold ones (gold_frac)
    cfg = VerifierConfig(kind=kind, problems=40, samples=4, gold_frac=0.3, holdout=0.25, n_range=(4, 6),
                         k_max=3, steps=25, batch_size=16, lr=3e-3, warmup=2, seed=3)
    v, summary = train_verifier(cfg, tiny_model)
    held = summary["heldout"]
    assert held["examples"] == 40 and summary["data"]["train_examples"] == 120
    assert held["auc"] > 0.5 and held["balanced_acc"] > 0.5
    assert held["by_type"]["correct"]["count"] > 0 and sum(t["count"] for t in held["by_type"].values()) == 40
    assert set(summary["probes"]["mean_score"]) == set(held["by_type"])
    if kind == "prm_full":
        assert 0 <= held["step_acc"] <= 1
    v2, summary2 = train_verifier(cfg, tiny_model)
    assert summary2["heldout"] == held
    probs = make_eval_set(6, 2, 3, seed=0)
    resp = [p.trace + "|" + p.answer + "$" for p in probs]
    assert score(v, probs, resp) == score(v2, probs, resp)


def test_warm_start_copies_the_base_weights(tiny_model):
    from reasonrl.verifiers import new_verifier

    v = new_verifier(VerifierConfig(model=None), tiny_model)
    assert v.cfg == tiny_model.cfg
    assert all(torch.equal(a, b) for a, b in zip(v.trunk.state_dict().values(), tiny_model.state_dict().values()))
    fresh = new_verifier(VerifierConfig(model=ModelConfig(d_model=16, n_heads=2)), tiny_model)
    assert fresh.cfg.d_model == 16
