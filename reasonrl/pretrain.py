"""Supervised training of base models on streamed problems of their task.

A base is one training phase: a share `trace` of its examples carry the trace (1 = chain of thought,
0 = answer only), from fresh weights or continued from another base's checkpoint (`init`). Standard
bases are one phase from scratch. Mixed bases, for the R1-Zero question, are two phases: first with
half the examples carrying a trace (the lookup skill is learned), then continued with a small share
(thinking becomes rare, but stays correct when it happens); the phase-1 checkpoint is shared by every
phase 2 that starts from it. Training from scratch on a small trace share never learns the lookup.
"""

from __future__ import annotations

import dataclasses
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from tqdm import tqdm

from .config import ConfigError, check
from .model import ModelConfig, TinyReasoner
from .tasks import DEFAULT, Task, distribution, get_task
from .tokens import check_fits, encode_pairs


@dataclass
class Exposure:
    share: float = 0.0  # share of examples drawn from the range below instead (0: none)
    n_range: tuple[int, int] | None = None  # the task's size range of those examples (required when share > 0)
    k_min: int = 1  # ... their smallest difficulty
    k_max: int | None = None  # ... and their largest (null: up to n - 1)

    def __post_init__(self):
        check(0 <= self.share < 1, "share", f"must be in [0, 1), got {self.share}")
        check(self.share == 0 or self.n_range is not None, "n_range", "required when share > 0")

    def spec(self, task: Task) -> dict | None:
        """Its distribution spec of `task`; None without a range."""
        return None if self.n_range is None else distribution(task, self.n_range, self.k_min, self.k_max)


@dataclass
class PhaseConfig:
    steps: int = 1000  # optimizer steps, each on freshly sampled problems
    batch_size: int = 64  # problems per step
    lr: float = 1e-3  # peak AdamW learning rate
    warmup: int = 100  # linear warmup steps
    min_lr_frac: float = 0.1  # cosine decays to this fraction of lr
    weight_decay: float = 0.01  # AdamW weight decay
    grad_clip: float = 1.0  # gradient norm clip
    n_range: tuple[int, int] = (4, 8)  # the task's size range (hop: ring sizes; chain: variables)
    k_max: int | None = None  # largest difficulty (hop count, operation count); null: up to n - 1
    exposure: Exposure = field(default_factory=Exposure)  # a small share of examples beyond the range
    seed: int = 0  # seeds both the weights and the problem stream

    def __post_init__(self):
        check(self.steps >= 1, "steps", f"must be at least 1, got {self.steps}")
        check(self.batch_size >= 1, "batch_size", f"must be at least 1, got {self.batch_size}")
        check(self.lr > 0, "lr", f"must be positive, got {self.lr}")
        check(self.warmup >= 0, "warmup", f"must be >= 0, got {self.warmup}")
        check(0 <= self.min_lr_frac <= 1, "min_lr_frac", f"must be in [0, 1], got {self.min_lr_frac}")
        check(self.grad_clip > 0, "grad_clip", f"must be positive, got {self.grad_clip}")

    def spec(self, task: Task) -> dict:
        return distribution(task, self.n_range, hi=self.k_max)


@dataclass
class BaseConfig:
    task: str = DEFAULT  # a task's name (tasks.names()): what the base learns (a continued base: its init's task)
    trace: float = 1.0  # share of examples whose target carries the trace (1 = cot, 0 = direct)
    init: str | None = None  # continue from models/<init>.pt; null = fresh weights of shape `model`
    model: ModelConfig | None = None  # required when init is null; the checkpoint's own shape otherwise
    train: PhaseConfig = field(default_factory=PhaseConfig)  # the one training phase

    def __post_init__(self):
        check(0 <= self.trace <= 1, "trace", f"must be in [0, 1], got {self.trace}")
        check((self.init is None) != (self.model is None), "model",
              "give `model` for fresh weights (init: null), or `init` to continue a checkpoint, not both")
        task = get_task(self.task)
        for where, spec in (("train", self.train.spec(task)), ("train.exposure", self.train.exposure.spec(task))):
            if spec is not None:
                try:
                    task.check_spec(spec)
                except ConfigError as e:
                    raise e.within(where) from None
        if self.model is not None:  # a continued checkpoint is checked against its own max_len when loaded
            check(self.model.task in (DEFAULT, self.task), "model.task", "give the task as `task:` beside model")
            self.model = dataclasses.replace(self.model, task=self.task, vocab_size=0)
            for spec in (self.train.spec(task), self.train.exposure.spec(task)):  # all but the last token is seen
                if spec is not None:
                    check_fits(self.model.max_len, "model.max_len", task, spec, "cot" if self.trace > 0 else "direct",
                               offset=-1)

    def check_init(self, init: TinyReasoner) -> None:
        """A continued base keeps its init's task and must fit its init's max_len."""
        check(init.cfg.task == self.task, "task", f"{self.task!r}, but models/{self.init}.pt learned "
              f"{init.cfg.task!r}", f"write task: {init.cfg.task}")
        task = get_task(self.task)
        for spec in (self.train.spec(task), self.train.exposure.spec(task)):
            if spec is not None:
                check_fits(init.cfg.max_len, "train.n_range", task, spec,
                           "cot" if self.trace > 0 else "direct", offset=-1)


