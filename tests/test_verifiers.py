import pytest
import torch

from reasonrl.checkpoint import load_checkpoint, save_checkpoint
from reasonrl.config import ConfigError, from_dict
from reasonrl.errors import CheckpointError
from reasonrl.model import ModelConfig, TinyReasoner
from reasonrl.tasks import hop
from reasonrl.tasks.hop import build_problem, make_eval_set
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

    from reasonrl.tasks.hop import FAILURE_TYPES, classify, failure_probes, make_problem

    rng = random.Random(0)
    for _ in range(300):
        n = rng.randint(2, 16)
        p = make_problem(rng, n, rng.randint(1, min(9, n - 1)))
        probes = failure_probes(p, rng)
        assert list(probes) == list(FAILURE_TYPES)
        assert all(classify(p, r) == t for t, r in probes.items())


def test_the_answer_check_sits_on_the_last_character_of_a_longer_answer():
    from dataclasses import dataclass

    from reasonrl.tasks.base import answer_span

    class Words:  # a task whose answers are words: the check must see all of one
        parse_answer = staticmethod(lambda r: answer_span(r) if answer_span(r) in ("odd", "even") else None)

    @dataclass
    class Word:
        answer: str
        task = Words()

        def is_correct(self, response):
            return Words.parse_answer(response) == self.answer

        def step_labels(self, trace):
            return [c == "1" for c in trace]

    assert step_targets("orm", Word("even"), "01|even$") == ([6], [1.0])
    assert step_targets("orm", Word("even"), "01|odd$") == ([5], [0.0])
    assert step_targets("prm_full", Word("odd"), "01|odd$") == ([0, 1, 5], [0.0, 1.0, 1.0])
    assert step_targets("orm", Word("odd"), "01|od$") == ([5], [0.0])  # no parsable answer: the last character


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


def test_verifier_checkpoints_are_their_own_format(tmp_path, tiny_model, monkeypatch):
    monkeypatch.chdir(tmp_path)  # away from the project's dvc.lock: each message's fix would parse it (seconds)
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


# ----------------------------------------------------------------------------- held-out metrics by hand
# The verifier's probabilities are stubbed (step_probs, score), so every number below is worked by hand.

def _stub_probs(monkeypatch, table):
    import reasonrl.verifiers as vmod

    monkeypatch.setattr(vmod, "step_probs", lambda v, problems, responses, chunk=512: [list(table[i]) for i in
                                                                                       range(len(responses))])


class _Kind:
    def __init__(self, kind):
        self.kind = kind


def test_evaluate_verifier_orm_by_hand(monkeypatch):
    from reasonrl.verifiers import Example, evaluate_verifier

    rs = ["bcd|d$", "bcd|d$", "bcde|e$", "bce|e$", "bcd|b$", "bcdefab"]  # correct x2, overshoot, lookup, ...
    _stub_probs(monkeypatch, [[0.9], [0.4], [0.7], [0.2], [0.1], [0.5]])
    out = evaluate_verifier(_Kind("orm"), [Example(P, r, False) for r in rs])
    # hits at 0.5 (0.5 itself says "wrong"): 0.9 yes, 0.4 no, 0.7 no, 0.2 / 0.1 / 0.5 yes
    assert out["examples"] == 6 and out["correct_rate"] == pytest.approx(2 / 6)
    assert out["acc"] == pytest.approx(4 / 6)
    assert out["balanced_acc"] == pytest.approx((1 / 2 + 3 / 4) / 2)
    assert out["auc"] == pytest.approx(6 / 8)  # 0.9 beats all four wrong ones, 0.4 beats 0.2 and 0.1
    assert "step_acc" not in out
    assert out["by_type"] == {"correct": {"count": 2, "mean_score": pytest.approx(0.65)},
                              "overshoot": {"count": 1, "mean_score": pytest.approx(0.7)},
                              "early": {"count": 0, "mean_score": None},
                              "lookup": {"count": 1, "mean_score": pytest.approx(0.2)},
                              "miscopy": {"count": 1, "mean_score": pytest.approx(0.1)},
                              "malformed": {"count": 1, "mean_score": pytest.approx(0.5)}}


