import pytest
import torch

from reasonrl.checkpoint import load_checkpoint, save_checkpoint
from reasonrl.errors import CheckpointError
from reasonrl.model import ModelConfig, TinyReasoner


def test_forward_shape_and_causality(tiny_model):
    x = torch.randint(1, 33, (3, 20), generator=torch.Generator().manual_seed(0))
    logits = tiny_model(x)
    assert logits.shape == (3, 20, tiny_model.cfg.vocab_size)
    y = x.clone()
    y[:, 10:] = 5  # changing the future must not change the past
    assert torch.equal(tiny_model(y)[:, :10], logits[:, :10])


def test_init_is_seeded():
    cfg = ModelConfig(d_model=32, n_heads=2)
    a = TinyReasoner(cfg, generator=torch.Generator().manual_seed(1))
    b = TinyReasoner(cfg, generator=torch.Generator().manual_seed(1))
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))


def test_save_load_round_trip(tmp_path, tiny_model):
    path = tmp_path / "m.pt"
    save_checkpoint(path, tiny_model, {"name": "x", "summary": {"final_loss": 1.5}})
    model, meta = load_checkpoint(path)
    assert meta == {"name": "x", "summary": {"final_loss": 1.5}}
    # the same model and meta are the same bytes wherever saved (the archive does not carry the file name)
    save_checkpoint(tmp_path / "sub" / "other.pt", tiny_model, {"name": "x", "summary": {"final_loss": 1.5}})
    assert (tmp_path / "sub" / "other.pt").read_bytes() == path.read_bytes()
    assert model.cfg == tiny_model.cfg
    x = torch.randint(1, 33, (2, 12))
    assert torch.equal(model(x), tiny_model(x))
    assert not list(tmp_path.glob(".*tmp"))  # the atomic write left no temp file


def test_bad_checkpoints_give_one_line_errors(tmp_path, tiny_model, monkeypatch):
    monkeypatch.chdir(tmp_path)  # away from the project's dvc.lock: each message's fix would parse it (seconds)
    path = tmp_path / "m.pt"
    save_checkpoint(path, tiny_model, {})
    data = path.read_bytes()
    (tmp_path / "cut.pt").write_bytes(data[: len(data) // 2])
    (tmp_path / "text.pt").write_text("hello")
    torch.save({"weights": torch.zeros(2)}, tmp_path / "foreign.pt")
    for name in ("missing.pt", "cut.pt", "text.pt", "foreign.pt"):
        with pytest.raises(CheckpointError) as e:
            load_checkpoint(tmp_path / name)
        assert str(tmp_path / name) in str(e.value) and "\n" not in str(e.value)


def test_config_validation():
    from reasonrl.config import ConfigError, from_dict

    with pytest.raises(ConfigError, match="m.n_heads"):
        from_dict(ModelConfig, {"d_model": 30, "n_heads": 4}, "m")
    with pytest.raises(ConfigError, match="m.depth: unknown key"):
        from_dict(ModelConfig, {"depth": 3}, "m")
    with pytest.raises(ConfigError, match="m.n_layers: expected an integer"):
        from_dict(ModelConfig, {"n_layers": "2"}, "m")
