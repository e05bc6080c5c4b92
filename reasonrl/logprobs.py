"""Log-probs of responses under the model, as the RL loss reads them: the plain path (`token_logprobs`, every
sequence prompt + response in full) and the prefix-shared one (`shared_token_logprobs`, each group's prompt
computed once and its G responses attending to it). The plain path is the reference the shared one is tested
against (tests/test_perf.py). The samplers' KV cache (sampling.py) starts from the same `prefill` and decodes with
`grouped_attention`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from .model import Block, TinyReasoner
from .tasks import PAD_ID


def _policy_logprobs(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """Log-probs of the distribution the samplers draw from: softmax(logits / temperature), PAD excluded."""
    logits = logits.float()
    if temperature != 1:
        logits = logits / temperature
    logits[..., PAD_ID] = float("-inf")
    return logits.log_softmax(-1)


def token_logprobs(model: TinyReasoner, X: torch.Tensor, temperature: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """(logp, ent), each (B, T-1): log-prob of the actual next token X[:, t+1] and the entropy of the
    predicted distribution at t (0 where the target is PAD). The distribution is the one the samplers draw
    from at `temperature`: softmax(logits / temperature) with PAD excluded (it is never an action)."""
    lp = _policy_logprobs(model(X[:, :-1]), temperature)  # (B, T-1, V)
    # PAD targets (right padding) get 0 rather than -inf so that masking them out never makes NaN
    logp = lp.gather(-1, X[:, 1:, None]).squeeze(-1).masked_fill(X[:, 1:] == PAD_ID, 0.0)
    p = lp.exp()
    ent = -(p * lp.masked_fill(p == 0, 0.0)).sum(-1)
    return logp, ent


# ----------------------------------------------------------------------------- prefix sharing
# The G responses of a group share their prompt: the prompt is run through the model once (P groups), and
# the responses, laid out per group as one (P, G * T) block of tokens, attend to that shared prompt and to
# their own earlier tokens. Nothing of the prompt is copied G times.


def prompt_bias(lens: torch.Tensor, L: int) -> torch.Tensor:
    """(P, 1, 1, L) additive attention bias: 0 on each prompt's own slots, -inf on its right padding."""
    pad = torch.arange(L, device=lens.device)[None, :] >= lens[:, None]  # (P, L)
    return torch.zeros(pad.shape, device=lens.device).masked_fill_(pad, float("-inf"))[:, None, None, :]


def packed_index(lens: torch.Tensor, T: int) -> torch.Tensor:
    """Flat indices into (B * T) of the real positions t < lens[b] of right-padded rows (B, T), row by row."""
    return (torch.arange(T, device=lens.device)[None, :] < lens[:, None]).flatten().nonzero().squeeze(1)


def unpack(x: torch.Tensor, idx: torch.Tensor, B: int, T: int) -> torch.Tensor:
    """Packed per-token heads x (n, H, hd) at flat positions idx into (B, H, T, hd), zeros on the padding."""
    out = x.new_zeros(B * T, *x.shape[1:])
    out[idx] = x
    return out.view(B, T, *x.shape[1:]).transpose(1, 2)


def packed_layer(blk: Block, x: torch.Tensor, pos: torch.Tensor, idx: torch.Tensor, B: int, T: int, attend):
    """One block on packed tokens: the position-wise parts (LayerNorms, QKV, projection, MLP) run on the n real
    tokens x (n, D) only (pos (n,) their positions, idx (n,) their flat places in (B, T)); attention is exact,
    on the padded layout: attend(q, k, v), each (B, H, T, hd), returns (B, H, T, hd). Returns (x', (k, v))."""
    kv = []
    x = blk.feed_forward(packed_attention(blk, x, pos, idx, B, T, attend, kv))
    return x, kv[0]


def packed_attention(blk: Block, x: torch.Tensor, pos: torch.Tensor, idx: torch.Tensor, B: int, T: int, attend,
                     kv: list | None = None) -> torch.Tensor:
    """The block's attention half on packed tokens (packed_layer); appends its (k, v) to `kv` when given."""
    D = x.shape[1]

    def heads(qkv):  # each (n, H, hd), rotated, then in the padded layout (B, H, T, hd)
        q, k, v = (unpack(t, idx, B, T) for t in blk.packed_heads(qkv, pos))
        if kv is not None:
            kv.append((k, v))
        return q, k, v

    return blk.attention(x, heads, attend, lambda att: att.transpose(1, 2).reshape(B * T, D)[idx])