def test_evaluate_verifier_prm_by_hand(monkeypatch):
    from reasonrl.verifiers import Example, evaluate_verifier

    # step labels: bcd|d$ [1, 1, 1, 1], bce|e$ [1, 1, 0, 0], bcd (never answered) [1, 1, 0]
    rs = ["bcd|d$", "bce|e$", "bcd"]
    _stub_probs(monkeypatch, [[0.9, 0.8, 0.6, 0.7], [0.9, 0.4, 0.3, 0.5], [0.7, 0.6, 0.2]])
    out = evaluate_verifier(_Kind("prm_full"), [Example(P, r, False) for r in rs])
    assert out["acc"] == 1.0 and out["balanced_acc"] == 1.0 and out["auc"] == 1.0  # scores 0.6, 0.3, 0.2
    assert out["steps"] == 11 and out["wrong_steps"] == 3
    assert out["step_acc"] == pytest.approx(10 / 11)  # only the 0.4 on a right step is wrong (0.5 says "wrong")
    assert out["step_balanced_acc"] == pytest.approx((7 / 8 + 3 / 3) / 2)
    assert out["step_auc"] == pytest.approx(23 / 24)  # the 0.4 loses to the wrong step's 0.5
    assert out["by_type"]["lookup"] == {"count": 1, "mean_score": pytest.approx(0.3)}
    assert out["by_type"]["malformed"] == {"count": 1, "mean_score": pytest.approx(0.2)}
    # one class only: balanced accuracy over the class there is, no AUC, no step balanced accuracy
    _stub_probs(monkeypatch, [[0.9, 0.8, 0.6, 0.4]])
    one = evaluate_verifier(_Kind("prm_full"), [Example(P, "bcd|d$", False)])
    assert one["acc"] == 0.0 and one["balanced_acc"] == 0.0 and one["auc"] is None
    assert one["step_acc"] == 0.75 and one["step_balanced_acc"] is None and one["wrong_steps"] == 0


def test_probe_scores_by_hand(monkeypatch):
    import random

    import reasonrl.verifiers as vmod
    from reasonrl.tasks.hop import FAILURE_TYPES, classify

    value = {"correct": 0.5, "overshoot": 0.8, "early": 0.1, "lookup": 0.2, "miscopy": 0.3, "malformed": 0.0}
    seen = []

    def fake_score(v, problems, responses, chunk=512):
        seen.append(list(responses))
        return [value[classify(p, r)] for p, r in zip(problems, responses)]

    monkeypatch.setattr(vmod, "score", fake_score)
    out = vmod.probe_scores(None, [P, P], seed=5)
    assert out["problems"] == 2 and list(out["mean_score"]) == list(FAILURE_TYPES)
    # one probe of each type per problem, drawn in turn from the seeded stream "probes-<seed>"
    rng = random.Random("probes-5")
    assert seen == [list(hop.failure_probes(P, rng).values()) + list(hop.failure_probes(P, rng).values())]
    assert out["mean_score"] == pytest.approx(value)  # each type scored the same on both problems
    assert out["auc"] == pytest.approx(16 / 20)  # each correct (0.5) beats 8 of the 10 wrong: not the overshoots


def test_make_examples_draws_problems_gold_and_split_by_hand(tiny_model):
    import random

    from reasonrl.tasks.hop import sample_problem
    from reasonrl.verifiers import make_examples

    cfg = VerifierConfig(problems=10, samples=2, gold_frac=0.5, holdout=0.2, n_range=(4, 6), k_max=2, seed=4)
    train, held = make_examples(tiny_model, cfg)
    rng = random.Random("verifier-data-4")  # the problems, then one gold draw per response, in order
    problems = [sample_problem(rng, (4, 6), 2) for _ in range(10)]
    gold = [rng.random() < 0.5 for _ in range(20)]
    examples = train + held
    assert len(train) == 16 and len(held) == 4  # 8 training problems, 2 held out, 2 responses each
    assert [e.problem.prompt for e in examples] == [p.prompt for p in problems for _ in range(2)]
    assert [e.gold for e in examples] == gold and 0 < sum(gold) < 20
    assert all(e.response == e.problem.target("cot") for e in examples if e.gold)
    # the held-out share is at least one problem and leaves at least one for training
    for problems_, holdout, n_held in ((3, 0.1, 1), (3, 0.9, 2), (2, 0.9, 1)):
        cfg = VerifierConfig(problems=problems_, samples=1, holdout=holdout, n_range=(4, 6), k_max=2)
        train, held = make_examples(tiny_model, cfg)
        assert (len(train), len(held)) == (problems_ - n_held, n_held)


def test_make_examples_samples_past_one_progress_chunk(tiny_model):
    from reasonrl.verifiers import make_examples

    # 300 problems: two sampling calls of 256 and 44 problems, all kept
    cfg = VerifierConfig(problems=300, samples=1, holdout=0.5, n_range=(4, 4), k_max=1, seed=0)
    train, held = make_examples(tiny_model, cfg)
    assert len(train) == 150 and len(held) == 150


