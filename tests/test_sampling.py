import random

import pytest
import torch

from reasonrl.sampling import response_of, sample, sample_reference, sample_responses
from reasonrl.tasks.hop import sample_problem


def _prompts(count, seed=0):
    rng = random.Random(seed)
    return [sample_problem(rng, (4, 12), 7).prompt for _ in range(count)]


def test_prompts_have_mixed_lengths():
    assert len({len(p) for p in _prompts(24)}) > 3


def test_kv_cache_equals_reference_greedy(tiny_model):
    prompts = _prompts(24)
    assert sample(tiny_model, prompts, 12, 0) == sample_reference(tiny_model, prompts, 12, 0)


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_kv_cache_equals_reference_seeded(tiny_model, temperature):
    prompts = _prompts(24, seed=1)
    a = sample(tiny_model, prompts, 12, temperature, torch.Generator().manual_seed(5))
    b = sample_reference(tiny_model, prompts, 12, temperature, torch.Generator().manual_seed(5))
    assert a == b and all(len(x) == 12 for x in a)
    c = sample(tiny_model, prompts, 12, temperature, torch.Generator().manual_seed(6))
    assert a != c


def test_edge_cases(tiny_model):
    assert sample(tiny_model, [], 5, 0) == [] and sample_reference(tiny_model, [], 5, 0) == []
    with pytest.raises(ValueError, match="max_len"):
        sample(tiny_model, ["a" * 90], 10, 0)
    with pytest.raises(ValueError, match="max_len"):
        sample_reference(tiny_model, ["a" * 90], 10, 0)


def test_response_of():
    assert response_of("ab|b$xyz") == "ab|b$"
    assert response_of("abc") == "abc"
    assert response_of("$a") == "$"


def test_sample_responses_shape(tiny_model):
    rng = random.Random(2)
    probs = [sample_problem(rng, (4, 8)) for _ in range(5)]
    out = sample_responses(tiny_model, probs, 3, 1.0, torch.Generator().manual_seed(0))
    assert len(out) == 5 and all(len(rs) == 3 for rs in out)
    assert all(len(r) <= max(p.k for p in probs) + 5 for rs in out for r in rs)
