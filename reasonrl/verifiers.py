"""Learned verifiers: an outcome reward model (ORM) and a process reward model (PRM).

Both are a TinyReasoner trunk with a one-logit head at every position, reading prompt + response:

- ORM (`orm`): trained on the logit at the answer's last character (the response's last character when
  there is no parsable answer); the label is whether the answer is correct. Its score is P(correct).
- PRM (`prm_full`): trained on every step label: at each trace character, "was this lookup right
  given the previous letter" (`Problem.step_labels`); then the answer check, as the ORM's. Its score is
  the minimum of these step probabilities.

Training data are responses sampled from a base model on problems of the RL distribution, labelled
by ground truth, optionally mixed with a fraction of gold responses (so a weak base still yields
correct examples). The sampling temperature is a parameter: a strong base at temperature 1 almost
never makes a wrong lookup, and a verifier that never saw one believes them all. Batches draw
correct and wrong responses in equal numbers, so both classes are learned whatever the base's
accuracy. Problems are split into a training and a held-out part; the held-out part gives accuracy,
AUC and the mean score per outcome type; hand-built responses of every type on the held-out problems
(`probe_scores`) show which wrong answers the verifier believes: the seed of reward hacking.

    v = load_verifier(path); scores = score(v, problems, responses)   # one float in [0, 1] each
"""

from __future__ import annotations

import dataclasses
import json
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import torch
import torch.nn as nn
import torch.nn.functional as F
from tqdm import tqdm

from .checkpoint import load_blob, save_blob
from .config import ConfigError, check
from .errors import CheckpointError
from .evaluate import auc
from .model import ModelConfig, TinyReasoner
from .pretrain import optimize
from .sampling import sample_responses
from .tasks import DEFAULT, Problem, Task, distribution, get_task, trace_of
from .tokens import check_fits, encode_pairs

VERIFIER_FORMAT = "reasonrl-verifier-v1"
KINDS = ("orm", "prm_full")


@dataclass
class VerifierConfig:
    kind: Literal["orm", "prm_full"] = "orm"  # orm: the answer check only | prm_full: every trace step, then it
    task: str = DEFAULT  # its base's task (dvc.yaml depends on that task's module by it)
    init: str = "cot"  # base whose samples are the training data
    model: ModelConfig | None = None  # null: the trunk starts from the base's architecture and weights
    problems: int = 3000  # problems drawn from the RL distribution (training + held-out)
    samples: int = 8  # responses sampled per problem
    temperature: float = 1.0  # sampling temperature of the training data (1: the distribution RL samples)
    gold_frac: float = 0.0  # share of examples replaced by the gold response
    holdout: float = 0.2  # share of problems held out for the metrics
    n_range: tuple[int, int] = (15, 16)  # the spec of its base's task: sizes of the problems (hop: the edge rings)
    k_max: int = 7  # ... and the largest difficulty
    steps: int = 600  # optimizer steps
    batch_size: int = 64  # responses per step, half correct and half wrong
    lr: float = 1e-3  # peak AdamW learning rate
    warmup: int = 50  # linear warmup steps
    min_lr_frac: float = 0.1  # cosine decay ends at this fraction of lr
    weight_decay: float = 0.01  # AdamW weight decay
    grad_clip: float = 1.0  # gradient norm clip
    seed: int = 0  # seeds the problems, the samples, the head and the batches

    def spec(self, task: Task) -> dict:
        """The distribution its problems are drawn from, as the task reads it."""
        return distribution(task, self.n_range, hi=self.k_max)

    def __post_init__(self):
        check(self.problems >= 2, "problems", f"must be at least 2 (training and held-out), got {self.problems}")
        check(self.samples >= 1, "samples", f"must be at least 1, got {self.samples}")
        check(self.temperature > 0, "temperature", f"must be positive, got {self.temperature}")
        check(0 <= self.gold_frac <= 1, "gold_frac", f"must be in [0, 1], got {self.gold_frac}")
        check(0 < self.holdout < 1, "holdout", f"must be in (0, 1), got {self.holdout}")
        check(self.k_max >= 1, "k_max", f"must be at least 1, got {self.k_max}")
        check(self.steps >= 1, "steps", f"must be at least 1, got {self.steps}")
        check(self.batch_size >= 2, "batch_size", f"must be at least 2, got {self.batch_size}")
        check(self.lr > 0, "lr", f"must be positive, got {self.lr}")
        check(self.warmup >= 0, "warmup", f"must be >= 0, got {self.warmup}")
        check(0 <= self.min_lr_frac <= 1, "min_lr_frac", f"must be in [0, 1], got {self.min_lr_frac}")
        check(self.grad_clip > 0, "grad_clip", f"must be positive, got {self.grad_clip}")

    def check_base(self, base: TinyReasoner, where: str) -> None:
        """The checks that need its base, as errors under `where`: the task is the base's, the spec is in
        its range, and the trunk holds its sequences."""
        task = get_task(self.task, f"{where}.task")
        check(base.cfg.task == self.task, f"{where}.task", f"{self.task!r}, but base_{self.init} learned "
              f"{base.cfg.task!r}", f"write task: {base.cfg.task}")
        try:
            task.check_spec(self.spec(task))
            check_fits((self.model or base.cfg).max_len, "model.max_len" if self.model else "init", task,
                       self.spec(task), "sampled")
        except ConfigError as e:
            raise e.within(where) from None