def prefill(model: TinyReasoner, X: torch.Tensor, lens: torch.Tensor):
    """Run right-padded prompts X (P, L) once: ([(K, V) per layer, each (P, H, L, hd)], last (P, D)), where
    last is the final hidden state (before ln_f) at each prompt's last character. Only real characters go
    through the position-wise layers; K and V are zero on the padding (prompt_bias masks it)."""
    P, L = X.shape
    if L > model.cfg.max_len:
        raise ValueError(f"sequence length {L} exceeds max_len={model.cfg.max_len}")
    idx = packed_index(lens, L)
    x = model.embed(X.flatten()[idx])  # (n, D)
    pos = idx % L

    def causal(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    kv = []
    for blk in model.blocks:
        x, (k, v) = packed_layer(blk, x, pos, idx, P, L, causal)
        kv.append((k.contiguous(), v.contiguous()))  # read at every decoding step: lay them out once
    return kv, x[lens.cumsum(0) - 1]


def grouped_attention(q: torch.Tensor, Kp: torch.Tensor, Vp: torch.Tensor, pbias: torch.Tensor,
                      Ks: torch.Tensor, Vs: torch.Tensor, sbias: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax attention of each group's G rows over their shared prompt and their own tokens, as one softmax.

    q: (P, H, G, T, hd); Kp, Vp: (P, H, L, hd) the prompt, pbias (P, 1, 1, L) from prompt_bias;
    Ks, Vs: (P, H, G, S, hd) the rows' own keys and values; sbias: (T, S) additive (causal) bias or None.
    Returns (P, H, G, T, hd)."""
    P, H, G, T, hd = q.shape
    L, S = Kp.shape[2], Ks.shape[3]
    q = q * hd ** -0.5
    sp = torch.matmul(q.reshape(P, H, G * T, hd), Kp.transpose(-1, -2)) + pbias  # (P, H, G*T, L): no copy of Kp
    if T == 1:  # decoding: P*H*G products of a 1-row matrix are faster as elementwise multiply-and-sum
        ss = (q * Ks).sum(-1)[:, :, :, None]  # (P, H, G, 1, S)
    else:
        ss = torch.matmul(q, Ks.transpose(-1, -2))  # (P, H, G, T, S)
    if sbias is not None:
        ss = ss + sbias
    a = torch.cat([sp.view(P, H, G, T, L), ss], dim=-1).softmax(-1)  # (P, H, G, T, L + S)
    ap, as_ = a.split([L, S], dim=-1)
    own = (as_[:, :, :, 0, :, None] * Vs).sum(-2)[:, :, :, None] if T == 1 else torch.matmul(as_, Vs)
    return torch.matmul(ap.reshape(P, H, G * T, L), Vp).view(P, H, G, T, hd) + own


def shared_prefix_hidden(model: TinyReasoner, prompts: torch.Tensor, lens: torch.Tensor, resp_in: torch.Tensor,
                         keep: torch.Tensor, prefilled: tuple | None = None, recompute: bool = False
                         ) -> tuple[torch.Tensor, torch.Tensor]:
    """Final hidden states (before ln_f) of teacher-forced responses that share their group's prompt, each prompt
    computed once and only the fed-in tokens marked in `keep` through the position-wise layers.

    prompts: (P, L) right-padded prompt ids, lens (P,) their lengths; resp_in: (P, G, T) the response tokens fed
    in (row g of group p continues prompt p at position lens[p]); keep (P, G, T) bool, a right-aligned-free
    prefix of each row (the tokens whose outputs are wanted). Returns (last, x): last (P, D) at each prompt's
    last character (it predicts each group's first response token); x (n, D) at the kept fed-in tokens, in
    row-major order of keep. `prefilled`: `prefill(model, prompts, lens)` as already computed (the rollout's,
    with its graph), else it is computed here. `recompute`: when the forward builds a graph, it keeps only the
    input of each half of each block (attention, MLP) and runs that half again during backward
    (torch.utils.checkpoint), so the blocks' part of the graph holds one half's activations at a time (the head's
    softmax, and a prefill computed here, keep theirs); the numbers are the same bits (tests/test_perf.py)."""
    P, G, T = resp_in.shape
    if int(lens.max()) + T > model.cfg.max_len:
        raise ValueError(f"sequence length {int(lens.max()) + T} exceeds max_len={model.cfg.max_len}")
    if prefilled is None:
        prefilled = prefill(model, prompts, lens)
    elif (made := tuple(prefilled[0][0][0].shape[::2])) != (P, prompts.shape[1]):  # layer 0's K: (P, H, L, hd)
        raise ValueError(f"prefilled: made for (prompts, length) {made}, these are {(P, prompts.shape[1])}")
    kv, last = prefilled
    idx = keep.reshape(P, G * T).flatten().nonzero().squeeze(1)  # flat places in (P, G * T)
    if T == 0 or len(idx) == 0:
        return last, last.new_zeros(0, last.shape[-1])
    steps = torch.arange(T, device=prompts.device)
    pos = (lens[:, None, None] + steps).expand(P, G, T).flatten()[idx]  # (n,)
    pbias = prompt_bias(lens, prompts.shape[1])
    causal = torch.zeros(T, T, device=prompts.device).masked_fill_(steps[None, :] > steps[:, None], float("-inf"))
    x = model.embed(resp_in.flatten()[idx])  # (n, D)
    for blk, (Kp, Vp) in zip(model.blocks, kv):
        def attend(q, k, v, Kp=Kp, Vp=Vp):
            return grouped_attention(q.unflatten(2, (G, T)), Kp, Vp, pbias, k.unflatten(2, (G, T)),
                                     v.unflatten(2, (G, T)), causal).flatten(2, 3)

        if recompute and torch.is_grad_enabled():
            # each half of the block apart, so that backward holds one half's activations at a time. The second
            # run computes what the first did: nothing in a block draws a random number (no RNG state to keep),
            # and no layer acts differently in train mode (no dropout), into which update() has switched since
            x = checkpoint(packed_attention, blk, x, pos, idx, P, G * T, attend, use_reentrant=False,
                           preserve_rng_state=False)
            x = checkpoint(blk.feed_forward, x, use_reentrant=False, preserve_rng_state=False)
        else:
            x, _ = packed_layer(blk, x, pos, idx, P, G * T, attend)
    return last, x


def _logp_ent(logits: torch.Tensor, tgt: torch.Tensor, temperature: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probs of the targets tgt (B, K) under logits (B, V) at `temperature` (each row's distribution serves
    its K targets), and the distribution's entropy (B,)."""
    lp = _policy_logprobs(logits, temperature)
    p = lp.exp()
    return lp.gather(-1, tgt), -(p * lp.masked_fill(p == 0, 0.0)).sum(-1)


def shared_token_logprobs(model: TinyReasoner, prompts: torch.Tensor, lens: torch.Tensor, resp: torch.Tensor,
                          temperature: float = 1.0, prefilled: tuple | None = None, recompute: bool = False
                          ) -> tuple[torch.Tensor, torch.Tensor]:
    """token_logprobs in response layout with the prompt shared per group: (logp, ent), each (P * G, R).

    prompts (P, L), lens (P,) as in shared_prefix_hidden; resp (P, G, R) right-padded response ids. Column j is
    the log-prob of response token j given the prompt and the response before it, and the entropy of that
    distribution at `temperature`; PAD is excluded from the distribution. Both are 0 where the target is PAD:
    only real targets are computed (the position-wise layers, the head and the softmax run on packed tokens).
    `prefilled` and `recompute` as in shared_prefix_hidden."""
    P, G, R = resp.shape
    need = resp[:, :, 1:] != PAD_ID  # (P, G, R-1): fed-in token j is wanted when target j + 1 is real
    last, x = shared_prefix_hidden(model, prompts, lens, resp[:, :, :-1], need, prefilled, recompute)
    lp0, ent0 = _logp_ent(model.head(model.ln_f(last)), resp[:, :, 0], temperature)  # (P, G), (P,)
    ent0 = ent0[:, None].expand(P, G)
    real0 = resp[:, :, 0] != PAD_ID
    idx = need.flatten().nonzero().squeeze(1)
    lp_rest, ent_rest = _logp_ent(model.head(model.ln_f(x)), resp[:, :, 1:].flatten()[idx, None], temperature)
    lp_rest = lp_rest[:, 0]

    def place(col0: torch.Tensor, rest: torch.Tensor) -> torch.Tensor:
        out = rest.new_zeros(P * G * (R - 1))
        out[idx] = rest
        return torch.cat([col0.masked_fill(~real0, 0.0).reshape(P * G, 1), out.view(P * G, R - 1)], dim=1)

    return place(lp0, lp_rest), place(ent0, ent_rest)
