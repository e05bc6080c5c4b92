"""TinyReasoner: a small pre-LayerNorm decoder-only transformer with rotary positions.

Its log-probs as the RL loss reads them are in logprobs.py, its checkpoint files in checkpoint.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from .config import check
from .tasks import DEFAULT, get_task, vocab_size


@dataclass
class ModelConfig:
    d_model: int = 128  # residual width
    n_heads: int = 4  # attention heads (head size must be even for rotary positions)
    n_layers: int = 3  # transformer blocks
    max_len: int = 96  # longest prompt + response the model can see
    tied_head: bool = True  # output head shares the token embedding
    task: str = DEFAULT  # the task it reads and writes (set from bases.<name>.task, not under model:)
    vocab_size: int = 0  # 0: its task's (tasks.vocab_size); not a param

    def __post_init__(self):
        check(self.d_model > 0, "d_model", f"must be positive, got {self.d_model}")
        check(self.n_heads > 0 and self.d_model % self.n_heads == 0, "n_heads",
              f"must divide d_model={self.d_model}, got {self.n_heads}")
        check((self.d_model // self.n_heads) % 2 == 0, "n_heads", "head size must be even for rotary embedding")
        check(self.n_layers > 0, "n_layers", f"must be positive, got {self.n_layers}")
        check(self.max_len > 1, "max_len", f"must be at least 2, got {self.max_len}")
        need = vocab_size(get_task(self.task))
        self.vocab_size = self.vocab_size or need
        check(self.vocab_size >= need, "vocab_size", f"must be at least {need} (task {self.task})")


class Rotary(nn.Module):
    """Rotary position embedding over interleaved pairs of head dimensions.

    A pair (x1, x2) is the complex number x1 + i x2, and the rotation is one complex multiply by
    exp(i * angle): (x1 cos - x2 sin, x1 sin + x2 cos)."""

    def __init__(self, head_dim: int, max_len: int, base: float = 10000.0):
        super().__init__()
        inv = 1.0 / base ** (torch.arange(0, head_dim, 2).float() / head_dim)
        ang = torch.outer(torch.arange(max_len).float(), inv)  # (max_len, head_dim/2)
        self.register_buffer("turn", torch.polar(torch.ones_like(ang), ang), persistent=False)

    def rotate(self, x: torch.Tensor, turn: torch.Tensor) -> torch.Tensor:
        """x (..., hd) real rotated by turn (..., hd/2) complex, broadcast against x's pairs."""
        z = torch.view_as_complex(x.float().unflatten(-1, (-1, 2)))
        return torch.view_as_real(z * turn).flatten(-2).to(x.dtype)

    def forward(self, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        # x: (B, H, T, hd); pos: (T,) shared by all rows, or (B, T) per row
        turn = self.turn[pos]
        if pos.dim() == 2:
            turn = turn[:, None]  # (B, 1, T, hd/2)
        return self.rotate(x, turn)


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.n_heads, self.d_model = cfg.n_heads, cfg.d_model
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.mlp = nn.Sequential(nn.Linear(cfg.d_model, 4 * cfg.d_model), nn.GELU(),
                                 nn.Linear(4 * cfg.d_model, cfg.d_model))
        self.rope = Rotary(cfg.d_model // cfg.n_heads, cfg.max_len)

    def layer(self, x: torch.Tensor, heads: Callable, attend: Callable, merge: Callable) -> torch.Tensor:
        """The block's maths, on residual rows x (..., D) in any layout: heads(qkv) gives the rotated queries,
        keys and values, attend(q, k, v) the attention output, merge(att) puts it back in x's layout. The
        training forward, the packed forward and both KV-cache decoders differ only in these three."""
        return self.feed_forward(self.attention(x, heads, attend, merge))

    def attention(self, x: torch.Tensor, heads: Callable, attend: Callable, merge: Callable) -> torch.Tensor:
        """The block's first half, attention and its residual (`layer` for the arguments)."""
        q, k, v = heads(self.qkv(self.ln1(x)))
        return x + self.proj(merge(attend(q, k, v)))

    def feed_forward(self, x: torch.Tensor) -> torch.Tensor:
        """The block's second half, the MLP and its residual."""
        return x + self.mlp(self.ln2(x))

    def split_heads(self, qkv: torch.Tensor, pos: torch.Tensor):
        """qkv (B, T, 3D) -> rotated queries and keys, and values, each (B, H, T, hd); pos (T,) or (B, T)."""
        B, T, D3 = qkv.shape
        q, k, v = qkv.split(D3 // 3, dim=-1)
        q, k, v = (t.view(B, T, self.n_heads, D3 // 3 // self.n_heads).transpose(1, 2) for t in (q, k, v))
        return self.rope(q, pos), self.rope(k, pos), v

    def packed_heads(self, qkv: torch.Tensor, pos: torch.Tensor):
        """qkv (n, 3D) of n tokens at positions pos (n,) -> rotated queries and keys, and values, each (n, H, hd)."""
        n, D3 = qkv.shape
        q, k, v = qkv.view(n, 3, self.n_heads, D3 // 3 // self.n_heads).unbind(1)
        turn = self.rope.turn[pos][:, None]  # (n, 1, hd/2)
        return self.rope.rotate(q, turn), self.rope.rotate(k, turn), v

    def forward(self, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        # x: (B, T, D) -> (B, T, D), causal over T
        return self.layer(x, lambda qkv: self.split_heads(qkv, pos), causal_attention, merge_heads(x.shape))


def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def merge_heads(shape: torch.Size) -> Callable[[torch.Tensor], torch.Tensor]:
    """Attention output (B, H, T, hd) -> rows (B, T, D) of the residual stream of that shape."""
    B, T, D = shape
    return lambda att: att.transpose(1, 2).reshape(B, T, D)


class TinyReasoner(nn.Module):
    def __init__(self, cfg: ModelConfig, generator: torch.Generator | None = None):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        if cfg.tied_head:
            self.head.weight = self.embed.weight
        # initial weights come from the generator passed in, never from torch's global RNG
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02, generator=generator)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        # idx: (B, T) token ids -> logits (B, T, V)
        T = idx.shape[1]
        if T > self.cfg.max_len:
            raise ValueError(f"sequence length {T} exceeds max_len={self.cfg.max_len}")
        pos = torch.arange(T, device=idx.device)
        x = self.embed(idx)
        for blk in self.blocks:
            x = blk(x, pos)
        return self.head(self.ln_f(x))
