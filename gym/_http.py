"""HTTP retry helpers shared by the policies and the judge."""

from __future__ import annotations

import email.utils
import json
import random
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx  # imported where a request is made: `import gym` stays light

__all__ = ["Retryable", "backoff_delay", "post_json", "retry_after", "server_message"]


class Retryable(Exception):
    """One failed attempt that may succeed when tried again."""

    def __init__(self, reason: str, wait: float | None = None, *, counts: bool = True) -> None:
        super().__init__(reason)
        self.wait = wait
        """Seconds the server asked to wait (``Retry-After``), if it said."""
        self.counts = counts
        """Whether the attempt counts against the retry budget."""


def post_json(client: httpx.Client, path: str, body: dict[str, Any]) -> httpx.Response:
    """POST a JSON body; a timeout, a broken connection, 429 or a 5xx raise `Retryable`.

    Other statuses (2xx and the remaining 4xx) come back for the caller to judge.
    """
    import httpx

    try:
        response = client.post(path, json=body)
    except httpx.TimeoutException as exc:
        raise Retryable(f"timed out ({type(exc).__name__})") from None
    except httpx.TransportError as exc:
        raise Retryable(f"{type(exc).__name__}: {exc}") from None
    status = response.status_code
    if status == 429 or status >= 500:
        reason = f"HTTP {status}: {server_message(response)}"
        raise Retryable(reason, retry_after(response.headers.get("retry-after")))
    return response


def server_message(response: httpx.Response) -> str:
    """The error message a server put in its body (OpenAI, vLLM, FastAPI shapes)."""
    try:
        data = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return response.text.strip()[:500] or response.reason_phrase
    if isinstance(data, dict):
        err = data.get("error")
        for value in (
            err.get("message") if isinstance(err, dict) else err,
            data.get("message"),
            data.get("detail"),
        ):
            if value:
                return (value if isinstance(value, str) else json.dumps(value))[:500]
    return json.dumps(data)[:500]


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
