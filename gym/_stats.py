"""Statistics for benchmark reports: pass@k, pass^k, bootstrap intervals, paired comparison.

Tasks are the unit of resampling: samples of one task are correlated, so intervals
resample tasks (with all their samples), never individual episodes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import comb

import numpy as np

__all__ = [
    "TaskCounts",
    "bootstrap_ci",
    "pass_at_k",
    "pass_hat_k",
    "paired_bootstrap",
    "transitions",
]

TaskCounts = tuple[int, int]
"""(n samples, c passing samples) of one task."""


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one task (Chen et al. 2021): 1 - C(n-c, k) / C(n, k).

    Args:
        n: samples drawn for the task (k <= n).
        c: samples that passed.
        k: the k of pass@k.
    """
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    return 1.0 - float(np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k of one task (tau-bench): the chance that k samples drawn all pass, C(c,k)/C(n,k)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass^k needs 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
    return comb(c, k) / comb(n, k)


def bootstrap_ci(
    values: Sequence[float],
    *,
    stat: Callable[[np.ndarray], float] = lambda a: float(a.mean()),
    n_boot: int = 2000,
    alpha: float = 0.05,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of a statistic over per-task values.

    Args:
        values: one value per task (for example its pass@1).
        stat: the statistic of a resample (the mean by default).
        n_boot: number of resamples.
        alpha: 1 - coverage (0.05 gives a 95% interval).
        seed: RNG seed, so that a report is reproducible.
    """
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        return (float("nan"), float("nan"))
    if data.size == 1:
        return (float(data[0]), float(data[0]))
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, data.size, size=(n_boot, data.size))
    stats = np.array([stat(data[row]) for row in idx])
    lo, hi = np.quantile(stats, [alpha / 2, 1 - alpha / 2])
    return (float(lo), float(hi))


def paired_bootstrap(
    a: Sequence[float],
    b: Sequence[float],
    *,
    n_boot: int = 2000,
    alpha: float = 0.05,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Mean difference b - a over paired tasks, with a paired bootstrap interval.

    Returns:
        (difference, low, high).
    """
    if len(a) != len(b):
        raise ValueError("paired samples must have the same length")
    diff = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    if diff.size == 0:
        return (float("nan"), float("nan"), float("nan"))
    lo, hi = bootstrap_ci(diff, n_boot=n_boot, alpha=alpha, seed=seed)
    return (float(diff.mean()), lo, hi)


def transitions(a: Sequence[bool], b: Sequence[bool]) -> dict[str, int]:
    """Counts of maintained, improved, regressed and persistent-failure tasks from A to B."""
    out = {"maintained": 0, "improved": 0, "regressed": 0, "persistent_failure": 0}
    for before, after in zip(a, b, strict=True):
        key = ("persistent_failure", "improved", "regressed", "maintained")[2 * before + after]
        out[key] += 1
    return out
