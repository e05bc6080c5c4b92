"""TinyReasoner: a small pre-LayerNorm decoder-only transformer with rotary positions.

Checkpoints are one file holding the state dict and a JSON-able `meta` dict (model config, the
params that produced it, a training summary). They load with `torch.load(weights_only=True)`, so a
checkpoint can never execute code.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

from . import numerics
from .config import check
from .errors import CheckpointError, rebuild_fix
from .io import atomic_path
from .tasks import DEFAULT, PAD_ID, get_task, vocab_size


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
        q, k, v = heads(self.qkv(self.ln1(x)))
        x = x + self.proj(merge(attend(q, k, v)))
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
    D, kv = x.shape[1], []

    def heads(qkv):  # each (n, H, hd), rotated, then in the padded layout (B, H, T, hd)
        q, k, v = (unpack(t, idx, B, T) for t in blk.packed_heads(qkv, pos))
        kv.append((k, v))
        return q, k, v

    x = blk.layer(x, heads, attend, lambda att: att.transpose(1, 2).reshape(B * T, D)[idx])
    return x, kv[0]


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
                         keep: torch.Tensor, prefilled: tuple | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Final hidden states (before ln_f) of teacher-forced responses that share their group's prompt, each prompt
    computed once and only the fed-in tokens marked in `keep` through the position-wise layers.

    prompts: (P, L) right-padded prompt ids, lens (P,) their lengths; resp_in: (P, G, T) the response tokens fed
    in (row g of group p continues prompt p at position lens[p]); keep (P, G, T) bool, a right-aligned-free
    prefix of each row (the tokens whose outputs are wanted). Returns (last, x): last (P, D) at each prompt's
    last character (it predicts each group's first response token); x (n, D) at the kept fed-in tokens, in
    row-major order of keep. `prefilled`: `prefill(model, prompts, lens)` as already computed (the rollout's,
    with its graph), else it is computed here."""
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

        x, _ = packed_layer(blk, x, pos, idx, P, G * T, attend)
    return last, x


def _logp_ent(logits: torch.Tensor, tgt: torch.Tensor, temperature: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probs of the targets tgt (B, K) under logits (B, V) at `temperature` (each row's distribution serves
    its K targets), and the distribution's entropy (B,)."""
    lp = _policy_logprobs(logits, temperature)
    p = lp.exp()
    return lp.gather(-1, tgt), -(p * lp.masked_fill(p == 0, 0.0)).sum(-1)


def shared_token_logprobs(model: TinyReasoner, prompts: torch.Tensor, lens: torch.Tensor, resp: torch.Tensor,
                          temperature: float = 1.0, prefilled: tuple | None = None
                          ) -> tuple[torch.Tensor, torch.Tensor]:
    """token_logprobs in response layout with the prompt shared per group: (logp, ent), each (P * G, R).

    prompts (P, L), lens (P,) as in shared_prefix_hidden; resp (P, G, R) right-padded response ids. Column j is
    the log-prob of response token j given the prompt and the response before it, and the entropy of that
    distribution at `temperature`; PAD is excluded from the distribution. Both are 0 where the target is PAD:
    only real targets are computed (the position-wise layers, the head and the softmax run on packed tokens).
    `prefilled` as in shared_prefix_hidden."""
    P, G, R = resp.shape
    need = resp[:, :, 1:] != PAD_ID  # (P, G, R-1): fed-in token j is wanted when target j + 1 is real
    last, x = shared_prefix_hidden(model, prompts, lens, resp[:, :, :-1], need, prefilled)
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


FORMAT = "reasonrl-checkpoint-v1"


def save_checkpoint(path: str | Path, model: TinyReasoner, meta: dict) -> None:
    """Write the model's weights, config and `meta` (JSON-able) to `path` atomically. The intra-op
    thread count it was computed with is stored beside them: it is part of what the numbers are."""
    blob = {"format": FORMAT, "model_config": json.dumps(asdict(model.cfg)), "meta": json.dumps(meta),
            "threads": torch.get_num_threads(),
            "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()}}
    save_blob(path, blob)


def save_blob(path: str | Path, blob: dict) -> None:
    """torch.save `blob` to `path` atomically; the same blob gives the same bytes whatever the path. The
    `numerics` setting the weights were computed under is stored beside them, like the thread count."""
    blob = {**blob, "numerics": numerics.current()}
    # through a file object: given a path, torch names the archive's records after the (random) temporary
    # file's name, and a checkpoint's bytes would differ on every save
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        torch.save(blob, f)


def torch_load_reason(e: BaseException) -> str:
    """The informative line of torch.load's error: the refused global of a pickle that references
    code, else the first sentence (torch appends long migration notes and links)."""
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    refused = [line for line in lines if "global" in line.lower() and ("unsupported" in line.lower()
                                                                       or "blocked" in line.lower())]
    if refused:
        return "it references code, which weights_only loading refuses: " + refused[0].split(". ")[0].rstrip(".")
    if isinstance(e, KeyError) or not lines:
        return f"not a torch.save file ({type(e).__name__})"
    return lines[0].split(". ")[0].rstrip(".")


def load_blob(path: str | Path, fmt: str = FORMAT) -> dict:
    """Safely load a checkpoint dict of format `fmt`; any problem is one CheckpointError naming the
    path, what torch said, and the stage that makes the file."""
    path = Path(path)
    if not path.exists():
        raise CheckpointError(path.as_posix(), "checkpoint not found", rebuild_fix(path))
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises many types for truncated or foreign files
        reason = torch_load_reason(e)
        if not zipfile.is_zipfile(path):  # torch.save writes a zip whose directory is at the end
            reason = f"truncated or damaged, no zip directory at its end (torch: {reason})"
        raise CheckpointError(path.as_posix(), f"not a readable checkpoint: {reason}", rebuild_fix(path)) from None
    if not isinstance(blob, dict) or blob.get("format") != fmt:
        found = blob.get("format") if isinstance(blob, dict) else None
        raise CheckpointError(path.as_posix(), f"not a {fmt} file" + (f" (it is {found})" if found else ""),
                              rebuild_fix(path))
    return blob


def load_checkpoint(path: str | Path, device: str | torch.device = "cpu") -> tuple[TinyReasoner, dict]:
    """(model in eval mode on `device`, meta) from a file written by save_checkpoint."""
    blob = load_blob(path)
    model = TinyReasoner(ModelConfig(**json.loads(blob["model_config"])))
    try:
        model.load_state_dict(blob["state_dict"])
    except RuntimeError as e:
        raise CheckpointError(Path(path).as_posix(), "weights do not match the stored config "
                              f"({str(e).splitlines()[0]})", rebuild_fix(path)) from None
    return model.to(device).eval(), json.loads(blob["meta"])
