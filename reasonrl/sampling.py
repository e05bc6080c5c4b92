"""Sampling continuations from a TinyReasoner.

`sample_reference` recomputes the whole sequence for every new token: slow, obviously right.
`sample` keeps a key/value cache and computes only the new position; it must return exactly the
same characters as the reference, greedy and seeded sampling alike (tests/test_sampling.py).
`sample_groups` is the fast path for G samples per prompt: each distinct prompt is prefilled once and
its G rows decode against that shared cache (broadcast, never copied), in a lean loop that stops once
every row has written `$`; it returns the same responses as `sample` on the repeated prompt list
(tests/test_perf.py).

All three draw with `torch.multinomial` on the same (B, V) probabilities in the same order, so one
generator gives the same draws in each.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .logprobs import grouped_attention, prefill, prompt_bias
from .model import causal_attention, merge_heads
from .tasks import END, END_ID, PAD_ID, Problem, decode, encode


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

    def prompt_attention(q, k, v):  # (B, H, L, hd): the prompt's keys and values open the cache
        K, V = x.new_zeros(B, cfg.n_heads, S, hd), x.new_zeros(B, cfg.n_heads, S, hd)
        K[:, :, :L], V[:, :, :L] = k, v
        caches.append((K, V))
        return causal_attention(q, k, v)

    for blk in model.blocks:
        x = blk.layer(x, lambda qkv, blk=blk: blk.split_heads(qkv, pos), prompt_attention, merge_heads(x.shape))
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
            def cached(q, k, v, K=K, V=V, cur=cur, mask=mask):  # (B, H, 1, hd): the new token's, into the cache
                K[rows, :, cur] = k[:, :, 0]
                V[rows, :, cur] = v[:, :, 0]
                return F.scaled_dot_product_attention(q, K, V, attn_mask=mask)

            x = blk.layer(x, lambda qkv, blk=blk, at=cur[:, None]: blk.split_heads(qkv, at), cached,
                          merge_heads(x.shape))
        last = model.head(model.ln_f(x[:, 0]))
        cur = cur + 1
    return _continuations(X, lens, max_new)


def _draw_in_place(logits: torch.Tensor, temperature: float, generator: torch.Generator | None) -> torch.Tensor:
    # _draw on a logits buffer the caller no longer needs: same probabilities, no copy
    logits[:, PAD_ID] = float("-inf")
    if temperature == 0:
        return logits.argmax(-1)
    if temperature != 1:
        logits.div_(temperature)
    return torch.multinomial(logits.softmax(-1), 1, generator=generator).squeeze(1)


@dataclass(frozen=True)
class Prefill:
    """A prompt batch's `model.prefill` as `sample_groups(keep=...)` kept it, with its autograd graph: kv and last,
    the model that computed them and the versions of its weights then (an optimizer step bumps them)."""
    kv: list
    last: torch.Tensor
    model: torch.nn.Module
    versions: tuple[int, ...]

    def of(self, model: torch.nn.Module) -> tuple[list, torch.Tensor]:
        """(kv, last) for a forward of `model`; a ValueError unless it is the model that made them, unchanged."""
        if model is not self.model or _versions(model) != self.versions:
            raise ValueError("prefilled: made by another model, or before its weights changed")
        return self.kv, self.last


def _versions(model: torch.nn.Module) -> tuple[int, ...]:
    return tuple(p._version for p in model.parameters())


def _burn(rows: int, vocab: int, steps: int, temperature: float, generator: torch.Generator | None,
          device) -> None:
    """Consume exactly the generator draws that `steps` more sampling steps of `rows` rows would take:
    torch.multinomial's draws depend on the shape of its input, never on the values."""
    if temperature == 0 or steps <= 0:
        return
    flat = torch.ones(rows, vocab, device=device)
    for _ in range(steps):
        torch.multinomial(flat, 1, generator=generator)


def sample_groups(model, prompts: list[str], group: int, max_new: int, temperature: float = 1.0,
                  generator: torch.Generator | None = None, stop_at_end: bool = True,
                  keep: list | None = None) -> list[str]:
    """Continuations of each prompt repeated `group` times in a row (len(prompts) * group of them, in the
    order of `[p for p in prompts for _ in range(group)]`), each prompt prefilled once.

    With stop_at_end=False the result equals `sample` on the repeated list, character for character.
    With stop_at_end=True (the default) a row stops being computed once it has written `$` (the characters
    after it are filler) and decoding stops after the step at which every row has, so a continuation may be
    shorter than max_new, but `response_of` of each is the same as with stop_at_end=False. The draws of the
    skipped steps are still consumed from the generator, so the generator is left exactly where `sample` leaves
    it and the next draw from it is the same too.

    keep (a list): the prefill is computed with its autograd graph and appended to it as a `Prefill`, for a
    training forward over these prompts, at these weights, to reuse (`shared_token_logprobs(prefilled=...)`):
    the same computation, done once. Decoding never records a graph.
    """
    if not prompts:
        return []
    if group < 1:
        raise ValueError(f"group={group}: must be at least 1")
    X, lens = _prompt_batch(model, prompts, max_new)  # (P, L + max_new)
    L = X.shape[1] - max_new
    with torch.inference_mode(keep is None):
        kv, last = prefill(model, X[:, :L], lens)
    if keep is not None:
        keep.append(Prefill(kv, last, model, _versions(model)))
    with torch.inference_mode():
        return _decode_groups(model, kv, last, lens, group, max_new, temperature, generator, stop_at_end)


