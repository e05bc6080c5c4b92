"""What an RL step records: its rollouts (`rollout/*`, `reward/*`, `losses/kl`), the unfiltered and kept
batches under dynamic sampling, and the wrong responses a learned reward loved."""

from __future__ import annotations

import torch

from .batch import Batch


def rollout_record(batch: Batch, ent: torch.Tensor, kl: float | None, m: torch.Tensor) -> dict:
    """What the rollouts were like: rewards, lengths, thinking, entropy and KL to the reference (no `losses/kl`
    when kl is None: a run without a reference).

    `rollout/think_rate` counts the rollouts that think well (`Task.thinks_well`: a trace, the mark, one answer,
    the end), the measure: a degenerate policy writing trace steps then garbage passes `thinks` alone, which
    `rollout/think_any_rate` keeps beside it (any trace step before the mark, of any form)."""
    n = len(batch.responses)
    pairs = list(zip(batch.problems, batch.responses))
    record = {"reward/proxy": batch.proxy.mean().item(), "reward/true": batch.true.mean().item(),
              "rollout/zero_var_frac": batch.zero_frac,
              "rollout/length": sum(map(len, batch.responses)) / n,
              "rollout/length_wrong": mean_length(batch.responses, batch.true, correct=False),
              "rollout/think_rate": sum(p.task.thinks_well(x) for p, x in pairs) / n,
              "rollout/think_any_rate": sum(p.task.thinks(x) for p, x in pairs) / n,
              "rollout/entropy": float((ent * m).sum() / m.sum())}
    return record if kl is None else {**record, "losses/kl": kl}


def step_record(unfiltered: dict | None, own: dict) -> dict:
    """The step's rollout records: the batch's own, or under dynamic sampling the unfiltered ones with the kept
    batch's own under `filtered/`."""
    if unfiltered is None:
        return own
    return {**unfiltered, **{"filtered/" + k.split("/", 1)[1]: v for k, v in own.items()}}


def mean_length(responses: list[str], true: torch.Tensor, correct: bool) -> float:
    """Mean length of the responses that are (not) correct; 0 when there are none (Dr. GRPO's length bias
    shows in the wrong ones)."""
    lens = [len(r) for r, t in zip(responses, true.tolist()) if (t > 0.5) == correct]
    return sum(lens) / len(lens) if lens else 0.0


def fooled_examples(batch: Batch, limit: int = 3) -> list[dict]:
    """Responses the proxy reward loves (> 0.9) that are wrong."""
    out = []
    for p, r, proxy, true in zip(batch.problems, batch.responses, batch.proxy.tolist(), batch.true.tolist()):
        if proxy > 0.9 and true == 0:
            out.append({"prompt": p.prompt, "gold": p.target("cot"), "response": r,
                        "proxy": round(proxy, 3)})
            if len(out) == limit:
                break
    return out
