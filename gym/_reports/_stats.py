"""Statistics for benchmark reports: pass@k, pass^k, intervals, paired comparison.

Which interval goes where (docs/statistics.md says why):

* pass@1 (and pass^1): an exact binomial (Clopper-Pearson) interval, `pass_rate_ci`.
  It never collapses at 0/n or n/n, and covers the true rate at least 95% of the time
  for every rate and sample size. With several samples per task, the samples of one
  task are correlated: the interval uses the effective number of independent trials
  (between the number of tasks and the number of episodes) that the spread of the
  per-task rates implies.
* pass@k for k > 1, pass^k, mean reward, and paired differences between runs: a
  percentile bootstrap over tasks (`bootstrap_ci`, `paired_bootstrap`). Tasks are the
  unit of resampling: a task is resampled with all its samples, never episodes alone.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from math import comb

import numpy as np

__all__ = [
    "TaskCounts",
    "bootstrap_ci",
    "clopper_pearson",
    "pass_at_k",
    "pass_hat_k",
    "pass_rate_ci",
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
    stat: Callable[[np.ndarray], float] | None = None,
    n_boot: int = 2000,
    alpha: float = 0.05,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of a statistic over per-task values.

    Args:
        values: one value per task (for example its pass@1).
        stat: the statistic of a resample; None: the mean (computed for all resamples
            at once, which is what reports use).
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
    if stat is None:
        stats = data[idx].mean(axis=1)
    else:
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


@functools.lru_cache(maxsize=512)
def _log_choose(n: int) -> np.ndarray:
    """The logarithms of C(n, k) for k = 0..n."""
    k = np.arange(1, n + 1, dtype=float)
    return np.concatenate([[0.0], np.cumsum(np.log(n - k + 1) - np.log(k))])


def _upper_tail(x: int, n: int, p: float) -> float:
    """P(X >= x) for X ~ Binomial(n, p), 0 < p < 1."""
    k = np.arange(n + 1, dtype=float)
    log_pmf = _log_choose(n) + k * math.log(p) + (n - k) * math.log1p(-p)
    return float(np.exp(log_pmf[x:]).sum())


def _solve(f: Callable[[float], float], target: float, increasing: bool) -> float:
    """The p in (0, 1) where a monotone f(p) crosses target (bisection, 1e-10)."""
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if (f(mid) < target) == increasing:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


@functools.lru_cache(maxsize=4096)
def clopper_pearson(successes: int, trials: int, alpha: float = 0.05) -> tuple[float, float]:
    """Exact binomial (Clopper-Pearson) interval of a success rate.

    The lower bound is the rate at which ``successes`` or more would happen with chance
    alpha/2, the upper bound the rate at which ``successes`` or fewer would: coverage is
    at least 1 - alpha whatever the true rate, and neither bound collapses onto an
    observed 0/n or n/n.

    Args:
        successes: x, with 0 <= x <= trials.
        trials: n >= 1.
        alpha: 1 - coverage (0.05 gives a 95% interval).
    """
    if not 0 <= successes <= trials or trials < 1:
        raise ValueError(f"needs 0 <= successes <= trials and trials >= 1 ({successes}/{trials})")
    x, n = successes, trials
    lo = 0.0 if x == 0 else _solve(lambda p: _upper_tail(x, n, p), alpha / 2, increasing=True)
    hi = (
        1.0
        if x == n
        else _solve(lambda p: 1.0 - _upper_tail(x + 1, n, p), alpha / 2, increasing=False)
    )
    return (lo, hi)


def effective_trials(counts: Sequence[TaskCounts]) -> float:
    """Independent trials that per-task pass counts are worth, for a binomial interval.

    One sample per task: the number of tasks. Several: the samples of a task are
    correlated, so n_eff = p(1 - p) / var, with var the variance of the mean of the
    per-task rates (tasks as clusters), kept between the number of tasks and of
    episodes; the number of tasks when that variance is 0 (every task all-pass or
    all-fail, or all alike), which is the cautious end.
    """
    tasks, episodes = len(counts), sum(n for n, _ in counts)
    rates = np.array([c / n for n, c in counts], dtype=float)
    p = float(rates.mean())
    if episodes == tasks or tasks < 2 or p in (0.0, 1.0):
        return float(tasks)
    var = float(rates.var(ddof=1)) / tasks
    if var <= 0:
        return float(tasks)
    return min(max(p * (1 - p) / var, float(tasks)), float(episodes))


def pass_rate_ci(counts: Sequence[TaskCounts], alpha: float = 0.05) -> tuple[float, float, float]:
    """pass@1 over tasks with its exact binomial interval.

    pass@1 is the mean of the per-task pass rates c/n; the interval is Clopper-Pearson
    on `effective_trials` (rounded), with the successes rounded down for the lower bound
    and up for the upper one (never narrower than the unrounded interval would be).

    Args:
        counts: (n samples, c passes) of each task.
        alpha: 1 - coverage.

    Returns:
        (pass@1, low, high); NaNs when there are no tasks.
    """
    if not counts:
        return (float("nan"), float("nan"), float("nan"))
    p = sum(c / n for n, c in counts) / len(counts)
    trials = max(1, round(effective_trials(counts)))
    lo, _ = clopper_pearson(math.floor(p * trials + 1e-9), trials, alpha)
    _, hi = clopper_pearson(min(trials, math.ceil(p * trials - 1e-9)), trials, alpha)
    return (p, lo, hi)