def test_train_verifier_batches_and_summary(monkeypatch, tiny_model):
    import math

    import reasonrl.verifiers as vmod

    batches = []
    real_batch = vmod._batch

    def spy(kind, problems, responses, device):
        batches.append((kind, [p.is_correct(r) for p, r in zip(problems, responses)]))
        return real_batch(kind, problems, responses, device)

    monkeypatch.setattr(vmod, "_batch", spy)
    cfg = VerifierConfig(kind="orm", problems=12, samples=2, gold_frac=0.3, holdout=0.25, n_range=(4, 6),
                         k_max=2, steps=102, batch_size=5, lr=3e-3, warmup=2, seed=3)
    v, summary = vmod.train_verifier(cfg, tiny_model)
    train_batches = batches[:102]
    assert all(kind == "orm" and len(c) == 5 for kind, c in train_batches)
    # balanced: 3 correct then 2 wrong (the odd one goes to the first class)
    assert all(c == [True] * 3 + [False] * 2 for _, c in train_batches)
    assert set(summary) == {"heldout", "probes", "data", "final_loss", "loss_curve", "timing"}
    train, held = vmod.make_examples(tiny_model, cfg)
    assert summary["data"] == {"train_examples": 18, "train_correct": sum(e.correct for e in train),
                               "train_gold": sum(e.gold for e in train), "heldout_examples": 6}
    assert [s for s, _ in summary["loss_curve"]] == [0, 100, 101]
    assert summary["final_loss"] == summary["loss_curve"][-1][1] != summary["loss_curve"][1][1]
    # the loss is the mean BCE over scored positions: near log 2 for a fresh head
    assert summary["loss_curve"][0][1] == pytest.approx(math.log(2), abs=0.1)
    assert 0 <= summary["timing"]["sample_seconds"] <= summary["timing"]["seconds"]
    held_problems = list({id(e.problem): e.problem for e in held}.values())
    assert summary["probes"]["problems"] == len(held_problems) == 3
    assert summary["probes"] == vmod.probe_scores(v, held_problems, 3)


def test_train_verifier_with_one_class_draws_from_all(monkeypatch, tiny_model):
    import reasonrl.verifiers as vmod

    # an untrained base and no gold: every example is wrong, so batches come from the one pool
    cfg = VerifierConfig(kind="prm_full", problems=6, samples=2, gold_frac=0.0, holdout=0.5, n_range=(4, 6),
                         k_max=2, steps=2, batch_size=4, warmup=0, seed=1)
    v, summary = vmod.train_verifier(cfg, tiny_model)
    assert summary["data"]["train_correct"] == 0 and summary["heldout"]["auc"] is None


def test_load_verifier_errors_name_the_reason(tmp_path):
    import json

    from reasonrl.verifiers import VERIFIER_FORMAT

    v = Verifier("orm", SMALL, generator=torch.Generator().manual_seed(1))
    save_verifier(tmp_path / "v.pt", v, {})
    blob = torch.load(tmp_path / "v.pt", weights_only=True)
    torch.save(blob | {"kind": "xyz"}, tmp_path / "kind.pt")
    with pytest.raises(CheckpointError, match=r"kind\.pt: unknown verifier kind 'xyz'"):
        load_verifier(tmp_path / "kind.pt")
    cfg = json.loads(blob["model_config"])
    torch.save(blob | {"model_config": json.dumps(cfg | {"d_model": 16})}, tmp_path / "size.pt")
    with pytest.raises(CheckpointError) as e:
        load_verifier(tmp_path / "size.pt")
    assert str(e.value).endswith("size.pt: verifier weights do not match the stored config "
                                 "(Error(s) in loading state_dict for Verifier:)")
    long = "k" * 200
    torch.save(blob | {"model_config": json.dumps(cfg | {long: 1})}, tmp_path / "key.pt")
    with pytest.raises(CheckpointError) as e:
        load_verifier(tmp_path / "key.pt")
    reason = str(e.value).split("stored config (")[1]
    assert len(reason) == 121 and reason.endswith("k)")  # the first 120 characters of what Python said
    assert VERIFIER_FORMAT == blob["format"]


