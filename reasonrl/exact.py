"""The exact toy: REINFORCE with a KL penalty on a language model small enough to enumerate.

The world
---------
A response is a string of 0 to 6 tokens over a 5-token vocabulary

    so, and        plain filler words
    fact           a point: a piece of content
    delve, tapestry  fancy words

so there are 1 + 5 + 5^2 + ... + 5^6 = 19,531 responses. They are enumerated once, ordered by length
and then lexicographically (base 5), as a padded (N, 6) tensor. With that order the index of a response
of length L is (5^L - 1) / 4 + its base-5 value, and the first P = 3,906 responses (length <= 5) are also
the prefixes at which the policy makes a decision.

The policy is autoregressive: at a prefix of length t < 6 it either emits one of the 5 tokens or stops
(a sixth action, END); at length 6 it must stop. It is a small MLP over a summary of the prefix
(one-hot length, token counts, one-hot last token). That summary evolves as a Markov chain and the data
process, the gold reward and the reward model depend on nothing else, so the analytic optimum
pi* ∝ pi_ref · exp(r / beta) is (up to the MLP's approximation) representable by the policy.

    log pi(y) = sum_t log pi(y_t | y_<t) + [len(y) < 6] · log pi(END | y)

The actors:

- a data process (short answers, mostly filler, sometimes a fact, rarely fancy) and a reference policy
  fitted to it by minimising the exact cross-entropy over all responses (the SFT model);
- a gold reward: facts are good up to two, and every token costs a little (verbosity);
- crowd labellers whose Bradley-Terry preferences follow the gold reward plus a bonus per token and
  per fancy word, i.e. they over-reward length and fanciness;
- a reward model linear in the token counts, fitted by Bradley-Terry to the crowd's preferences on
  pairs sampled from the reference policy. It cannot see the cap on facts and inherits the crowd's
  biases, so pushing it hard lowers the gold reward (over-optimisation).

Everything is exact: expected reward, gold, KL and the objective
J(pi) = sum_y pi(y) [r(y) - beta (log pi(y) - log pi_ref(y))] are sums over all 19,531 responses, and
its gradient is autograd through that sum. The sampled estimators (advantages `none`, `mean`, `rloo`,
`grpo`) and the two KL placements (`reward_k1`: sequence-level log-ratio subtracted from the reward;
`loss_k3`: per-token k3 estimate added to the loss) are compared against it.

Every tensor is float64 so that KLs of order 1e-4 are measured, not rounding noise; every random draw
comes from a `torch.Generator` passed in.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn

from reasonrl.config import check

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


# ----------------------------------------------------------------------------------------------------
# configuration
# ----------------------------------------------------------------------------------------------------

ESTIMATORS = ("none", "mean", "rloo", "grpo")
KL_MODES = ("reward_k1", "loss_k3")


@dataclass
class ExactConfig:
    """The `exact:` section of params.yaml."""

    world_seed: int = 0  # policy initialisation, crowd pair sampling and labels
    hidden: int = 64  # width of the policy MLP
    sft_steps: int = 300  # full-batch Adam steps fitting the reference to the data distribution
    sft_lr: float = 0.01
    bt_pairs: int = 4000  # crowd comparisons used to fit the reward model
    crowd_length_bonus: float = 0.5  # labellers' extra utility per token
    crowd_fancy_bonus: float = 0.5  # labellers' extra utility per fancy token
    beta: float = 1.0  # KL coefficient of demonstrations a, b and d
    grad_seed: int = 11
    grad_trials: int = 200
    grad_batch: int = 32
    grad_estimators: list[str] = field(default_factory=lambda: list(ESTIMATORS))
    train_seed: int = 3
    batch: int = 128
    lr: float = 1.0e-3
    steps: int = 400
    log_every: int = 25
    table_steps: list[int] = field(default_factory=lambda: [25, 50, 100, 200, 400])
    train_estimators: list[str] = field(default_factory=lambda: ["none", "rloo", "grpo"])
    sweep_betas: list[float] = field(default_factory=lambda: [3.0, 1.0, 0.3])
    sweep_estimator: str = "rloo"
    frontier_betas: list[float] = field(  # analytic optimum only (free): the reward/gold-vs-KL frontier
        default_factory=lambda: [round(10 ** (1 - i / 20), 4) for i in range(41)])
    kl_estimators: list[str] = field(default_factory=lambda: ["rloo", "grpo"])  # KL-placement comparison
    fixed_point_steps: int = 1500  # full-batch Adam steps to the k3-in-loss fixed point
    fixed_point_lr: float = 0.01

    def __post_init__(self) -> None:
        for key in ("hidden", "sft_steps", "bt_pairs", "grad_trials", "steps", "log_every",
                    "fixed_point_steps"):
            check(getattr(self, key) > 0, key, "must be positive")
        check(self.grad_batch >= 2, "grad_batch", "must be at least 2 (leave-one-out needs a partner)")
        check(self.batch >= 2, "batch", "must be at least 2 (leave-one-out needs a partner)")
        for key in ("sft_lr", "lr", "beta", "fixed_point_lr"):
            check(getattr(self, key) > 0, key, "must be positive")
        for key in ("crowd_length_bonus", "crowd_fancy_bonus"):
            check(math.isfinite(getattr(self, key)), key, "must be finite")
        check(self.steps % self.log_every == 0, "steps", "must be a multiple of log_every")
        for i, s in enumerate(self.table_steps):
            check(0 < s <= self.steps and s % self.log_every == 0, f"table_steps[{i}]",
                  f"{s} must be a multiple of log_every in (0, steps]")
        for key in ("grad_estimators", "train_estimators", "kl_estimators"):
            check(len(getattr(self, key)) > 0, key, "must not be empty")
            for i, name in enumerate(getattr(self, key)):
                check(name in ESTIMATORS, f"{key}[{i}]", f"{name!r} is not one of {list(ESTIMATORS)}")
        check(self.sweep_estimator in ESTIMATORS, "sweep_estimator", f"is not one of {list(ESTIMATORS)}")
        for key in ("sweep_betas", "frontier_betas"):
            check(len(getattr(self, key)) > 0, key, "must not be empty")
            for i, b in enumerate(getattr(self, key)):
                check(b > 0, f"{key}[{i}]", "must be positive")


# ----------------------------------------------------------------------------------------------------
# the enumerated world
# ----------------------------------------------------------------------------------------------------

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


def _offset(length: int) -> int:
    # number of responses shorter than `length` = id of the first response of that length
    return (V**length - 1) // (V - 1)


def _offset_of(lengths: torch.Tensor) -> torch.Tensor:
    return (V**lengths - 1) // (V - 1)


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
    code = torch.arange(p) - _offset_of(plen)  # base-5 value of each prefix
    child = _offset_of(plen + 1)[:, None] + code[:, None] * V + torch.arange(V)[None, :]  # (P, V)
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


# ----------------------------------------------------------------------------------------------------
# the policy
# ----------------------------------------------------------------------------------------------------

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


def _gather_tokens(table: torch.Tensor, idx: torch.Tensor | None) -> torch.Tensor:
    # per-decision log-probs of responses `idx` (all when None) from a (P, V + 1) table: (B, 6)
    w = world()
    pref, act, mask = (w.dec_prefix, w.dec_action, w.dec_mask) if idx is None else (
        w.dec_prefix[idx], w.dec_action[idx], w.dec_mask[idx])
    return torch.where(mask, table[pref, act], 0.0)


def token_logprobs(policy: ToyPolicy, idx: torch.Tensor) -> torch.Tensor:
    """log pi(y_t | y_<t) of each decision of responses `idx` (B,), 0 at padding: (B, 6)."""
    return _gather_tokens(log_table(policy), idx)


def sequence_logprob(policy: ToyPolicy, idx: torch.Tensor) -> torch.Tensor:
    """log pi(y) of responses `idx` (B,): (B,)."""
    return token_logprobs(policy, idx).sum(1)


def all_logprobs(policy: ToyPolicy) -> torch.Tensor:
    """log pi(y) of every response: (N,). Differentiable."""
    return _gather_tokens(log_table(policy), None).sum(1)


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


# ----------------------------------------------------------------------------------------------------
# data, gold reward, crowd and reward model
# ----------------------------------------------------------------------------------------------------

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
    return _gather_tokens(table, None).sum(1)


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


def fit_reference(cfg: ExactConfig, data_lp: torch.Tensor, gen: torch.Generator) -> ToyPolicy:
    """Supervised fine-tuning: minimise the exact cross-entropy of the policy to the data distribution."""
    policy = new_policy(cfg.hidden, gen)
    opt = torch.optim.Adam(policy.parameters(), lr=cfg.sft_lr)
    weights = data_lp.exp()  # (N,)
    for _ in range(cfg.sft_steps):
        loss = -(weights * all_logprobs(policy)).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return policy


def make_toy(cfg: ExactConfig) -> Toy:
    """Fit the reference policy, label pairs with the crowd, fit the reward model."""
    gen = torch.Generator().manual_seed(cfg.world_seed)
    w = world()
    data_lp = data_logprobs()
    ref = fit_reference(cfg, data_lp, gen)
    ref.requires_grad_(False)
    with torch.no_grad():
        ref_table = log_table(ref)
        ref_lp = _gather_tokens(ref_table, None).sum(1)
    utility = crowd_utility(cfg.crowd_length_bonus, cfg.crowd_fancy_bonus)
    gold = gold_reward()
    a, b = sample(ref, cfg.bt_pairs, gen), sample(ref, cfg.bt_pairs, gen)  # (M,) pairs from the SFT model
    a_wins = torch.bernoulli(torch.sigmoid(utility[a] - utility[b]), generator=gen)  # (M,)
    rm_weights = fit_bradley_terry(w.counts[a], w.counts[b], a_wins)
    decided = gold[a] != gold[b]
    agree = ((gold[a] > gold[b]).to(DTYPE) == a_wins)[decided].to(DTYPE).mean().item()
    return Toy(ref=ref, ref_lp=ref_lp, ref_table=ref_table, data_lp=data_lp, reward=w.counts @ rm_weights,
               gold=gold, utility=utility, rm_weights=rm_weights, sft_kl=kl(data_lp, ref_lp),
               crowd_agreement=agree)


# ----------------------------------------------------------------------------------------------------
# exact quantities
# ----------------------------------------------------------------------------------------------------

def kl(lp_p: torch.Tensor, lp_q: torch.Tensor) -> float:
    """KL(p || q) from full log-probability vectors (N,)."""
    return float((lp_p.exp() * (lp_p - lp_q)).sum())


def optimal_logprobs(ref_lp: torch.Tensor, reward: torch.Tensor, beta: float) -> torch.Tensor:
    """log pi*(y) with pi* ∝ pi_ref · exp(r / beta), the maximiser of J: (N,)."""
    return torch.log_softmax(ref_lp + reward / beta, 0)


def exact_objective(lp: torch.Tensor, toy: Toy, beta: float) -> torch.Tensor:
    """J = sum_y pi(y) [r(y) - beta (log pi(y) - log pi_ref(y))] (a 0-d tensor, differentiable in lp)."""
    return (lp.exp() * (toy.reward - beta * (lp - toy.ref_lp))).sum()


def exact_stats(lp: torch.Tensor, toy: Toy) -> dict[str, float]:
    """Expected reward, gold, KL to the reference, length, fancy and fact counts under pi = exp(lp)."""
    w = world()
    p = lp.exp()
    return {
        "reward": float(p @ toy.reward),
        "gold": float(p @ toy.gold),
        "kl_ref": kl(lp, toy.ref_lp),
        "length": float(p @ w.lengths.to(DTYPE)),
        "fancy": float(p @ w.counts[:, list(FANCY)].sum(1)),
        "points": float(p @ w.counts[:, FACT]),
        "entropy": float(-(p * lp).sum()),
    }


# ----------------------------------------------------------------------------------------------------
# estimators
# ----------------------------------------------------------------------------------------------------

def _adv_none(ret: torch.Tensor) -> torch.Tensor:
    return ret


def _adv_mean(ret: torch.Tensor) -> torch.Tensor:
    # The batch mean includes the sample itself, which shrinks the expected gradient by (B - 1) / B.
    return ret - ret.mean()


def _adv_rloo(ret: torch.Tensor) -> torch.Tensor:
    # The baseline of sample i is the mean of the other B - 1: independent of sample i, hence unbiased.
    b = ret.numel()
    return ret - (ret.sum() - ret) / (b - 1)


def _adv_grpo(ret: torch.Tensor) -> torch.Tensor:
    return (ret - ret.mean()) / (ret.std() + 1e-6)


ADVANTAGES: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "none": _adv_none, "mean": _adv_mean, "rloo": _adv_rloo, "grpo": _adv_grpo,
}


def advantages(ret: torch.Tensor, estimator: str) -> torch.Tensor:
    """Advantages of one group of returns (B,) under `estimator` (none, mean, rloo, grpo): (B,)."""
    return ADVANTAGES[estimator](ret)


def _loss_reward_k1(policy: ToyPolicy, toy: Toy, idx: torch.Tensor, beta: float,
                    estimator: str) -> torch.Tensor:
    lp = sequence_logprob(policy, idx)  # (B,)
    # Sequence-level k1 in the return, treated as a constant: E[(R - b) ∇log pi] is then exactly ∇J.
    ret = toy.reward[idx] - beta * (lp.detach() - toy.ref_lp[idx])
    return -(advantages(ret, estimator) * lp).mean()


def _loss_loss_k3(policy: ToyPolicy, toy: Toy, idx: torch.Tensor, beta: float,
                  estimator: str) -> torch.Tensor:
    tok = token_logprobs(policy, idx)  # (B, 6)
    ref_tok = _gather_tokens(toy.ref_table, idx)  # (B, 6)
    log_ratio = ref_tok - tok  # 0 at padding, where k3 is then 0 too
    k3 = log_ratio.exp() - log_ratio - 1  # (B, 6)
    # Summed over the tokens of a response, averaged over responses: only the KL placement differs from
    # reward_k1, not the weighting of long and short responses.
    pg = -(advantages(toy.reward[idx], estimator) * tok.sum(1)).mean()
    return pg + beta * k3.sum(1).mean()


KL_PLACEMENTS: dict[str, Callable[..., torch.Tensor]] = {
    "reward_k1": _loss_reward_k1, "loss_k3": _loss_loss_k3,
}


def surrogate_loss(policy: ToyPolicy, toy: Toy, idx: torch.Tensor, beta: float, estimator: str,
                   kl_mode: str = "reward_k1") -> torch.Tensor:
    """The loss whose negative gradient is the sampled policy-gradient estimate for responses idx (B,)."""
    return KL_PLACEMENTS[kl_mode](policy, toy, idx, beta, estimator)


def flat_grad(policy: ToyPolicy) -> torch.Tensor:
    """All parameter gradients as one vector (D,)."""
    return torch.cat([p.grad.reshape(-1) for p in policy.parameters()]).clone()


def exact_gradient(policy: ToyPolicy, toy: Toy, beta: float) -> tuple[torch.Tensor, float]:
    """∇J by autograd through the sum over all responses: (gradient (D,), J)."""
    policy.zero_grad()
    obj = exact_objective(all_logprobs(policy), toy, beta)
    obj.backward()
    return flat_grad(policy), float(obj.detach())


def sampled_gradient(policy: ToyPolicy, toy: Toy, beta: float, batch: int, gen: torch.Generator,
                     estimator: str, kl_mode: str = "reward_k1") -> torch.Tensor:
    """One estimate of the ascent direction from `batch` sampled responses: (D,)."""
    idx = sample(policy, batch, gen)
    policy.zero_grad()
    (-surrogate_loss(policy, toy, idx, beta, estimator, kl_mode)).backward()
    return flat_grad(policy)


def gradient_quality(policy: ToyPolicy, toy: Toy, beta: float, estimators: list[str], trials: int,
                     batch: int, seed: int) -> dict:
    """Cosine to the exact gradient, relative MSE and norm of the mean / exact norm, per estimator.

    Every estimator sees the same sampled batches (one generator seeded with `seed` each), so the
    differences come from the estimator alone.
    """
    g_true, obj = exact_gradient(policy, toy, beta)
    out = {"exact_norm": float(g_true.norm()), "J": obj, "estimators": {}}
    for name in estimators:
        gen = torch.Generator().manual_seed(seed)
        gs = torch.stack([sampled_gradient(policy, toy, beta, batch, gen, name)
                          for _ in range(trials)])  # (trials, D)
        out["estimators"][name] = {
            "cosine": float(nn.functional.cosine_similarity(gs, g_true[None], dim=1).mean()),
            "rel_mse": float(((gs - g_true) ** 2).sum(1).mean() / g_true.pow(2).sum()),
            "norm_ratio": float(gs.mean(0).norm() / g_true.norm()),
        }
    return out


# ----------------------------------------------------------------------------------------------------
# training
# ----------------------------------------------------------------------------------------------------

def rl_train(policy: ToyPolicy, toy: Toy, beta: float, steps: int, *, estimator: str, kl_mode: str,
             batch: int, lr: float, gen: torch.Generator, log_every: int = 0,
             on_log: Callable[[int, ToyPolicy], None] | None = None) -> ToyPolicy:
    """On-policy REINFORCE with Adam: sample `batch` responses, one update per batch, `steps` times.

    `on_log(step, policy)` is called at step 0 and every `log_every` steps. Trains `policy` in place.
    """
    opt = torch.optim.Adam(policy.parameters(), lr=lr)
    if on_log is not None:
        on_log(0, policy)
    for step in range(1, steps + 1):
        idx = sample(policy, batch, gen)  # (B,)
        loss = surrogate_loss(policy, toy, idx, beta, estimator, kl_mode)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if on_log is not None and log_every and step % log_every == 0:
            on_log(step, policy)
    return policy


def k3_expected_surrogate(policy: ToyPolicy, toy: Toy, beta: float) -> torch.Tensor:
    """A scalar whose gradient is the expected ascent direction of KL-in-loss (k3) training.

    E over pi of the per-token k3 gradient at prefix s is ∇ KL(pi_ref(.|s) || pi(.|s)), and the prefixes
    are visited with probability d_pi(s), which the loss does not differentiate. So the direction is
    ∇ sum_y pi(y) r(y) - beta sum_s stopgrad(d_pi(s)) ∇ KL(pi_ref(.|s) || pi(.|s)).
    """
    table = log_table(policy)  # (P, V + 1)
    lp = _gather_tokens(table, None).sum(1)  # (N,)
    reach = (lp[: table.shape[0]] - table[:, END]).detach().exp()  # (P,) chance of writing prefix s
    kl_s = (toy.ref_table.exp() * (toy.ref_table - table)).sum(1)  # (P,)
    return (lp.exp() * toy.reward).sum() - beta * (reach * kl_s).sum()


def k3_fixed_point(toy: Toy, beta: float, steps: int, lr: float) -> tuple[ToyPolicy, float]:
    """Where KL-in-loss (k3) training converges in expectation: full-batch Adam on its exact direction.

    Starts from the reference policy; returns the policy and the norm of the remaining direction.
    """
    policy = clone_policy(toy.ref).requires_grad_(True)
    opt = torch.optim.Adam(policy.parameters(), lr=lr)
    for _ in range(steps):
        opt.zero_grad()
        (-k3_expected_surrogate(policy, toy, beta)).backward()
        opt.step()
    opt.zero_grad()
    k3_expected_surrogate(policy, toy, beta).backward()
    return policy, float(flat_grad(policy).norm())


# ----------------------------------------------------------------------------------------------------
# the demonstrations
# ----------------------------------------------------------------------------------------------------

def _tracker(toy: Toy, beta: float, targets: dict[str, torch.Tensor]) -> tuple[dict, Callable]:
    # records exact J, stats and KL(pi || target) for each named target policy at every logged step
    rec: dict[str, list] = {"step": [], "J": [], **{f"kl_{k}": [] for k in targets},
                            "kl_ref": [], "reward": [], "gold": [], "length": []}

    @torch.no_grad()
    def on_log(step: int, policy: ToyPolicy) -> None:
        lp = all_logprobs(policy)
        st = exact_stats(lp, toy)
        rec["step"].append(step)
        rec["J"].append(float(exact_objective(lp, toy, beta)))
        for k, t in targets.items():
            rec[f"kl_{k}"].append(kl(lp, t))
        for k in ("kl_ref", "reward", "gold", "length"):
            rec[k].append(st[k])

    return rec, on_log


def _row(lp: torch.Tensor, toy: Toy, beta: float, opt_lp: torch.Tensor) -> dict[str, float]:
    return {**exact_stats(lp, toy), "J": float(exact_objective(lp, toy, beta)), "kl_opt": kl(lp, opt_lp)}


def _top(lp: torch.Tensor, toy: Toy, k: int = 3) -> list[dict]:
    # the k most likely responses, to show what a policy actually writes
    p, idx = lp.exp().topk(k)
    return [{"text": show(int(i)), "prob": float(q), "reward": float(toy.reward[i]),
             "gold": float(toy.gold[i])} for q, i in zip(p, idx)]


def run_all(cfg: ExactConfig, progress: Callable[[str], None] | None = None) -> dict:
    """All four demonstrations; returns a JSON-able dict of every number the report needs."""
    say = progress or (lambda _msg: None)
    t0 = time.perf_counter()
    say("world: reference policy and reward model")
    toy = make_toy(cfg)
    ref_lp = toy.ref_lp
    beta = cfg.beta
    opt_lp = optimal_logprobs(ref_lp, toy.reward, beta)
    out: dict = {"config": dataclasses.asdict(cfg), "tokens": list(TOKENS)}
    out["world"] = {
        "n_responses": world().n, "n_prefixes": world().p, "sft_kl": toy.sft_kl,
        "crowd_agreement": toy.crowd_agreement,
        "rm_weights": dict(zip(TOKENS, toy.rm_weights.tolist())),
        "reference": {**exact_stats(ref_lp, toy), "J": float(exact_objective(ref_lp, toy, beta))},
        "reference_top": _top(ref_lp, toy),
        "data": exact_stats(toy.data_lp, toy),
    }

    say("a: gradient quality")
    probe = clone_policy(toy.ref).requires_grad_(True)
    out["gradient_quality"] = {"beta": beta, "trials": cfg.grad_trials, "batch": cfg.grad_batch,
                               **gradient_quality(probe, toy, beta, cfg.grad_estimators, cfg.grad_trials,
                                                  cfg.grad_batch, cfg.grad_seed)}

    say("d: exact fixed point of KL-in-loss (k3)")
    fp_policy, fp_residual = k3_fixed_point(toy, beta, cfg.fixed_point_steps, cfg.fixed_point_lr)
    with torch.no_grad():
        fp_lp = all_logprobs(fp_policy)

    runs: dict[tuple, tuple[dict, torch.Tensor]] = {}

    def train(estimator: str, kl_mode: str, b: float) -> tuple[dict, torch.Tensor]:
        # identical (estimator, placement, beta) runs are shared between demonstrations
        key = (estimator, kl_mode, b)
        if key not in runs:
            say(f"train {estimator} {kl_mode} beta={b:g}")
            targets = {"opt": optimal_logprobs(ref_lp, toy.reward, b)}
            if b == beta:
                targets["fp"] = fp_lp
            rec, on_log = _tracker(toy, b, targets)
            policy = clone_policy(toy.ref).requires_grad_(True)
            rl_train(policy, toy, b, cfg.steps, estimator=estimator, kl_mode=kl_mode, batch=cfg.batch,
                     lr=cfg.lr, gen=torch.Generator().manual_seed(cfg.train_seed), log_every=cfg.log_every,
                     on_log=on_log)
            with torch.no_grad():
                runs[key] = (rec, all_logprobs(policy))
        return runs[key]

    opt_stats = _row(opt_lp, toy, beta, opt_lp)
    out["training"] = {"beta": beta, "J_ref": out["world"]["reference"]["J"], "J_opt": opt_stats["J"],
                       "kl_ref_opt": opt_stats["kl_ref"], "gold_opt": opt_stats["gold"],
                       "table_steps": cfg.table_steps,
                       "curves": {e: train(e, "reward_k1", beta)[0] for e in cfg.train_estimators}}

    sweep = []
    for b in cfg.sweep_betas:
        b_opt = optimal_logprobs(ref_lp, toy.reward, b)
        _, lp = train(cfg.sweep_estimator, "reward_k1", b)
        sweep.append({"beta": b, "policy": "RL", **_row(lp, toy, b, b_opt), "top": _top(lp, toy)})
        sweep.append({"beta": b, "policy": "optimal", **_row(b_opt, toy, b, b_opt), "top": _top(b_opt, toy)})
    frontier = [{"beta": b, **exact_stats(optimal_logprobs(ref_lp, toy.reward, b), toy)}
                for b in cfg.frontier_betas]
    out["sweep"] = {"estimator": cfg.sweep_estimator, "rows": sweep, "frontier": frontier}

    rows = [{"policy": "optimal", "estimator": "", "kl_mode": "", **_row(opt_lp, toy, beta, opt_lp),
             "kl_fp": kl(opt_lp, fp_lp)},
            {"policy": "k3 fixed point", "estimator": "", "kl_mode": "", **_row(fp_lp, toy, beta, opt_lp),
             "kl_fp": 0.0}]
    curves = {}
    for est in cfg.kl_estimators:
        for mode in KL_MODES:
            rec, lp = train(est, mode, beta)
            rows.append({"policy": "RL", "estimator": est, "kl_mode": mode, **_row(lp, toy, beta, opt_lp),
                         "kl_fp": kl(lp, fp_lp)})
            curves[f"{est} {mode}"] = rec
    out["kl_placement"] = {"beta": beta, "fixed_point_residual": fp_residual, "rows": rows, "curves": curves}
    out["seconds"] = time.perf_counter() - t0
    return out


def headline_metrics(results: dict) -> dict:
    """The key numbers of `run_all`'s results, flat, for reports/metrics/exact.json."""
    m: dict[str, float] = {}
    for name, q in results["gradient_quality"]["estimators"].items():
        m[f"grad_cosine_{name}"] = q["cosine"]
        m[f"grad_rel_mse_{name}"] = q["rel_mse"]
    for name, rec in results["training"]["curves"].items():
        m[f"final_kl_opt_{name}"] = rec["kl_opt"][-1]
        m[f"final_J_{name}"] = rec["J"][-1]
    m["J_opt"] = results["training"]["J_opt"]
    for row in results["sweep"]["rows"]:
        # no dots in metric names: dvc metrics show uses dots for nesting
        tag = f"beta{row['beta']:g}_{'rl' if row['policy'] == 'RL' else 'opt'}".replace(".", "p")
        m[f"sweep_reward_{tag}"] = row["reward"]
        m[f"sweep_gold_{tag}"] = row["gold"]
    for row in results["kl_placement"]["rows"]:
        key = f"{row['estimator']}_{row['kl_mode']}" if row["policy"] == "RL" else row["policy"].replace(" ", "_")
        m[f"kl_placement_kl_opt_{key}"] = row["kl_opt"]
    m["reference_gold"] = results["world"]["reference"]["gold"]
    return m
