"""Sampling continuations from a TinyReasoner.

`sample_reference` recomputes the whole sequence for every new token: slow, obviously right.
`sample` keeps a key/value cache and computes only the new position; it must return exactly the
same characters as the reference, greedy and seeded sampling alike (tests/test_sampling.py).

Both draw with `torch.multinomial` on the same (B, V) probabilities in the same order, so one
generator gives the same draws in both.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .task import END, PAD_ID, Problem, decode, encode


def response_of(text: str) -> str:
    """Cut a generated continuation after its first `$` (kept); without `$`, the whole text."""
    j = text.find(END)
    return text if j < 0 else text[: j + 1]


def _prompt_batch(model, prompts: list[str], max_new: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(X, lens): prompts right-padded into X (B, L + max_new) on the model's device; lens (B,)."""
    if max_new < 1:
        raise ValueError(f"max_new={max_new}: must be at least 1")
    device = next(model.parameters()).device
    lens = torch.tensor([len(p) for p in prompts], device=device)
    if int(lens.min()) < 1:
        raise ValueError("prompts: every prompt needs at least one character")
    L = int(lens.max())
    if L + max_new > model.cfg.max_len:
        raise ValueError(f"prompt length {L} + max_new {max_new} exceeds the model's max_len={model.cfg.max_len}")
    X = torch.full((len(prompts), L + max_new), PAD_ID, dtype=torch.long, device=device)
    for i, p in enumerate(prompts):
        X[i, : len(p)] = torch.tensor(encode(p), device=device)
    return X, lens


def _draw(logits: torch.Tensor, temperature: float, generator: torch.Generator | None) -> torch.Tensor:
    # logits: (B, V) -> (B,) token ids. PAD is never an action: it would decode to nothing.
    logits = logits.clone()
    logits[:, PAD_ID] = float("-inf")
    if temperature == 0:
        return logits.argmax(-1)
    probs = (logits.float() / temperature).softmax(-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(1)


def _continuations(X: torch.Tensor, lens: torch.Tensor, max_new: int) -> list[str]:
    return [decode(X[i, int(n): int(n) + max_new].tolist()) for i, n in enumerate(lens)]


@torch.inference_mode()
def sample_reference(model, prompts: list[str], max_new: int, temperature: float = 1.0,
                     generator: torch.Generator | None = None) -> list[str]:
    """max_new characters after each prompt, recomputing the full sequence at every step."""
    if not prompts:
        return []
    X, lens = _prompt_batch(model, prompts, max_new)
    rows = torch.arange(len(prompts), device=X.device)
    L = int(lens.max())
    for t in range(max_new):
        logits = model(X[:, : L + t])  # (B, L + t, V)
        X[rows, lens + t] = _draw(logits[rows, lens + t - 1], temperature, generator)
    return _continuations(X, lens, max_new)


@torch.inference_mode()
def sample(model, prompts: list[str], max_new: int, temperature: float = 1.0,
           generator: torch.Generator | None = None) -> list[str]:
    """Same contract and output as sample_reference, with a key/value cache.

    Row i's t-th new token sits at position lens[i] + t. The cache has L + max_new slots; a mask lets
    each row see only the slots it has written. Keys computed for a short prompt's padding in the
    prefill are overwritten by that row's own new tokens before the mask ever exposes them.
    """
    if not prompts:
        return []
    X, lens = _prompt_batch(model, prompts, max_new)
    B, S = X.shape
    L = S - max_new
    rows = torch.arange(B, device=X.device)
    cfg = model.cfg
    hd = cfg.d_model // cfg.n_heads

    x = model.embed(X[:, :L])  # (B, L, D)
    pos = torch.arange(L, device=X.device)
    caches = []
    for blk in model.blocks:
        q, k, v = blk.qkv_heads(x, pos)  # (B, H, L, hd)
        K = x.new_zeros(B, cfg.n_heads, S, hd)
        V = x.new_zeros(B, cfg.n_heads, S, hd)
        K[:, :, :L], V[:, :, :L] = k, v
        caches.append((K, V))
        x = blk.finish(x, F.scaled_dot_product_attention(q, k, v, is_causal=True))
    last = model.head(model.ln_f(x[rows, lens - 1]))  # (B, V)

    cur = lens.clone()  # where each row's next token goes
    slots = torch.arange(S, device=X.device)
    for t in range(max_new):
        nxt = _draw(last, temperature, generator)
        X[rows, cur] = nxt
        if t == max_new - 1:
            break
        x = model.embed(nxt)[:, None, :]  # (B, 1, D)
        mask = (slots[None, :] <= cur[:, None])[:, None, None, :]  # (B, 1, 1, S)
        for blk, (K, V) in zip(model.blocks, caches):
            q, k, v = blk.qkv_heads(x, cur[:, None])  # (B, H, 1, hd)
            K[rows, :, cur] = k[:, :, 0]
            V[rows, :, cur] = v[:, :, 0]
            x = blk.finish(x, F.scaled_dot_product_attention(q, K, V, attn_mask=mask))
        last = model.head(model.ln_f(x[:, 0]))
        cur = cur + 1
    return _continuations(X, lens, max_new)


def sample_responses(model, problems: list[Problem], n_samples: int, temperature: float,
                     generator: torch.Generator | None, chunk: int = 4096) -> list[list[str]]:
    """n_samples responses (cut at `$`) per problem; max_new is the batch's largest k plus 5,
    room enough to see a walk overshoot."""
    flat = [p.prompt for p in problems for _ in range(n_samples)]
    if not flat:
        return [[] for _ in problems]
    max_new = max(p.k for p in problems) + 5
    outs: list[str] = []
    for i in range(0, len(flat), chunk):
        outs += sample(model, flat[i: i + chunk], max_new, temperature, generator)
    resps = [response_of(o) for o in outs]
    return [resps[i * n_samples: (i + 1) * n_samples] for i in range(len(problems))]