def _decode_groups(model, kv: list, last: torch.Tensor, lens: torch.Tensor, G: int, max_new: int, temperature: float,
                   generator: torch.Generator | None, stop_at_end: bool) -> list[str]:
    """sample_groups' token-by-token loop, on the prompts' prefill (kv, last) and lengths lens (P,)."""
    P, L = len(lens), kv[0][0].shape[2]
    R, cfg, dev = P * G, model.cfg, last.device
    H, hd = cfg.n_heads, cfg.d_model // cfg.n_heads
    logits = model.head(model.ln_f(last)).repeat_interleave(G, dim=0)  # (R, V): rows p*G .. p*G+G-1 share it
    V = logits.shape[-1]
    # everything the loop touches is made here once: caches, positions, the prompt mask, the output
    pbias = prompt_bias(lens, L)  # (P, 1, 1, L)
    pos = (lens[None, :, None] + torch.arange(max_new, device=dev)[:, None, None]).expand(max_new, P, G).contiguous()
    # zeroed, so that the slots of rows that stopped writing hold finite numbers
    own = [(last.new_zeros(P, H, G, max_new, hd), last.new_zeros(P, H, G, max_new, hd)) for _ in model.blocks]
    q_all = last.new_zeros(P, H, G, 1, hd)  # queries of every row; those of rows that stopped stay 0
    out = torch.empty(max_new, R, dtype=torch.long, device=dev)  # token t of every row
    done = torch.zeros(R, dtype=torch.bool, device=dev)
    hit = torch.empty(R, dtype=torch.bool, device=dev)
    live = torch.arange(R, device=dev)  # rows still writing: only they go through the position-wise layers
    steps = max_new
    for t in range(max_new):
        nxt = _draw_in_place(logits, temperature, generator)  # (R,)
        out[t] = nxt
        if t == max_new - 1:
            break
        if stop_at_end:
            done.logical_or_(torch.eq(nxt, END_ID, out=hit))
            if bool(done.all()):
                _burn(R, V, max_new - 1 - t, temperature, generator, dev)
                steps = t + 1
                break
            live = (~done).nonzero().squeeze(1)
        # row g of group p is flat row p * G + g, at position lens[p] + t
        p_, g_, n = live // G, live % G, len(live)
        x = model.embed(nxt[live])  # (n, D)
        for blk, (Kp, Vp), (Ks, Vs) in zip(model.blocks, kv, own):
            def heads(qkv, blk=blk, Ks=Ks, Vs=Vs, t=t, p_=p_, g_=g_):  # the live rows' (n, H, hd) among all rows
                q, k, v = blk.packed_heads(qkv, pos[t, p_, g_])
                q_all[p_, :, g_, 0], Ks[p_, :, g_, t], Vs[p_, :, g_, t] = q, k, v
                return q_all, Ks[:, :, :, : t + 1], Vs[:, :, :, : t + 1]

            def attend(q, k, v, Kp=Kp, Vp=Vp):
                return grouped_attention(q, Kp, Vp, pbias, k, v)

            x = blk.layer(x, heads, attend, lambda att, p_=p_, g_=g_, n=n: att[p_, :, g_, 0].reshape(n, H * hd))
        # a row that stopped gets uniform logits: its draws are consumed (the generator's state depends only on
        # the shape) and never read (response_of cuts at `$`)
        logits = last.new_zeros(R, V)
        logits[live] = model.head(model.ln_f(x))
    return [decode(ids) for ids in out[:steps].T.tolist()]


def sample_responses(model, problems: list[Problem], n_samples: int, temperature: float,
                     generator: torch.Generator | None, chunk: int = 4096, shared: bool = True,
                     keep: list | None = None) -> list[list[str]]:
    """n_samples responses (cut at `$`) per problem; max_new is the largest budget of the batch's
    problems (`Problem.budget`: room enough to see a walk overshoot).

    Rows are sampled in chunks of whole groups: as many problems' n_samples rows as fit in `chunk` rows
    (at least one problem). shared=True (the default) samples each chunk with `sample_groups` (one
    prefill per prompt, early stop); shared=False with the plain `sample` on the repeated prompt list. Both
    give the same responses and leave the generator in the same state. keep: as in sample_groups, the prefill
    appended when the problems fit one chunk (shared=True only; several chunks' prefills would serve no forward).
    """
    if not problems or n_samples < 1:
        return [[] for _ in problems]
    max_new = max(p.budget for p in problems)
    per = max(1, chunk // n_samples)  # problems per chunk
    keep = keep if len(problems) <= per else None
    resps: list[str] = []
    for i in range(0, len(problems), per):
        prompts = [p.prompt for p in problems[i: i + per]]
        if shared:
            outs = sample_groups(model, prompts, n_samples, max_new, temperature, generator, keep=keep)
        else:
            outs = sample(model, [p for p in prompts for _ in range(n_samples)], max_new, temperature, generator)
        resps += [response_of(o) for o in outs]
    return [resps[i * n_samples: (i + 1) * n_samples] for i in range(len(problems))]
