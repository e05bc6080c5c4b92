import pytest
import torch

from reasonrl import numerics

numerics.pin(numerics.DEFAULT)  # before any test computes: the tests run the stages' own code paths
torch.set_num_threads(1)


@pytest.fixture
def tiny_model():
    from reasonrl.model import ModelConfig, TinyReasoner

    cfg = ModelConfig(d_model=32, n_heads=2, n_layers=2, max_len=96)
    return TinyReasoner(cfg, generator=torch.Generator().manual_seed(0)).eval()


# The smoke pipeline is the longest file: started first, it runs beside all the others on two workers
# (with `--dist loadfile` the files are handed out in collection order) instead of after them.
LONGEST_FIRST = ("test_pipeline.py",)


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: item.path.name not in LONGEST_FIRST)