def test_verifier_config_checks_each_bound():
    from reasonrl.tasks.hop import MAX_N

    def error(d):
        with pytest.raises(ConfigError) as e:
            from_dict(VerifierConfig, d, "v")
        return str(e.value)

    # every bound is inclusive where the message says so
    from_dict(VerifierConfig, {"problems": 2, "samples": 1, "gold_frac": 1.0, "holdout": 0.5, "n_range": [2, 2],
                               "k_max": 1, "steps": 1, "batch_size": 2, "warmup": 0, "min_lr_frac": 1.0}, "v")
    from_dict(VerifierConfig, {"gold_frac": 0.0, "min_lr_frac": 0.0, "n_range": [MAX_N, MAX_N]}, "v")
    cases = [({"problems": 1}, "problems: must be at least 2 (training and held-out), got 1"),
             ({"samples": 0}, "samples: must be at least 1, got 0"),
             ({"temperature": 0.0}, "temperature: must be positive, got 0.0"),
             ({"gold_frac": 1.5}, "gold_frac: must be in [0, 1], got 1.5"),
             ({"gold_frac": -0.1}, "gold_frac: must be in [0, 1], got -0.1"),
             ({"holdout": 0.0}, "holdout: must be in (0, 1), got 0.0"),
             ({"holdout": 1.0}, "holdout: must be in (0, 1), got 1.0"),
             ({"k_max": 0}, "k_max: must be at least 1, got 0"),
             ({"steps": 0}, "steps: must be at least 1, got 0"),
             ({"batch_size": 1}, "batch_size: must be at least 2, got 1"),
             ({"lr": 0.0}, "lr: must be positive, got 0.0"),
             ({"warmup": -1}, "warmup: must be >= 0, got -1"),
             ({"min_lr_frac": 1.5}, "min_lr_frac: must be in [0, 1], got 1.5"),
             ({"min_lr_frac": -0.1}, "min_lr_frac: must be in [0, 1], got -0.1"),
             ({"grad_clip": 0.0}, "grad_clip: must be positive, got 0.0")]
    for d, message in cases:
        assert error(d) == "v." + message
    # what needs the base (its task's spec, its max_len) is checked against it, before any sampling
    base = TinyReasoner(ModelConfig(d_model=32, n_heads=2, n_layers=1))
    for d, message in [({"n_range": [1, 4]}, f"n_range: need 2 <= lo <= hi <= {MAX_N}, got [1, 4]"),
                       ({"n_range": [5, 4]}, f"n_range: need 2 <= lo <= hi <= {MAX_N}, got [5, 4]"),
                       ({"n_range": [2, MAX_N + 1]}, f"n_range: need 2 <= lo <= hi <= {MAX_N}, got [2, {MAX_N + 1}]"),
                       ({"model": {"d_model": 32, "n_heads": 2, "max_len": 8}}, "model.max_len: 8 is shorter")]:
        with pytest.raises(ConfigError) as e:
            from_dict(VerifierConfig, d, "v").check_base(base, "v")
        assert str(e.value).startswith("v." + message), str(e.value)


def test_verifier_forward_batch_positions_and_init_by_hand():
    from reasonrl.verifiers import _batch

    gen = torch.Generator().manual_seed(2)
    v = Verifier("orm", SMALL, generator=gen)
    w = Verifier("orm", SMALL, generator=torch.Generator().manual_seed(2))  # the generator seeds every weight
    assert all(torch.equal(a, b) for a, b in zip(v.state_dict().values(), w.state_dict().values()))
    X = torch.randint(0, SMALL.vocab_size, (2, SMALL.max_len), generator=gen)  # exactly max_len is allowed
    with torch.no_grad():
        h = v.trunk.embed(X)
        for blk in v.trunk.blocks:
            h = blk(h, torch.arange(X.shape[1]))
        h = v.trunk.ln_f(h)
        value, action = v.value(h).squeeze(-1), v.action(h)
        # position t: value after x_t plus how right x_t is judged from the state before it
        want = torch.cat([value[:, :1], value[:, 1:] + action[:, :-1].gather(-1, X[:, 1:, None]).squeeze(-1)], 1)
        assert torch.allclose(v(X), want, atol=1e-6)
    with pytest.raises(ValueError, match=f"sequence length {SMALL.max_len + 1} exceeds the verifier's max_len"):
        v(torch.zeros(1, SMALL.max_len + 1, dtype=torch.long))
    # scored positions: prompt length + offset; an empty response is judged at the prompt's last character
    X, W, Y = _batch("prm_full", [P, P], ["bce|e$", ""], "cpu")
    n = len(P.prompt)
    assert W[0].nonzero().flatten().tolist() == [n, n + 1, n + 2, n + 4] and W[0].sum() == 4
    assert Y[0, [n, n + 1, n + 2, n + 4]].tolist() == [1.0, 1.0, 0.0, 0.0] and Y[0].sum() == 2
    assert W[1].nonzero().flatten().tolist() == [n - 1] and W[1].sum() == 1 and Y[1].sum() == 0
    assert step_targets("orm", P, "") == ([0], [0.0])