def lr_at(step: int, cfg: PhaseConfig) -> float:
    """Linear warmup, then cosine decay from lr to min_lr_frac * lr."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    progress = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return cfg.lr * (cfg.min_lr_frac + (1 - cfg.min_lr_frac) * 0.5 * (1 + math.cos(math.pi * progress)))


def masked_loss(model: TinyReasoner, X: torch.Tensor, M: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy over target tokens only."""
    logits = model(X[:, :-1])  # (B, T-1, V)
    nll = F.cross_entropy(logits.transpose(1, 2), X[:, 1:], reduction="none")  # (B, T-1)
    m = M[:, 1:]
    return (nll * m).sum() / m.sum()


def make_pairs(rng: random.Random, batch_size: int, task: Task, cfg: PhaseConfig, p_think: float):
    """Training examples; each is drawn beyond the range with probability cfg.exposure.share, and
    carries its trace with probability p_think (else the answer only)."""
    out, share = [], cfg.exposure.share
    for _ in range(batch_size):
        beyond = share > 0 and rng.random() < share
        p = task.sample(rng, cfg.exposure.spec(task) if beyond else cfg.spec(task))
        think = p_think >= 1 or (p_think > 0 and rng.random() < p_think)
        out.append((p.prompt, p.target("cot" if think else "direct")))
    return out


def optimize(model: torch.nn.Module, cfg, loss_at: Callable[[int], torch.Tensor], desc: str) -> list[list]:
    """The supervised loop of bases and verifiers: AdamW with warmup and cosine decay (`lr_at`), gradient
    clipping and a progress bar. `loss_at(step)` draws the step's batch and returns its loss; `cfg` needs
    steps, lr, warmup, min_lr_frac, weight_decay and grad_clip. Returns the loss curve [[step, loss], ...]
    (every 100 steps and the last)."""
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    curve = []
    model.train()
    bar = tqdm(range(cfg.steps), desc=desc, mininterval=2.0, leave=False)
    for step in bar:
        loss = loss_at(step)
        for g in opt.param_groups:
            g["lr"] = lr_at(step, cfg)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        if step % 100 == 0 or step == cfg.steps - 1:
            curve.append([step, round(loss.item(), 5)])
            bar.set_postfix(loss=f"{loss.item():.4f}", refresh=False)  # a redraw now: a stale count
    model.eval()
    return curve


def train_phase(model: TinyReasoner, cfg: PhaseConfig, p_think: float, desc: str = "train") -> dict:
    """Train `model` in place for one phase; returns a summary (final loss, loss curve) and, under "timing",
    its wall-clock seconds (kept apart: they differ on every rerun)."""
    device = next(model.parameters()).device
    rng = random.Random(cfg.seed)
    t0 = time.perf_counter()

    def loss_at(step: int) -> torch.Tensor:
        pairs = make_pairs(rng, cfg.batch_size, get_task(model.cfg.task), cfg, p_think)
        return masked_loss(model, *encode_pairs(pairs, device))

    curve = optimize(model, cfg, loss_at, desc)
    return {"final_loss": curve[-1][1], "loss_curve": curve,
            "timing": {"seconds": round(time.perf_counter() - t0, 2)}}


def train_base(cfg: BaseConfig, init: TinyReasoner | None = None, device: torch.device | str = "cpu",
               desc: str = "base", where: str = "base") -> tuple[TinyReasoner, dict]:
    """Train one phase: on `init` (the model of cfg.init, trained further in place) or on fresh weights
    seeded by cfg.train.seed. A continued model that does not fit is a ConfigError under `where`."""
    if init is None:  # a fresh model of cfg.model: its task and max_len were checked with the params
        init = TinyReasoner(cfg.model, generator=torch.Generator().manual_seed(cfg.train.seed))
    else:
        try:
            cfg.check_init(init)
        except ConfigError as e:
            raise e.within(where) from None
    model = init.to(device)
    return model, train_phase(model, cfg.train, cfg.trace, desc)
