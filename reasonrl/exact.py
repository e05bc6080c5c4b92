"""The exact toy: REINFORCE with a KL penalty on a language model small enough to enumerate.

A response is a string of 0 to 6 tokens over `so, and` (filler), `fact` (a point), `delve, tapestry`
(fancy): 1 + 5 + ... + 5^6 = 19,531 responses, enumerated once as a padded (N, 6) tensor ordered by
length and then base-5 value, so that the first P = 3,906 (length <= 5) are also the prefixes at which
the policy decides. The policy is autoregressive (5 tokens or END at each prefix, END forced at length 6),
an MLP over a summary of the prefix (one-hot length, token counts, one-hot last token):

    log pi(y) = sum_t log pi(y_t | y_<t) + [len(y) < 6] · log pi(END | y)

The actors: a data process and the reference (SFT) policy fitted to it by exact cross-entropy; a gold
reward (facts good up to two, every token costs); crowd labellers who over-reward length and fancy words;
a reward model linear in token counts fitted to the crowd by Bradley-Terry. The data process and both
rewards depend on the prefix summary only, so pi* ∝ pi_ref · exp(r / beta) is representable.

Exact: J(pi) = sum_y pi(y) [r(y) - beta (log pi(y) - log pi_ref(y))] and its gradient (autograd through
the sum), pi*, KL(pi || pi_ref) and its gradient (`exact_kl`, for any enumerable policy) and the expected
update of a k3 penalty in the loss (`expected_k3_loss`). The sampled estimators (reasonrl.exact_gradients)
are checked against them by the demonstrations in `reasonrl.studies.exact`.

Every tensor is float64 so that KLs of order 1e-4 are measured, not rounding noise; every random draw
comes from a `torch.Generator` passed in.
"""

from __future__ import annotations

import copy
import functools
import math
from dataclasses import dataclass

import torch
from torch import nn

from .rl.variants import KL_ESTIMATORS

TOKENS = ("so", "and", "fact", "delve", "tapestry")
V = len(TOKENS)  # vocabulary size
END = V  # action id of "stop here"
MAX_LEN = 6
FACT = 2
FANCY = (3, 4)
DTYPE = torch.float64

# The data process of the SFT corpus: stop probability by current length, token weights, and a
# discount on repeating the previous token (real writers rarely repeat a word).
DATA_STOP = (0.05, 0.15, 0.3, 0.45, 0.6, 0.75)
DATA_TOKEN_WEIGHTS = (0.35, 0.3, 0.15, 0.1, 0.1)
DATA_REPEAT = 0.3

# Gold reward: +1 per fact up to GOLD_FACT_CAP, then -GOLD_EXCESS per extra fact; -GOLD_PER_TOKEN per token.
GOLD_FACT_CAP = 2
GOLD_EXCESS = 1.0
GOLD_PER_TOKEN = 0.25



# ----------------------------------------------------------------------------- the enumerated world

@dataclass(frozen=True)
class World:
    """Every response and every decision, as tensors. N responses, P decision prefixes."""

    seqs: torch.Tensor  # (N, 6) token ids, padded with END
    lengths: torch.Tensor  # (N,) long
    counts: torch.Tensor  # (N, V) float64 token counts
    dec_prefix: torch.Tensor  # (N, 6) prefix id of each decision (0 where masked)
    dec_action: torch.Tensor  # (N, 6) action taken at that decision (0 where masked)
    dec_mask: torch.Tensor  # (N, 6) bool: is this a real decision
    child: torch.Tensor  # (P, V) response id of prefix + token
    last: torch.Tensor  # (P,) last token of each prefix, V for the empty prefix
    prefix_state: torch.Tensor  # (P,) which distinct summary each prefix has
    states: torch.Tensor  # (S, F) float64 distinct prefix summaries, the policy's input

    @property
    def n(self) -> int:
        return self.seqs.shape[0]

    @property
    def p(self) -> int:
        return self.child.shape[0]


def _offset(length):
    # number of responses shorter than `length` = id of the first response of that length (int or tensor)
    return (V**length - 1) // (V - 1)