class Verifier(nn.Module):
    """A TinyReasoner trunk (its LM head unused) and a head giving one logit per position.

    The logit at position t is value(h_t) + action(h_{t-1})[x_t]: what the state after x_t says, plus
    how right the character x_t is judged from the state before it. The second term reads the
    trunk's next-character knowledge directly (a lookup is checked where it was made), which a
    2-layer trunk could otherwise only reach through one more attention hop."""

    def __init__(self, kind: str, cfg: ModelConfig, generator: torch.Generator | None = None):
        super().__init__()
        if kind not in KINDS:
            raise ValueError(f"kind={kind!r}: must be one of {KINDS}")
        self.kind = kind
        self.trunk = TinyReasoner(cfg, generator=generator)
        self.value = nn.Linear(cfg.d_model, 1)
        self.action = nn.Linear(cfg.d_model, cfg.vocab_size)
        for lin in (self.value, self.action):
            nn.init.normal_(lin.weight, std=0.02, generator=generator)
            nn.init.zeros_(lin.bias)

    @property
    def cfg(self) -> ModelConfig:
        return self.trunk.cfg

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        # X: (B, T) token ids -> (B, T) logits; position t has seen tokens 0..t only
        T = X.shape[1]
        if T > self.cfg.max_len:
            raise ValueError(f"sequence length {T} exceeds the verifier's max_len={self.cfg.max_len}")
        pos = torch.arange(T, device=X.device)
        h = self.trunk.embed(X)
        for blk in self.trunk.blocks:
            h = blk(h, pos)
        h = self.trunk.ln_f(h)  # (B, T, D)
        out = self.value(h).squeeze(-1)  # (B, T)
        judged = self.action(h[:, :-1]).gather(-1, X[:, 1:, None]).squeeze(-1)  # (B, T-1): x_t judged at t-1
        return torch.cat([out[:, :1], out[:, 1:] + judged], dim=1)


# ---------------------------------------------------------------------------------------------
# Labels


def step_targets(kind: str, problem: Problem, response: str) -> tuple[list[int], list[float]]:
    """(offsets into the response, labels) of the positions a verifier of `kind` is trained and scored on.

    ORM: the answer check: the answer's last character (or, when there is no parsable answer, the
    response's last character), labelled by correctness. PRM: each trace character with its step label,
    then the answer check."""
    # On the answer's last character a causal verifier has read the whole answer, of any length; and
    # `trace|answer$` is parsable only with `$` right after it, so nothing later matters.
    answer = problem.task.parse_answer(response)
    last = len(trace_of(response)) + len(answer) if answer is not None else max(len(response) - 1, 0)
    final = float(problem.is_correct(response))
    if kind == "orm":
        return [last], [final]
    trace = trace_of(response)
    offsets = list(range(len(trace)))
    labels = [float(ok) for ok in problem.step_labels(trace)]
    if not offsets or offsets[-1] != last:
        offsets.append(last)
        labels.append(final)
    else:  # a response that is all trace (no `|`, no `$`): its last step also carries the answer check
        labels[-1] = min(labels[-1], final)
    return offsets, labels


def _batch(kind: str, problems: list[Problem], responses: list[str], device) -> tuple:
    """(X (B, T), W (B, T) 1 on scored positions, Y (B, T) their labels)."""
    X, _ = encode_pairs([(p.prompt, r) for p, r in zip(problems, responses)], device)
    W = torch.zeros(X.shape, device=device)
    Y = torch.zeros(X.shape, device=device)
    for i, (p, r) in enumerate(zip(problems, responses)):
        offsets, labels = step_targets(kind, p, r)
        # an empty response is judged at the prompt's last character
        pos = [len(p.prompt) + o - (0 if r else 1) for o in offsets]
        W[i, pos] = 1.0
        Y[i, pos] = torch.tensor(labels, device=device)
    return X, W, Y


# ---------------------------------------------------------------------------------------------
# Scoring


