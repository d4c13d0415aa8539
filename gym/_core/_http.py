"""The one retrying JSON POST shared by the OpenAI-compatible clients (policy and judge).

`post_json` sends a request until its answer is accepted or the retries are spent:
timeouts, broken connections, 429 and 5xx (and answers the caller's ``read`` rejects
with `Retryable`) are tried again after an exponential backoff with full jitter that
waits at least what ``Retry-After`` asks (capped); other statuses go to ``read``, which
decides. When the retries are spent, `RetriesSpent` says how often and why; each
caller maps it into its own error of the `gym.GymError` tree.
"""

from __future__ import annotations

import email.utils
import functools
import json
import logging
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from gym._core._text import plain

if TYPE_CHECKING:
    import ssl

    import httpx  # imported where a request is made: `import gym` stays light

__all__ = [
    "Backoff",
    "RetriesSpent",
    "Retryable",
    "backoff_delay",
    "post_json",
    "retry_after",
    "server_message",
    "tls_context",
]

T = TypeVar("T")
Body = dict[str, Any] | Callable[[], dict[str, Any]]
_log = logging.getLogger("gym.http")


class Retryable(Exception):
    """One failed attempt that may succeed when tried again."""

    def __init__(self, reason: str, wait: float | None = None, *, counts: bool = True) -> None:
        super().__init__(reason)
        self.wait = wait
        """Seconds the server asked to wait (``Retry-After``), if it said."""
        self.counts = counts
        """Whether the attempt counts against the retry budget."""


class RetriesSpent(Exception):
    """Every attempt a `Backoff` allows failed."""

    def __init__(self, failures: int, last: Retryable) -> None:
        super().__init__(f"failed {failures} times (last: {last})")
        self.failures = failures
        """Failed attempts, those that did not count against the budget included."""
        self.last = last
        """The last failure."""


@dataclass(frozen=True)
class Backoff:
    """How often and how long to wait before trying a failed request again."""

    max_retries: int
    """Failed attempts tolerated (those whose `Retryable.counts` is False are free)."""
    backoff: float
    """First backoff ceiling in seconds (doubles per attempt, full jitter)."""
    max_backoff: float
    """The longest wait between attempts, ``Retry-After`` included."""
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)
    """The random generator of the jitter."""

    def delay(self, failures: int, retry_after_s: float | None = None) -> float:
        """Seconds to wait after ``failures`` failed attempts (see `backoff_delay`)."""
        return backoff_delay(self.rng, failures, self.backoff, self.max_backoff, retry_after_s)


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The process's one TLS context for HTTP clients, made on first use.

    httpx builds a context for every client (``verify=True``: the CA bundle loaded,
    about 23 ms of CPU and 0.8 MiB each); a client per concurrent episode made that the
    largest cost of waiting episodes. A context is safe to share between clients and
    threads, and verification is the same as httpx's default.
    """
    import httpx

    return httpx.create_ssl_context()


def post_json(
    client: httpx.Client,
    path: str,
    body: Body,
    read: Callable[[httpx.Response], T],
    retry: Backoff,
) -> tuple[T, int]:
    """POST JSON until ``read`` accepts the answer; (what it returned, failed attempts).

    Args:
        client: the HTTP client (its base URL, headers and timeouts apply).
        path: the path under the client's base URL.
        body: the JSON body, or a function building it anew for each attempt.
        read: turns a response that is neither 429 nor 5xx into the result; it raises
            `Retryable` to have the request tried again, any other error to stop.
        retry: how often and how long to back off.

    Raises:
        RetriesSpent: the retries are spent.
    """
    failures = spent = 0
    while True:
        try:
            return read(_post(client, path, body() if callable(body) else body)), failures
        except Retryable as exc:
            failures += 1
            spent += exc.counts
            if spent > retry.max_retries:
                raise RetriesSpent(failures, exc) from None
            wait = retry.delay(failures, exc.wait)
            url = f"{str(client.base_url).rstrip('/')}{path}"
            _log.warning("POST %s: %s; retrying in %.1f s", url, exc, wait)
            time.sleep(wait)


def _post(client: httpx.Client, path: str, body: dict[str, Any]) -> httpx.Response:
    """One POST; a timeout, a broken connection, 429 or a 5xx raise `Retryable`.

    The client's read timeout bounds the whole answer, not only each read: a server
    trickling its answer (a byte every few seconds) is a timeout once that many seconds
    have passed since the request began, as one that sends nothing.
    """
    import httpx

    limit = client.timeout.read
    deadline = None if limit is None else time.monotonic() + limit
    try:
        with client.stream("POST", path, json=body) as response:
            if deadline is not None and isinstance(response.stream, httpx.SyncByteStream):
                response.stream = _by_deadline(response.stream, deadline, limit or 0.0)
            response.read()
    except httpx.TimeoutException as exc:
        raise Retryable(f"timed out ({type(exc).__name__})") from None
    except httpx.TransportError as exc:
        raise Retryable(f"{type(exc).__name__}: {exc}") from None
    status = response.status_code
    if status == 429 or status >= 500:
        reason = f"HTTP {status}: {server_message(response)}"
        raise Retryable(reason, retry_after(response.headers.get("retry-after")))
    return response


def _by_deadline(stream: httpx.SyncByteStream, deadline: float, limit: float) -> Any:
    """A response's body stream that ends in `Retryable` once its deadline has passed."""
    import httpx

    class ByDeadline(httpx.SyncByteStream):
        def __iter__(self) -> Iterator[bytes]:
            for chunk in stream:
                if time.monotonic() > deadline:
                    raise Retryable(f"timed out (no whole answer in {limit:g} s)")
                yield chunk

        def close(self) -> None:
            stream.close()

    return ByDeadline()


def server_message(response: httpx.Response) -> str:
    """The error message a server put in its body (OpenAI, vLLM, FastAPI shapes).

    Total whatever the body: only its first 64 KiB are parsed, and a body that is not
    JSON, not UTF-8 or nested past the decoder's reach is quoted as text. Valid text
    always (`plain`): it goes into errors, end reasons and the store.
    """
    return plain(_message(response))


def _message(response: httpx.Response) -> str:
    try:
        data = json.loads(response.content[:_MESSAGE_BYTES])
    except (ValueError, RecursionError):
        return response.text.strip()[:500] or response.reason_phrase
    if isinstance(data, dict):
        err = data.get("error")
        for value in (
            err.get("message") if isinstance(err, dict) else err,
            data.get("message"),
            data.get("detail"),
        ):
            if value:
                return _quoted(value)
    return _quoted(data)


_MESSAGE_BYTES = 64 << 10
"""Bytes of an error body read for its message, at most."""


def _quoted(value: Any) -> str:
    if isinstance(value, str):
        return value[:500]
    try:
        return json.dumps(value)[:500]
    except (TypeError, ValueError, RecursionError):
        return "(an error body that is not plain JSON)"


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
