"""Evaluation of a model on fixed problem sets.

- `greedy_accuracy`, `failure_mix`: greedy decoding; accuracy per difficulty, and the share of each
  outcome type of the task (`Problem.classify`; `Task.failure_types`). `greedy_eval`
  gives both from one decoding, with the per-problem rows (`outcome_rows`, written by `outcomes_csv`)
  that the studies' paired confidence intervals resample.
- `pass_curve`: N samples per problem, the unbiased pass@k estimator `pass_at_k` averaged over
  problems, beside the task's random-guess baseline (`Problem.random_guess`).
- `think_profile`: how often sampled responses write a well-formed trace (and any trace, beside it), and
  how accurate they are with and without one, per difficulty.
- `distinct_answers`, `sample_entropy`: diversity of a model's own samples, each shown beside a uniform
  guess's value (`uniform_guess_diversity`).

Results per difficulty sit under "by_<difficulty>" (hop world: "by_k"), with string keys ("3") so
they can be written as JSON metrics as they are.

Correctness is `verified` (tasks/base.py: a right answer after a trace right step by step) under every
plain name (`acc`, `correct`, `sampled`, `sampled_acc`, `pass_at_k`, `counts`); the same measure with a
right answer alone (`Problem.is_correct`, which a guess passes) sits beside it under the name with the suffix
`_answer` (`acc_answer`, `correct_answer`, ...). The outcome types (`failure_mix`, `outcome`) classify the
answer, so their "correct" is answer-only. Verified never exceeds answer-only (`check_verified`).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

import torch

from .config import check
from .logprobs import shared_token_logprobs, token_logprobs
from .metrics import pass_at_k
from .model import TinyReasoner
from .sampling import response_of, sample, sample_responses
from .tasks import PAD_ID, Problem, encode, trace_of
from .tasks.base import verified
from .tokens import encode_pairs, pad_ids


@dataclass
class EvalConfig:
    """The `eval:` params section: sampling evaluation of a model on a fixed set."""

    passk_N: int = 8  # samples per problem: sampled accuracy per problem and pass@k
    passk_ks: list[int] = field(default_factory=lambda: [1, 2, 4, 8])  # k values (k > passk_N skipped)
    temperature: float = 1.0  # sampling temperature
    seed: int = 7  # seeds the sampling generator
    entropy_samples: int = 2  # samples per problem whose token entropy is measured

    def __post_init__(self):
        check(self.passk_N >= 1, "passk_N", f"must be at least 1, got {self.passk_N}")
        check(bool(self.passk_ks) and all(k >= 1 for k in self.passk_ks), "passk_ks",
              f"must be a non-empty list of k >= 1, got {self.passk_ks}")
        check(self.temperature > 0, "temperature", f"must be positive, got {self.temperature}")
        check(self.entropy_samples >= 1, "entropy_samples", f"must be at least 1, got {self.entropy_samples}")


# ---------------------------------------------------------------------------------------------
# Estimators and baselines


def auc(scores: list[float], labels: list[bool]) -> float | None:
    """Area under the ROC curve (ties count one half); None when one class is absent."""
    pos = sum(1 for y in labels if y)
    neg = len(labels) - pos
    if pos == 0 or neg == 0:
        return None
    order = sorted(range(len(scores)), key=lambda i: scores[i])
    # average 1-based rank of each group of tied scores, then the Mann-Whitney U of the positives
    rank_sum, i = 0.0, 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and scores[order[j + 1]] == scores[order[i]]:
            j += 1
        mid = (i + j) / 2 + 1
        rank_sum += mid * sum(1 for t in order[i: j + 1] if labels[t])
        i = j + 1
    return (rank_sum - pos * (pos + 1) / 2) / (pos * neg)


# ---------------------------------------------------------------------------------------------
# Responses


def answer_only(problem: Problem, response: str) -> bool:
    return problem.is_correct(response)


def judged(problems: list[Problem], responses: list[str]) -> tuple[list[bool], list[bool]]:
    """(verified, answer-only) correctness of one response per problem."""
    ok = [verified(p, r) for p, r in zip(problems, responses)]
    return ok, check_verified(ok, [p.is_correct(r) for p, r in zip(problems, responses)])


def check_verified(ver: list, ans: list) -> list:
    """`ans`, after checking that no verified value exceeds its answer-only one (a verified sample has a
    right answer, so one that does is a bug in a task's `verified` or in what was counted)."""
    if any(v > a for v, a in zip(ver, ans, strict=True)):
        raise ValueError("verified correctness exceeds answer-only correctness: a verified sample must be right")
    return ans


def failure_mix_of(problems: list[Problem], responses: list[str]) -> dict[str, float]:
    """Fraction of responses of each outcome type of their task (all types present, summing to 1)."""
    if not problems:
        raise ValueError("problems: empty evaluation set")
    counts = dict.fromkeys(problems[0].task.failure_types, 0)
    for p, r in zip(problems, responses):
        counts[p.classify(r)] += 1
    return {t: c / len(problems) for t, c in counts.items()}


def distinct_answers(problems: list[Problem], responses: list[list[str]]) -> float:
    """Mean number of distinct parsed answers per problem (an unparsable answer counts as one value)."""
    if not responses:
        raise ValueError("responses: empty")
    return sum(len({p.task.parse_answer(r) for r in rs}) for p, rs in zip(problems, responses)) / len(responses)


def uniform_guess_diversity(problems: list[Problem], N: int) -> dict[str, float]:
    """What a uniform guess among the n answers each prompt allows gives for the two diversity measures, averaged
    over the problems, from the task's own guess (`Problem.random_guess`, pass@k = 1 - (1 - 1/n)^k):

    - "distinct_answers": the expected number of distinct values among N uniform draws, n (1 - (1 - 1/n)^N):
      each of the n answers is drawn at least once with the guess's pass@N, so it is random_guess(N) /
      random_guess(1) per problem;
    - "answer_entropy": the guess's entropy over the answer, log n (nats; n = 1 / random_guess(1)). The measured
      entropy (`sample_entropy`) is per token over the whole response (trace, mark, answer and end, each over
      the whole vocabulary), not the answer's: log n is the reference for the answer token alone, where a
      uniform guess has it (a policy that guesses the answer uniformly and writes every other token for certain
      has a per-token mean of log n over the response's length); it is shown beside the measure under its own
      name, never as its floor or ceiling."""
    if not problems:
        raise ValueError("problems: empty evaluation set")
    if N < 1:
        raise ValueError(f"N={N}: must be at least 1")
    return {"distinct_answers": sum(p.random_guess(N) / p.random_guess(1) for p in problems) / len(problems),
            "answer_entropy": sum(-math.log(p.random_guess(1)) for p in problems) / len(problems)}


# ---------------------------------------------------------------------------------------------
# Greedy evaluation


def greedy_responses(model, problems: list[Problem], chunk: int = 128) -> list[str]:
    """Greedy responses (cut at `$`), with room for each problem's budget so an overshoot is visible.

    Chunks of 128 prompts: as fast as larger chunks or faster, and the key-value cache of a chunk, not of the
    whole set, sets the peak memory (measured: docs/performance.md, "Measurements the code cites")."""
    if not problems:
        return []
    max_new = max(p.budget for p in problems)
    prompts = [p.prompt for p in problems]
    outs: list[str] = []
    for i in range(0, len(prompts), chunk):
        outs += sample(model, prompts[i: i + chunk], max_new, temperature=0)
    return [response_of(o) for o in outs]


def by_key(problems: list[Problem]) -> str:
    """The key results per difficulty sit under: "by_<the task's difficulty>" (hop world: "by_k")."""
    return f"by_{problems[0].task.difficulty}"


def by_difficulty(problems: list[Problem], values: list) -> dict[str, float]:
    """{difficulty: mean of its values} in increasing difficulty, JSON-able keys."""
    groups: dict[int, list] = defaultdict(list)
    for p, v in zip(problems, values):
        groups[p.difficulty].append(v)
    return {str(d): sum(v) / len(v) for d, v in sorted(groups.items())}


def accuracies(problems: list[Problem], ok: list, right: list) -> dict:
    """{"acc", "acc_answer", "by_<difficulty>", "by_<difficulty>_answer"} from verified and answer-only hits."""
    by = by_key(problems)
    return {"acc": sum(ok) / len(ok), "acc_answer": sum(right) / len(right),
            by: by_difficulty(problems, ok), f"{by}_answer": by_difficulty(problems, right)}


def greedy_accuracy(model, problems: list[Problem]) -> dict:
    """Greedy accuracy, verified and answer-only (`accuracies`), overall and per difficulty (JSON-able keys)."""
    if not problems:
        raise ValueError("problems: empty evaluation set")
    return accuracies(problems, *judged(problems, greedy_responses(model, problems)))


def failure_mix(model, problems: list[Problem]) -> dict[str, float]:
    """Fraction of each outcome type (the task's failure_types) under greedy decoding."""
    return failure_mix_of(problems, greedy_responses(model, problems))


def outcome_rows(set_name: str, problems: list[Problem], responses: list[str]) -> list[dict]:
    """One row per problem, in the set's order: its identity (`Problem.key`), difficulty, whether the
    response is verified (`correct`, 0/1) and whether its answer is right (`correct_answer`), and its outcome
    type. These are what the studies' paired intervals resample: two checkpoints evaluated on the same set
    line up problem by problem."""
    name = problems[0].task.difficulty if problems else "difficulty"
    ok, right = judged(problems, responses)
    return [{"set": set_name, "problem": p.key, name: p.difficulty, "correct": int(v), "correct_answer": int(a),
             "outcome": p.classify(r)} for p, r, v, a in zip(problems, responses, ok, right)]


def greedy_eval(model, problems: list[Problem], set_name: str) -> tuple[dict, list[dict]]:
    """One greedy decoding of a set, summarised and per problem:
    ({**accuracies, "failure_mix": {type: share}}, outcome_rows)."""
    if not problems:
        raise ValueError("problems: empty evaluation set")
    rows = outcome_rows(set_name, problems, greedy_responses(model, problems))
    mix = dict.fromkeys(problems[0].task.failure_types, 0)
    for r in rows:
        mix[r["outcome"]] += 1
    return ({**accuracies(problems, [r["correct"] for r in rows], [r["correct_answer"] for r in rows]),
             "failure_mix": {t: c / len(rows) for t, c in mix.items()}}, rows)


def outcomes_csv(rows: list[dict]) -> str:
    """Per-problem outcomes (outcome_rows of one or more sets) as CSV text: set, problem, the task's
    difficulty, correct, correct_answer, outcome and, when the rows carry them (set_report), `sampled` and
    `sampled_answer`."""
    if not rows:
        raise ValueError("rows: no outcomes to write")
    cols = list(rows[0])
    lines = [",".join(cols)] + [",".join(str(r[c]) for c in cols) for r in rows]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# Sampling evaluation


def sample_set(model, problems: list[Problem], N: int, temperature: float = 1.0, seed: int = 7) -> list[list[str]]:
    """N responses per problem, drawn from a generator seeded with `seed` (on the model's device).

    In chunks of 512 rows (whole problems): faster than larger chunks, with less memory (docs/performance.md,
    "Measurements the code cites"). The chunk is part of what is computed: another one draws other samples."""
    if N < 1:
        raise ValueError(f"N={N}: must be at least 1")
    device = next(model.parameters()).device
    gen = torch.Generator(device=device).manual_seed(seed)
    return sample_responses(model, problems, N, temperature, gen, chunk=512)


def pass_curve_of(problems: list[Problem], responses: list[list[str]], ks: list[int],
                  judge=verified) -> tuple[dict, list[int]]:
    """({k: mean pass@k}, per-problem correct counts) from N samples per problem; k > N is skipped. A sample
    is correct by `judge(problem, response)`: verified, or `answer_only`."""
    if not problems:
        raise ValueError("problems: empty evaluation set")
    N = len(responses[0])
    if any(len(rs) != N for rs in responses):
        raise ValueError("responses: every problem needs the same number of samples")
    counts = [sum(judge(p, r) for r in rs) for p, rs in zip(problems, responses)]
    curve = {str(k): sum(pass_at_k(N, c, k) for c in counts) / len(counts) for k in ks if k <= N}
    return curve, counts


def pass_curve(model, problems: list[Problem], N: int, ks: list[int], temperature: float = 1.0,
               seed: int = 7, judge=verified) -> tuple[dict, list[int]]:
    """pass@k curve: ({k: mean unbiased pass@k}, per-problem correct counts out of N samples, by `judge`)."""
    return pass_curve_of(problems, sample_set(model, problems, N, temperature, seed), ks, judge)


def baseline_curve(problems: list[Problem], ks: list[int]) -> dict:
    """{k: mean random-guess pass@k over the problems (`Problem.random_guess`)}."""
    return {str(k): sum(p.random_guess(k) for p in problems) / len(problems) for k in ks}


@torch.inference_mode()
def sample_entropy(model, problems: list[Problem], responses: list[list[str]], per_problem: int = 16,
                   chunk: int = 512) -> float:
    """Mean entropy (nats) of the model's next-token distribution over the tokens of its own sampled
    responses (the first `per_problem` of each problem), weighted by token.

    A TinyReasoner scores each problem's responses as one group on its prompt, computed once
    (`shared_token_logprobs`, chunks of `chunk` rows); any other next-token model (the tests' hand-built
    ones) scores prompt + response rows with its plain forward (`sample_entropy_plain`). Both give the
    same number up to float summation order (tests/test_evaluate.py)."""
    if not isinstance(model, TinyReasoner):
        return sample_entropy_plain(model, problems, responses, per_problem, chunk)
    groups = [(p.prompt, rs[:per_problem]) for p, rs in zip(problems, responses)]
    groups = [(prompt, rs) for prompt, rs in groups if any(rs)]
    if not groups:
        raise ValueError("responses: nothing to measure")
    G = max(len(rs) for _, rs in groups)  # every problem has the same number of samples; pad any short one
    device = next(model.parameters()).device
    total, tokens = 0.0, 0
    for i in range(0, len(groups), max(1, chunk // G)):
        part = groups[i: i + max(1, chunk // G)]
        prompts = pad_ids([encode(prompt) for prompt, _ in part], device)  # (P, L)
        lens = torch.tensor([len(prompt) for prompt, _ in part], device=device)
        resp = pad_ids([encode(r) for _, rs in part for r in [*rs, *[""] * (G - len(rs))]], device)  # (P * G, R)
        _, ent = shared_token_logprobs(model, prompts, lens, resp.view(len(part), G, -1))  # (P * G, R)
        m = resp != PAD_ID
        total += float(ent[m].sum())
        tokens += int(m.sum())
    return total / tokens


@torch.inference_mode()
def sample_entropy_plain(model, problems: list[Problem], responses: list[list[str]], per_problem: int = 16,
                         chunk: int = 512) -> float:
    """sample_entropy through the model's plain forward on prompt + response rows (the reference path)."""
    pairs = [(p.prompt, r) for p, rs in zip(problems, responses) for r in rs[:per_problem] if r]
    if not pairs:
        raise ValueError("responses: nothing to measure")
    device = next(model.parameters()).device
    total, tokens = 0.0, 0.0
    for i in range(0, len(pairs), chunk):
        X, M = encode_pairs(pairs[i: i + chunk], device)
        _, ent = token_logprobs(model, X)  # (B, T-1): entropy of the distribution that chose X[:, t+1]
        m = M[:, 1:]
        total += float((ent * m).sum())
        tokens += float(m.sum())
    return total / tokens


def think_profile(model, problems: list[Problem], N: int = 16, seed: int = 3, temperature: float = 1.0) -> dict:
    """Thinking behaviour of N samples per problem.

    {"think": share of responses that think *well* (`Task.thinks_well`: a trace, the mark, one answer, the end),
     "think_any": share with at least one trace step before the answer mark, of any form (`Task.thinks`),
     "acc" / "acc_answer": verified / answer-only accuracy, "len": mean response length,
     "acc_think" / "acc_think_answer": of the responses that think well, "acc_direct": answer-only accuracy of
     the responses with no trace step at all (never verified: it is 0 by definition), each 0 when there are no
     such responses, "by_<difficulty>": {difficulty: {"think", "think_any", "acc", "acc_answer", "trace": mean
     trace length of the responses that think well}}}

    The think rate is the well-formed one: `thinks` passes a degenerate policy (trace steps then garbage, or two
    answers), which has learned the look of a trace and not the form the task asks for. The looser count sits
    beside it as "think_any". The responses split three ways, which sum to all of them: thinking well
    ("think"), a trace of the wrong form (think_any − think: neither thinking nor direct, in no conditional
    accuracy) and direct, with no trace (1 − think_any, what "acc_direct" is over)."""
    if not problems:
        raise ValueError("problems: empty evaluation set")
    responses = sample_set(model, problems, N, temperature, seed)
    keys = ("n", "think", "think_any", "acc", "acc_answer", "acc_think", "acc_think_answer", "acc_direct", "len")
    tot = dict.fromkeys(keys, 0)
    per_k: dict[int, dict] = {}
    for p, rs in zip(problems, responses):
        d = per_k.setdefault(p.difficulty, dict.fromkeys(("n", "think", "think_any", "acc", "acc_answer", "trace"), 0))
        for r in rs:
            any_trace, well, right = p.task.thinks(r), p.task.thinks_well(r), p.is_correct(r)
            ok = verified(p, r)
            check_verified([ok], [right])
            for acc in (tot, d):
                acc["n"] += 1
                acc["think"] += well
                acc["think_any"] += any_trace
                acc["acc"] += ok
                acc["acc_answer"] += right
            tot["acc_think"] += ok and well
            tot["acc_think_answer"] += right and well
            tot["acc_direct"] += right and not any_trace
            tot["len"] += len(r)
            d["trace"] += len(trace_of(r)) if well else 0
    n, n_think, n_direct = tot["n"], tot["think"], tot["n"] - tot["think_any"]
    return {"think": n_think / n, "think_any": tot["think_any"] / n, "acc": tot["acc"] / n,
            "acc_answer": tot["acc_answer"] / n, "len": tot["len"] / n,
            "acc_think": tot["acc_think"] / n_think if n_think else 0.0,
            "acc_think_answer": tot["acc_think_answer"] / n_think if n_think else 0.0,
            "acc_direct": tot["acc_direct"] / n_direct if n_direct else 0.0,
            by_key(problems): {
                str(k): {"think": d["think"] / d["n"], "think_any": d["think_any"] / d["n"], "acc": d["acc"] / d["n"],
                         "acc_answer": d["acc_answer"] / d["n"],
                         "trace": d["trace"] / d["think"] if d["think"] else 0.0} for k, d in sorted(per_k.items())}}


def sampling_report(model, problems: list[Problem], cfg: EvalConfig) -> dict:
    """One sampling pass (cfg.passk_N per problem) summarised: pass@k curve, verified and answer-only, and
    its random-guess baseline, per-problem correct counts (verified and answer-only), distinct answers and
    token entropy of the samples, and beside them a uniform guess's (`uniform_guess_diversity`: "guess_distinct"
    and "guess_answer_entropy", the answer token's entropy log n)."""
    responses = sample_set(model, problems, cfg.passk_N, cfg.temperature, cfg.seed)
    guess = uniform_guess_diversity(problems, cfg.passk_N)
    curve, counts = pass_curve_of(problems, responses, cfg.passk_ks)
    curve_answer, counts_answer = pass_curve_of(problems, responses, cfg.passk_ks, answer_only)
    return {"pass_at_k": curve, "pass_at_k_answer": curve_answer,
            "random_baseline": baseline_curve(problems, [int(k) for k in curve]),
            "counts": counts, "counts_answer": check_verified(counts, counts_answer),
            "distinct_answers": distinct_answers(problems, responses),
            "entropy": sample_entropy(model, problems, responses, cfg.entropy_samples),
            "guess_distinct": guess["distinct_answers"], "guess_answer_entropy": guess["answer_entropy"]}


def set_report(model, problems: list[Problem], set_name: str, cfg: EvalConfig) -> tuple[dict, list[dict]]:
    """Greedy decoding and one sampling pass of a set: (summary, outcome rows). Each row also carries
    `sampled` and `sampled_answer`, the share of its cfg.passk_N samples that are verified / right (its pass@1
    at cfg.temperature): greedy accuracy saturates on a converged model; `sampled_answer` is what RL's reward
    measures."""
    greedy, rows = greedy_eval(model, problems, set_name)
    report = sampling_report(model, problems, cfg)
    for row, count, count_answer in zip(rows, report["counts"], report["counts_answer"]):
        row["sampled"] = round(count / cfg.passk_N, 6)
        row["sampled_answer"] = round(count_answer / cfg.passk_N, 6)
    draws = cfg.passk_N * len(problems)
    return {"greedy": {k: v for k, v in greedy.items() if k != "failure_mix"}, "failure_mix": greedy["failure_mix"],
            "sampled_acc": sum(report["counts"]) / draws,
            "sampled_acc_answer": sum(report["counts_answer"]) / draws,
            **{k: report[k] for k in ("pass_at_k", "pass_at_k_answer", "random_baseline", "distinct_answers",
                                      "guess_distinct", "entropy", "guess_answer_entropy")}}, rows