@torch.inference_mode()
def step_probs(verifier: Verifier, problems: list[Problem], responses: list[str],
               chunk: int = 512) -> list[list[float]]:
    """Per response, the probabilities at its scored positions (see step_targets), in order."""
    if len(problems) != len(responses):
        raise ValueError(f"problems ({len(problems)}) and responses ({len(responses)}) differ in length")
    was_training = verifier.training
    verifier.eval()
    device = next(verifier.parameters()).device
    out: list[list[float]] = []
    for i in range(0, len(problems), chunk):
        X, W, _ = _batch(verifier.kind, problems[i: i + chunk], responses[i: i + chunk], device)
        P = torch.sigmoid(verifier(X).float()).cpu()  # (B, T)
        W = W.cpu().bool()
        out += [P[j][W[j]].tolist() for j in range(len(P))]
    verifier.train(was_training)
    return out


def score(verifier: Verifier, problems: list[Problem], responses: list[str], chunk: int = 512) -> list[float]:
    """One score in [0, 1] per (problem, response): ORM P(correct); PRM the minimum step probability,
    the answer check being the last step. Deterministic: the same call gives the same floats."""
    return [min(ps) for ps in step_probs(verifier, problems, responses, chunk)]


# ---------------------------------------------------------------------------------------------
# Checkpoints


def save_verifier(path: str | Path, verifier: Verifier, meta: dict) -> None:
    """Write weights, kind, config and `meta` (JSON-able) atomically, in the verifier format."""
    blob = {"format": VERIFIER_FORMAT, "kind": verifier.kind, "model_config": json.dumps(asdict(verifier.cfg)),
            "meta": json.dumps(meta), "state_dict": {k: v.detach().cpu() for k, v in verifier.state_dict().items()}}
    save_blob(path, blob)


def load_verifier(path: str | Path, device: str | torch.device = "cpu") -> Verifier:
    """A verifier in eval mode on `device` (its meta dict as `.meta`); a policy checkpoint or a broken
    file is one CheckpointError naming the path. Loads with weights_only=True, never unpickling code."""
    blob = load_blob(path, VERIFIER_FORMAT)
    if blob.get("kind") not in KINDS:
        raise CheckpointError(f"{path}: unknown verifier kind {blob.get('kind')!r}")
    try:
        verifier = Verifier(blob["kind"], ModelConfig(**json.loads(blob["model_config"])))
        verifier.load_state_dict(blob["state_dict"])
        verifier.meta = json.loads(blob["meta"])
    except (RuntimeError, TypeError, ValueError, KeyError) as e:
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise CheckpointError(f"{path}: verifier weights do not match the stored config ({reason[:120]})") from None
    return verifier.to(device).eval()


# ---------------------------------------------------------------------------------------------
# Data and training


@dataclass
class Example:
    problem: Problem
    response: str
    gold: bool  # the gold response rather than a sample

    @property
    def correct(self) -> bool:
        return self.problem.is_correct(self.response)


def make_examples(base, cfg: VerifierConfig) -> tuple[list[Example], list[Example]]:
    """(training, held-out) examples: cfg.samples responses per problem sampled from `base`, some
    replaced by the gold response (gold_frac); problems, not responses, are split."""
    rng = random.Random(f"verifier-data-{cfg.seed}")
    task = get_task(base.cfg.task)
    spec = cfg.spec(task)
    problems = [task.sample(rng, spec) for _ in range(cfg.problems)]
    device = next(base.parameters()).device
    gen = torch.Generator(device=device).manual_seed(cfg.seed)
    responses: list[list[str]] = []
    step = 256  # problems per sampling call, for the progress bar
    for i in tqdm(range(0, len(problems), step), desc="sample", mininterval=2.0, leave=False):
        responses += sample_responses(base, problems[i: i + step], cfg.samples, cfg.temperature, gen)
    examples = []
    for p, rs in zip(problems, responses):
        rows = []
        for r in rs:
            gold = rng.random() < cfg.gold_frac
            rows.append(Example(p, p.target("cot") if gold else r, gold))
        examples.append(rows)
    n_held = min(max(1, round(cfg.holdout * cfg.problems)), cfg.problems - 1)
    train = [e for rows in examples[:-n_held] for e in rows]
    held = [e for rows in examples[-n_held:] for e in rows]
    return train, held


def new_verifier(cfg: VerifierConfig, base: TinyReasoner) -> Verifier:
    """A fresh verifier: a new trunk of size cfg.model, or (model: null) a copy of the base's weights."""
    gen = torch.Generator().manual_seed(cfg.seed)
    trunk = dataclasses.replace(cfg.model, task=base.cfg.task, vocab_size=0) if cfg.model else base.cfg
    verifier = Verifier(cfg.kind, trunk, generator=gen)
    if cfg.model is None:
        verifier.trunk.load_state_dict(base.state_dict())
    return verifier


