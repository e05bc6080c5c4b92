import pytest
import torch

torch.set_num_threads(1)


@pytest.fixture
def tiny_model():
    from reasonrl.model import ModelConfig, TinyReasoner

    cfg = ModelConfig(d_model=32, n_heads=2, n_layers=2, max_len=96)
    return TinyReasoner(cfg, generator=torch.Generator().manual_seed(0)).eval()
