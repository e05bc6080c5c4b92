"""Supervised training of base models on streamed hop-world problems.

Standard bases learn one target format (`cot` or `direct`). Mixed bases, for the R1-Zero question,
train in two phases: first with a fraction p_think of examples carrying a trace (the lookup skill is
learned), then continued with a small fraction (thinking becomes rare, but stays correct when it
happens). Training from scratch on a small trace fraction never learns the lookup at all.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field
from typing import Literal

import torch
import torch.nn.functional as F
from tqdm import tqdm

from .config import check
from .model import ModelConfig, TinyReasoner
from .pipeline import check_fits
from .task import ANSWER_MARK, END, PAD_ID, encode, sample_problem


@dataclass
class PhaseConfig:
    steps: int = 1000  # optimizer steps, each on freshly sampled problems
    batch_size: int = 64  # problems per step
    lr: float = 1e-3  # peak AdamW learning rate
    warmup: int = 100  # linear warmup steps
    min_lr_frac: float = 0.1  # cosine decays to this fraction of lr
    weight_decay: float = 0.01  # AdamW weight decay
    grad_clip: float = 1.0  # gradient norm clip
    n_range: tuple[int, int] = (4, 8)  # ring sizes of training problems (k uniform in 1..n-1)
    seed: int = 0  # seeds both the weights and the problem stream

    def __post_init__(self):
        check(self.steps >= 1, "steps", f"must be at least 1, got {self.steps}")
        check(self.batch_size >= 1, "batch_size", f"must be at least 1, got {self.batch_size}")
        check(self.lr > 0, "lr", f"must be positive, got {self.lr}")
        check(self.warmup >= 0, "warmup", f"must be >= 0, got {self.warmup}")
        check(0 <= self.min_lr_frac <= 1, "min_lr_frac", f"must be in [0, 1], got {self.min_lr_frac}")
        check(self.grad_clip > 0, "grad_clip", f"must be positive, got {self.grad_clip}")
        lo, hi = self.n_range
        check(2 <= lo <= hi <= 16, "n_range", f"need 2 <= lo <= hi <= 16, got {list(self.n_range)}")


@dataclass
class BaseConfig:
    mode: Literal["cot", "direct"] = "cot"  # cot: target = trace|answer$ ; direct: target = |answer$
    model: ModelConfig = field(default_factory=ModelConfig)  # the architecture
    train: PhaseConfig = field(default_factory=PhaseConfig)  # the one training phase

    def __post_init__(self):
        hi = self.train.n_range[1]  # the model sees prompt + target but its last token
        check_fits(self.model.max_len, "model.max_len", hi, hi - 1, self.mode, offset=-1)


@dataclass
class MixedConfig:
    p1: float = 0.5  # trace fraction in phase 1
    p2: float | None = None  # trace fraction in phase 2; null = no phase 2
    model: ModelConfig = field(default_factory=ModelConfig)  # the architecture
    stage1: PhaseConfig = field(default_factory=lambda: PhaseConfig(steps=2000))  # phase 1 (trace fraction p1)
    stage2: PhaseConfig = field(  # phase 2 (trace fraction p2), continuing from phase 1's weights
        default_factory=lambda: PhaseConfig(steps=1000, lr=3e-4, warmup=20, seed=11))

    def __post_init__(self):
        check(0 <= self.p1 <= 1, "p1", f"must be in [0, 1], got {self.p1}")
        check(self.p2 is None or 0 <= self.p2 <= 1, "p2", f"must be null or in [0, 1], got {self.p2}")
        hi = max(self.stage1.n_range[1], self.stage2.n_range[1] if self.p2 is not None else 2)
        response = "cot" if self.p1 or self.p2 else "direct"
        check_fits(self.model.max_len, "model.max_len", hi, hi - 1, response, offset=-1)


def lr_at(step: int, cfg: PhaseConfig) -> float:
    """Linear warmup, then cosine decay from lr to min_lr_frac * lr."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    progress = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return cfg.lr * (cfg.min_lr_frac + (1 - cfg.min_lr_frac) * 0.5 * (1 + math.cos(math.pi * progress)))


