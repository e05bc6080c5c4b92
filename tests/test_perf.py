"""The fast paths against their plain references: prefix-shared rollouts (same characters, same generator
state)."""

import functools
import random

import pytest
import torch

from reasonrl.model import ModelConfig, TinyReasoner
from reasonrl.pretrain import PhaseConfig, train_phase
from reasonrl.sampling import response_of, sample, sample_groups, sample_reference, sample_responses
from reasonrl.task import make_problem

TOL = 1e-5


def _problems(count, seed=0, n_range=(4, 12), k_max=7):
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        n = rng.randint(*n_range)
        out.append(make_problem(rng, n, rng.randint(1, min(n - 1, k_max))))
    return out


@functools.cache
def _warm():
    """A tiny policy trained a little: it writes `$` (so decoding can stop early) and is right only sometimes."""
    model = TinyReasoner(ModelConfig(d_model=32, n_heads=2, n_layers=2), generator=torch.Generator().manual_seed(0))
    train_phase(model, PhaseConfig(steps=120, batch_size=32, warmup=5, lr=3e-3, n_range=(3, 5)), 1.0)
    return model.eval()


def _gen(seed=5):
    return torch.Generator().manual_seed(seed)


# ----------------------------------------------------------------------------- rollouts


@pytest.mark.parametrize("temperature", [0.0, 1.0, 0.7])
@pytest.mark.parametrize("G", [1, 3, 8])
def test_groups_equal_reference_on_repeated_prompts(tiny_model, temperature, G):
    prompts = [p.prompt for p in _problems(6, seed=G)]
    assert len({len(p) for p in prompts}) > 2  # mixed prompt lengths
    flat = [p for p in prompts for _ in range(G)]
    ga, gb, gc = _gen(), _gen(), _gen()
    ref = sample_reference(tiny_model, flat, 12, temperature, ga)
    assert sample(tiny_model, flat, 12, temperature, gb) == ref
    assert sample_groups(tiny_model, prompts, G, 12, temperature, gc, stop_at_end=False) == ref
    assert torch.equal(ga.get_state(), gc.get_state())


@pytest.mark.parametrize("temperature", [1.0, 0.7, 0.0])
def test_early_stop_keeps_responses_and_generator_state(temperature):
    model = _warm()
    probs = _problems(12, seed=3, n_range=(3, 5), k_max=3)
    prompts = [p.prompt for p in probs]
    G, max_new = 8, 12
    ga, gb = _gen(), _gen()
    full = sample_reference(model, [p for p in prompts for _ in range(G)], max_new, temperature, ga)
    early = sample_groups(model, prompts, G, max_new, temperature, gb)
    assert len(early[0]) < max_new  # every row wrote `$` before the budget ran out: the loop stopped
    assert [response_of(x) for x in early] == [response_of(x) for x in full]
    assert torch.equal(ga.get_state(), gb.get_state())
    assert torch.equal(torch.rand(5, generator=ga), torch.rand(5, generator=gb))


@pytest.mark.parametrize("chunk", [4096, 20, 3])
def test_sample_responses_shared_equals_plain_and_reference(chunk):
    model = _warm()
    probs = _problems(10, seed=4, n_range=(3, 5), k_max=3)
    G, max_new = 4, max(p.k for p in probs) + 5
    ga, gb, gc = _gen(), _gen(), _gen()
    fast = sample_responses(model, probs, G, 1.0, ga, chunk=chunk)
    plain = sample_responses(model, probs, G, 1.0, gb, chunk=chunk, shared=False)
    per = max(1, chunk // G)  # the reference, chunk by chunk of whole groups
    ref = []
    for i in range(0, len(probs), per):
        outs = sample_reference(model, [p.prompt for p in probs[i: i + per] for _ in range(G)], max_new, 1.0, gc)
        ref += [response_of(o) for o in outs]
    assert fast == plain == [ref[i * G:(i + 1) * G] for i in range(len(probs))]
    assert torch.equal(ga.get_state(), gb.get_state()) and torch.equal(ga.get_state(), gc.get_state())
    # the next call on the same generators draws the same, too
    assert sample_responses(model, probs[:3], G, 1.0, ga) == sample_responses(model, probs[:3], G, 1.0, gb,
                                                                             shared=False)


def test_sample_groups_edge_cases(tiny_model):
    assert sample_groups(tiny_model, [], 4, 5) == []
    with pytest.raises(ValueError, match="max_len"):
        sample_groups(tiny_model, ["a" * 90], 2, 10)
    with pytest.raises(ValueError, match="group"):
        sample_groups(tiny_model, ["ab"], 0, 3)
    assert sample_responses(tiny_model, [], 4, 1.0, _gen()) == []
