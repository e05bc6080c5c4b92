"""Estimators over sampled outcomes that the evaluation stages and the study reports both use: a leaf
module, so a report depends on no sampling or model code and an edit to the statistics of the reports
reruns no evaluation."""

from __future__ import annotations

import math


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples of which c are correct: 1 - C(n-c, k) / C(n, k).

    Computed in exact integer arithmetic and rounded once, so it is the correctly rounded value
    for any n (no overflow or cancellation at n = 1024)."""
    if n < 1:
        raise ValueError(f"n={n}: need at least one sample")
    if not 0 <= c <= n:
        raise ValueError(f"c={c}: number correct must be in [0, n={n}]")
    if not 1 <= k <= n:
        raise ValueError(f"k={k}: must be in [1, n={n}]")
    total = math.comb(n, k)
    return (total - math.comb(n - c, k)) / total  # int / int is correctly rounded in Python