def train_verifier(cfg: VerifierConfig, base: TinyReasoner, device: torch.device | str = "cpu",
                   desc: str = "verifier", where: str = "verifier") -> tuple[Verifier, dict]:
    """Sample and label data from `base`, train a verifier on balanced batches, evaluate it on the
    held-out problems. Returns (verifier in eval mode, summary with the held-out metrics and, under
    "timing", the wall-clock seconds, which differ on every rerun)."""
    cfg.check_base(base, where)
    t0 = time.perf_counter()
    base = base.to(device).eval()
    train, held = make_examples(base, cfg)
    sample_seconds = time.perf_counter() - t0
    verifier = new_verifier(cfg, base).to(device)
    pools = [[e for e in train if e.correct], [e for e in train if not e.correct]]
    if not all(pools):  # one class missing: nothing to balance, draw from what there is
        pools = [train]
    gen = torch.Generator().manual_seed(cfg.seed + 1)

    def loss_at(step: int) -> torch.Tensor:
        batch = []
        for j, pool in enumerate(pools):  # an equal share of the batch from each class
            size = cfg.batch_size // len(pools) + (j < cfg.batch_size % len(pools))
            batch += [pool[int(i)] for i in torch.randint(len(pool), (size,), generator=gen)]
        X, W, Y = _batch(cfg.kind, [e.problem for e in batch], [e.response for e in batch], device)
        logits = verifier(X)  # (B, T)
        return (F.binary_cross_entropy_with_logits(logits, Y, reduction="none") * W).sum() / W.sum()

    curve = optimize(verifier, cfg, loss_at, desc)
    held_problems = list({id(e.problem): e.problem for e in held}.values())
    summary = {"heldout": evaluate_verifier(verifier, held), "probes": probe_scores(verifier, held_problems, cfg.seed),
               "data": {"train_examples": len(train), "train_correct": sum(e.correct for e in train),
                        "train_gold": sum(e.gold for e in train), "heldout_examples": len(held)},
               "final_loss": curve[-1][1], "loss_curve": curve,
               "timing": {"sample_seconds": round(sample_seconds, 2), "seconds": round(time.perf_counter() - t0, 2)}}
    return verifier, summary


def probe_scores(verifier: Verifier, problems: list[Problem], seed: int = 0) -> dict:
    """Mean score per outcome type on hand-built responses (one of each type per problem), and the AUC
    of correct against all wrong ones: which wrong answers the verifier believes."""
    rng = random.Random(f"probes-{seed}")
    rows = [(p, t, r) for p in problems for t, r in p.task.probes(p, rng).items()]
    scores = score(verifier, [p for p, _, _ in rows], [r for _, _, r in rows])
    out = {t: sum(s for s, (_, u, _) in zip(scores, rows) if u == t) / len(problems)
           for t in problems[0].task.failure_types}
    return {"mean_score": out, "auc": auc(scores, [t == "correct" for _, t, _ in rows]), "problems": len(problems)}


def evaluate_verifier(verifier: Verifier, examples: list[Example]) -> dict:
    """Held-out quality: accuracy at threshold 0.5, balanced accuracy, AUC of the response score, the
    mean score and count per outcome type; for a PRM also the accuracy over all step labels."""
    problems, responses = [e.problem for e in examples], [e.response for e in examples]
    probs = step_probs(verifier, problems, responses)
    scores = [min(ps) for ps in probs]
    labels = [e.correct for e in examples]
    hits = [(s > 0.5) == y for s, y in zip(scores, labels)]
    by_class = [[h for h, y in zip(hits, labels) if y == c] for c in (True, False)]
    kinds = [p.classify(r) for p, r in zip(problems, responses)]
    out = {"examples": len(examples), "correct_rate": sum(labels) / len(labels),
           "acc": sum(hits) / len(hits),
           "balanced_acc": sum(sum(h) / len(h) for h in by_class if h) / sum(1 for h in by_class if h),
           "auc": auc(scores, labels)}
    if verifier.kind == "prm_full":
        pairs = [(p, y) for e, ps in zip(examples, probs)
                 for p, y in zip(ps, step_targets("prm_full", e.problem, e.response)[1])]
        out["step_acc"] = sum((p > 0.5) == (y > 0.5) for p, y in pairs) / len(pairs)
        right = [p > 0.5 for p, y in pairs if y > 0.5]
        wrong = [p <= 0.5 for p, y in pairs if y < 0.5]
        out["step_balanced_acc"] = (sum(right) / len(right) + sum(wrong) / len(wrong)) / 2 if right and wrong else None
        out["step_auc"] = auc([p for p, _ in pairs], [y > 0.5 for _, y in pairs])
        out["steps"] = len(pairs)
        out["wrong_steps"] = len(wrong)
    out["by_type"] = {}
    for t in problems[0].task.failure_types:
        s = [x for x, k in zip(scores, kinds) if k == t]
        out["by_type"][t] = {"count": len(s), "mean_score": sum(s) / len(s) if s else None}
    return out