@functools.cache
def world() -> World:
    """The enumeration of all 19,531 responses (built once per process)."""
    n, p = _offset(MAX_LEN + 1), _offset(MAX_LEN)
    seqs = torch.full((n, MAX_LEN), END, dtype=torch.long)
    lengths = torch.zeros(n, dtype=torch.long)
    for length in range(1, MAX_LEN + 1):
        lo, hi = _offset(length), _offset(length + 1)
        code = torch.arange(hi - lo)
        for pos in range(length):  # most significant digit first
            seqs[lo:hi, pos] = (code // V ** (length - 1 - pos)) % V
        lengths[lo:hi] = length
    counts = torch.stack([(seqs == v).sum(1) for v in range(V)], 1).to(DTYPE)  # (N, V)

    # Decision t of a response: the prefix y_<t (its own id, as prefixes come first) and the action.
    dec_prefix = torch.zeros(n, MAX_LEN, dtype=torch.long)
    dec_action = torch.zeros(n, MAX_LEN, dtype=torch.long)
    dec_mask = torch.zeros(n, MAX_LEN, dtype=torch.bool)
    prefix_code = torch.zeros(n, dtype=torch.long)  # base-5 value of y_<t
    for t in range(MAX_LEN):
        emits = lengths > t
        stops = lengths == t  # t < 6 here, so stopping is a real decision
        pid = _offset(t) + prefix_code
        dec_prefix[:, t] = torch.where(emits | stops, pid, 0)
        dec_action[:, t] = torch.where(emits, seqs[:, t], torch.where(stops, END, 0))
        dec_mask[:, t] = emits | stops
        prefix_code = torch.where(emits, prefix_code * V + seqs[:, t], prefix_code)

    plen = lengths[:p]
    code = torch.arange(p) - _offset(plen)  # base-5 value of each prefix
    child = _offset(plen + 1)[:, None] + code[:, None] * V + torch.arange(V)[None, :]  # (P, V)
    last = torch.where(plen > 0, seqs[torch.arange(p), (plen - 1).clamp(min=0)], V)  # V: no token yet
    feats = torch.cat([
        nn.functional.one_hot(plen, MAX_LEN).to(DTYPE),
        counts[:p] / 3.0,
        nn.functional.one_hot(last, V + 1).to(DTYPE),
    ], 1)  # (P, 6 + V + V + 1)
    # Many prefixes share a summary (3,906 prefixes, 631 summaries): the network runs on each once.
    states, prefix_state = torch.unique(feats, dim=0, return_inverse=True)
    return World(seqs, lengths, counts, dec_prefix, dec_action, dec_mask, child, last, prefix_state, states)


def show(idx: int) -> str:
    """A response id as text ("<empty>" for the empty response)."""
    w = world()
    toks = [TOKENS[int(t)] for t in w.seqs[idx, : int(w.lengths[idx])]]
    return " ".join(toks) if toks else "<empty>"


# ----------------------------------------------------------------------------- the policy

class ToyPolicy(nn.Module):
    """An MLP from a prefix summary (..., F) to logits over the 5 tokens and END (..., V + 1)."""

    def __init__(self, n_feats: int, hidden: int, gen: torch.Generator):
        super().__init__()
        # skip_init: the weights are drawn below from `gen`, never from the global generator.
        self.net = nn.Sequential(
            nn.utils.skip_init(nn.Linear, n_feats, hidden, dtype=DTYPE), nn.Tanh(),
            nn.utils.skip_init(nn.Linear, hidden, hidden, dtype=DTYPE), nn.Tanh(),
            nn.utils.skip_init(nn.Linear, hidden, V + 1, dtype=DTYPE),
        )
        with torch.no_grad():
            for m in self.net:
                if isinstance(m, nn.Linear):
                    bound = 1.0 / math.sqrt(m.in_features)
                    m.weight.uniform_(-bound, bound, generator=gen)
                    m.bias.uniform_(-bound, bound, generator=gen)

    def forward(self, feats: torch.Tensor) -> torch.Tensor:
        return self.net(feats)


def new_policy(hidden: int, gen: torch.Generator) -> ToyPolicy:
    """A freshly initialised policy."""
    return ToyPolicy(world().states.shape[1], hidden, gen)


def clone_policy(policy: ToyPolicy) -> ToyPolicy:
    """An independent copy (same weights, own parameters)."""
    return copy.deepcopy(policy)


def log_table(policy: ToyPolicy) -> torch.Tensor:
    """log pi(a | s) for every decision prefix s and action a: (P, V + 1)."""
    w = world()
    return torch.log_softmax(policy(w.states), -1)[w.prefix_state]


def gather_tokens(table: torch.Tensor, idx: torch.Tensor | None = None) -> torch.Tensor:
    """log pi(y_t | y_<t) of each decision of responses `idx` (all when None) from a (P, V + 1) table of
    log pi(a | s), 0 at padding: (B, 6)."""
    w = world()
    pref, act, mask = (w.dec_prefix, w.dec_action, w.dec_mask) if idx is None else (
        w.dec_prefix[idx], w.dec_action[idx], w.dec_mask[idx])
    return torch.where(mask, table[pref, act], 0.0)


def token_logprobs(policy: ToyPolicy, idx: torch.Tensor) -> torch.Tensor:
    """log pi(y_t | y_<t) of each decision of responses `idx` (B,), 0 at padding: (B, 6)."""
    return gather_tokens(log_table(policy), idx)


def sequence_logprob(policy: ToyPolicy, idx: torch.Tensor) -> torch.Tensor:
    """log pi(y) of responses `idx` (B,): (B,)."""
    return token_logprobs(policy, idx).sum(1)


def all_token_logprobs(policy: ToyPolicy) -> torch.Tensor:
    """log pi(y_t | y_<t) of every decision of every response, 0 at padding: (N, 6). Differentiable."""
    return gather_tokens(log_table(policy))


def all_logprobs(policy: ToyPolicy) -> torch.Tensor:
    """log pi(y) of every response: (N,). Differentiable."""
    return all_token_logprobs(policy).sum(1)


@torch.no_grad()
def sample(policy: ToyPolicy, n: int, gen: torch.Generator) -> torch.Tensor:
    """Draw `n` responses autoregressively, token by token; returns their ids (n,)."""
    w = world()
    probs_table = log_table(policy).exp()  # (P, V + 1)
    cur = torch.zeros(n, dtype=torch.long)  # id of the prefix written so far
    alive = torch.ones(n, dtype=torch.bool)
    for _ in range(MAX_LEN):
        probs = probs_table[cur]  # (n, V + 1)
        action = torch.multinomial(probs, 1, generator=gen)[:, 0]  # (n,)
        emit = alive & (action != END)
        cur = torch.where(emit, w.child[cur, action.clamp(max=V - 1)], cur)
        alive = emit
    return cur  # after 6 tokens the response is complete: stopping there is forced


# ----------------------------------------------------------------------------- the actors

def data_logprobs() -> torch.Tensor:
    """log p_data(y) of every response under the SFT corpus's generating process: (N,)."""
    w = world()
    plen = w.lengths[: w.p]
    last = w.last  # (P,) last token, V when empty
    tok = torch.tensor(DATA_TOKEN_WEIGHTS, dtype=DTYPE).expand(w.p, V).clone()  # (P, V)
    has_last = last < V
    tok[has_last, last[has_last]] *= DATA_REPEAT
    tok = tok / tok.sum(1, keepdim=True)
    stop = torch.tensor(DATA_STOP, dtype=DTYPE)[plen][:, None]  # (P, 1)
    table = torch.cat([(1 - stop) * tok, stop], 1).log()  # (P, V + 1)
    return gather_tokens(table).sum(1)


def gold_reward() -> torch.Tensor:
    """The true quality of every response: facts help up to a cap, every token costs: (N,)."""
    w = world()
    facts = w.counts[:, FACT]
    return (facts.clamp(max=GOLD_FACT_CAP) - GOLD_EXCESS * (facts - GOLD_FACT_CAP).clamp(min=0)
            - GOLD_PER_TOKEN * w.lengths.to(DTYPE))


def crowd_utility(length_bonus: float, fancy_bonus: float) -> torch.Tensor:
    """What crowd labellers reward: gold plus a bonus per token and per fancy token: (N,)."""
    w = world()
    fancy = w.counts[:, list(FANCY)].sum(1)
    return gold_reward() + length_bonus * w.lengths.to(DTYPE) + fancy_bonus * fancy


def fit_bradley_terry(feats_a: torch.Tensor, feats_b: torch.Tensor, a_wins: torch.Tensor,
                      l2: float = 1e-4, iters: int = 25) -> torch.Tensor:
    """Weights w maximising sum log sigmoid(±w·(x_a - x_b)) (+ a small ridge), by Newton's method.

    feats_a, feats_b: (M, D); a_wins: (M,) in {0, 1}. Returns w: (D,).
    """
    x = feats_a - feats_b  # (M, D)
    w = torch.zeros(x.shape[1], dtype=DTYPE)
    eye = torch.eye(x.shape[1], dtype=DTYPE)
    for _ in range(iters):
        p = torch.sigmoid(x @ w)  # (M,)
        grad = x.T @ (p - a_wins) + l2 * w * len(x)
        hess = (x * (p * (1 - p))[:, None]).T @ x + l2 * len(x) * eye
        w = w - torch.linalg.solve(hess, grad)
    return w


@dataclass
class Toy:
    """The reference policy and the rewards, all as exact per-response tensors."""

    ref: ToyPolicy
    ref_lp: torch.Tensor  # (N,) log pi_ref(y)
    ref_table: torch.Tensor  # (P, V + 1) log pi_ref(a | s)
    data_lp: torch.Tensor  # (N,) log p_data(y)
    reward: torch.Tensor  # (N,) the fitted reward model r(y)
    gold: torch.Tensor  # (N,) gold reward
    utility: torch.Tensor  # (N,) the crowd's utility
    rm_weights: torch.Tensor  # (V,) reward per token
    sft_kl: float  # KL(p_data || pi_ref) after fitting
    crowd_agreement: float  # fraction of crowd labels that agree with the gold reward's preference


def fit_reference(hidden: int, steps: int, lr: float, data_lp: torch.Tensor, gen: torch.Generator) -> ToyPolicy:
    """Supervised fine-tuning: minimise the exact cross-entropy of the policy to the data distribution."""
    policy = new_policy(hidden, gen)
    opt = torch.optim.Adam(policy.parameters(), lr=lr)
    weights = data_lp.exp()  # (N,)
    for _ in range(steps):
        loss = -(weights * all_logprobs(policy)).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return policy


def make_toy(*, seed: int, hidden: int, sft_steps: int, sft_lr: float, bt_pairs: int, length_bonus: float,
             fancy_bonus: float) -> Toy:
    """Fit the reference policy, label `bt_pairs` pairs with the crowd, fit the reward model; every draw
    from one generator seeded with `seed` (the `exact:` params, see reasonrl.studies.exact.Config)."""
    gen = torch.Generator().manual_seed(seed)
    w = world()
    data_lp = data_logprobs()
    ref = fit_reference(hidden, sft_steps, sft_lr, data_lp, gen)
    ref.requires_grad_(False)
    with torch.no_grad():
        ref_table = log_table(ref)
        ref_lp = gather_tokens(ref_table).sum(1)
    utility = crowd_utility(length_bonus, fancy_bonus)
    gold = gold_reward()
    a, b = sample(ref, bt_pairs, gen), sample(ref, bt_pairs, gen)  # (M,) pairs from the SFT model
    a_wins = torch.bernoulli(torch.sigmoid(utility[a] - utility[b]), generator=gen)  # (M,)
    rm_weights = fit_bradley_terry(w.counts[a], w.counts[b], a_wins)
    decided = gold[a] != gold[b]
    agree = ((gold[a] > gold[b]).to(DTYPE) == a_wins)[decided].to(DTYPE).mean().item()
    return Toy(ref=ref, ref_lp=ref_lp, ref_table=ref_table, data_lp=data_lp, reward=w.counts @ rm_weights,
               gold=gold, utility=utility, rm_weights=rm_weights, sft_kl=kl(data_lp, ref_lp),
               crowd_agreement=agree)


# ----------------------------------------------------------------------------- exact quantities

def kl(lp_p: torch.Tensor, lp_q: torch.Tensor) -> float:
    """KL(p || q) from full log-probability vectors (N,)."""
    return float((lp_p.exp() * (lp_p - lp_q)).sum())


def exact_kl(tok_lp: torch.Tensor, ref_tok_lp: torch.Tensor) -> torch.Tensor:
    """KL(pi || pi_ref) = sum_y pi(y) (log pi(y) - log pi_ref(y)) over a whole enumerated support.

    tok_lp, ref_tok_lp: (N, T) per-token log-probs of every sequence of the support under pi and pi_ref,
    0 at padding (pi must sum to 1 over the N rows). A 0-d tensor, differentiable in tok_lp: its gradient
    is the exact gradient of the KL, including the change of pi(y) itself. Works for any enumerable
    policy, not only the toy's (for the toy: `all_token_logprobs`, `gather_tokens(toy.ref_table)`).
    """
    lp = tok_lp.sum(1)
    return (lp.exp() * (lp - ref_tok_lp.sum(1))).sum()


def expected_k3_loss(tok_lp: torch.Tensor, ref_tok_lp: torch.Tensor) -> torch.Tensor:
    """E_{y ~ pi}[sum_t k3_t(y)] over the enumerated support, with pi(y) held constant.

    Its value is KL(pi || pi_ref) (k3 is unbiased); its gradient is the expectation of the gradient of a
    per-token k3 loss on samples of pi, which differentiates the log-ratios but not the sampling. That is
    sum_s d_pi(s) ∇ KL(pi_ref(.|s) || pi(.|s)), not ∇ KL(pi || pi_ref) (`exact_kl`). Shapes as there.
    """
    weights = tok_lp.sum(1).exp().detach()  # (N,) pi(y)
    return (weights * KL_ESTIMATORS["k3"](ref_tok_lp - tok_lp).sum(1)).sum()


def optimal_logprobs(ref_lp: torch.Tensor, reward: torch.Tensor, beta: float) -> torch.Tensor:
    """log pi*(y) with pi* ∝ pi_ref · exp(r / beta), the maximiser of J: (N,)."""
    return torch.log_softmax(ref_lp + reward / beta, 0)


def exact_objective(lp: torch.Tensor, toy: Toy, beta: float) -> torch.Tensor:
    """J = sum_y pi(y) [r(y) - beta (log pi(y) - log pi_ref(y))] (a 0-d tensor, differentiable in lp)."""
    return (lp.exp() * (toy.reward - beta * (lp - toy.ref_lp))).sum()
