"""HTTP retry helpers shared by the policies and the judge."""

from __future__ import annotations

import email.utils
import random
import time

__all__ = ["backoff_delay", "retry_after"]


def retry_after(value: str | None) -> float | None:
    """Seconds a ``Retry-After`` header asks to wait (delay-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def backoff_delay(
    rng: random.Random,
    failures: int,
    backoff: float,
    max_backoff: float,
    retry_after_s: float | None = None,
) -> float:
    """Exponential backoff with full jitter, waiting at least what Retry-After asks (capped).

    Args:
        rng: the random generator of the jitter.
        failures: failed attempts so far (1 for the first retry).
        backoff: the base delay in seconds.
        max_backoff: the longest wait.
        retry_after_s: what the server asked for, if anything.
    """
    wait = rng.uniform(0, min(max_backoff, backoff * 2 ** (failures - 1)))
    if retry_after_s is not None:
        wait = max(wait, min(retry_after_s, max_backoff))
    return wait