def encode_pairs(pairs: list[tuple[str, str]], device="cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """(X, M): prompt+target ids right-padded (B, T); M (B, T) is 1 on target tokens only."""
    seqs = [encode(p + t) for p, t in pairs]
    T = max(len(s) for s in seqs)
    X = torch.full((len(seqs), T), PAD_ID, dtype=torch.long)
    M = torch.zeros(len(seqs), T)
    for i, ((p, _), s) in enumerate(zip(pairs, seqs)):
        X[i, : len(s)] = torch.tensor(s)
        M[i, len(p): len(s)] = 1.0
    return X.to(device), M.to(device)


def masked_loss(model: TinyReasoner, X: torch.Tensor, M: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy over target tokens only."""
    logits = model(X[:, :-1])  # (B, T-1, V)
    nll = F.cross_entropy(logits.transpose(1, 2), X[:, 1:], reduction="none")  # (B, T-1)
    m = M[:, 1:]
    return (nll * m).sum() / m.sum()


def make_pairs(rng: random.Random, batch_size: int, n_range: tuple[int, int], p_think: float):
    """Training examples; each carries its trace with probability p_think (else answer only)."""
    out = []
    for _ in range(batch_size):
        p = sample_problem(rng, n_range)
        trace = p.trace if p_think >= 1 or (p_think > 0 and rng.random() < p_think) else ""
        out.append((p.prompt, trace + ANSWER_MARK + p.answer + END))
    return out


def train_phase(model: TinyReasoner, cfg: PhaseConfig, p_think: float, desc: str = "train") -> dict:
    """Train `model` in place for one phase; returns a summary (final loss, loss curve, seconds)."""
    device = next(model.parameters()).device
    rng = random.Random(cfg.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    curve, t0 = [], time.perf_counter()
    model.train()
    bar = tqdm(range(cfg.steps), desc=desc, mininterval=2.0, leave=False)
    for step in bar:
        X, M = encode_pairs(make_pairs(rng, cfg.batch_size, cfg.n_range, p_think), device)
        loss = masked_loss(model, X, M)
        for g in opt.param_groups:
            g["lr"] = lr_at(step, cfg)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        if step % 100 == 0 or step == cfg.steps - 1:
            curve.append([step, round(loss.item(), 5)])
            bar.set_postfix(loss=f"{loss.item():.4f}")
    model.eval()
    return {"final_loss": curve[-1][1], "loss_curve": curve, "seconds": round(time.perf_counter() - t0, 2)}


def train_base(cfg: BaseConfig, device: torch.device | str = "cpu", desc: str = "base") -> tuple[TinyReasoner, dict]:
    """A standard base: `cot` trains on full traces, `direct` on answers only."""
    model = TinyReasoner(cfg.model, generator=torch.Generator().manual_seed(cfg.train.seed)).to(device)
    summary = train_phase(model, cfg.train, 1.0 if cfg.mode == "cot" else 0.0, desc)
    return model, summary


def train_mixed(cfg: MixedConfig, device: torch.device | str = "cpu", desc: str = "mixed") -> tuple[TinyReasoner, dict]:
    """A two-phase mixed base (phase 2 only when p2 is not null)."""
    model = TinyReasoner(cfg.model, generator=torch.Generator().manual_seed(cfg.stage1.seed)).to(device)
    s1 = train_phase(model, cfg.stage1, cfg.p1, f"{desc} phase 1")
    summary = {"stage1": s1, "seconds": s1["seconds"]}
    if cfg.p2 is not None:
        s2 = train_phase(model, cfg.stage2, cfg.p2, f"{desc} phase 2")
        summary["stage2"] = s2
        summary["seconds"] = round(s1["seconds"] + s2["seconds"], 2)
    return model, summary
