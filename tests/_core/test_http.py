"""The one retrying JSON POST (`gym._core._http.post_json`) against httpx's MockTransport."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from gym._core._http import Backoff, RetriesSpent, Retryable, post_json


def client(*answers: httpx.Response | Exception) -> tuple[httpx.Client, list[httpx.Request]]:
    """A client whose transport answers from a list (an exception is raised instead)."""
    sent: list[httpx.Request] = []
    queue = list(answers)

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        answer = queue.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    return httpx.Client(base_url="http://server/v1", transport=httpx.MockTransport(handler)), sent


def json_body(response: httpx.Response) -> Any:
    if response.status_code >= 400:
        raise ValueError(f"HTTP {response.status_code}")
    return response.json()


def fast(max_retries: int = 3) -> Backoff:
    return Backoff(max_retries, backoff=0.001, max_backoff=0.5, rng=random.Random(0))


def test_429_5xx_and_broken_connections_are_retried_then_the_answer_returned():
    http, sent = client(
        httpx.Response(503, json={"error": {"message": "busy"}}),
        httpx.ConnectError("refused"),
        httpx.Response(429, headers={"Retry-After": "0.2"}),
        httpx.Response(200, json={"ok": 1}),
    )
    start = time.monotonic()
    value, failures = post_json(http, "/chat/completions", {"q": 1}, json_body, fast())
    assert (value, failures, len(sent)) == ({"ok": 1}, 3, 4)
    assert time.monotonic() - start >= 0.2  # Retry-After was honoured
    assert str(sent[0].url) == "http://server/v1/chat/completions"


def test_retries_are_bounded():
    http, sent = client(*[httpx.Response(500, text="down")] * 5)
    with pytest.raises(RetriesSpent, match=r"failed 3 times \(last: HTTP 500: down\)") as info:
        post_json(http, "/x", {}, json_body, fast(max_retries=2))
    assert info.value.failures == 3 and len(sent) == 3


def test_other_statuses_go_to_read_which_decides():
    http, sent = client(httpx.Response(404, json={"error": "no such model"}))
    with pytest.raises(ValueError, match="HTTP 404"):
        post_json(http, "/x", {}, json_body, fast())
    assert len(sent) == 1


def test_read_can_ask_again_and_free_retries_do_not_spend_the_budget():
    http, sent = client(httpx.Response(200, json={}), httpx.Response(200, json={"ok": 1}))
    bodies = iter([{"n": 1}, {"n": 2}])

    def read(response: httpx.Response) -> Any:
        if not response.json():
            raise Retryable("empty answer", 0.0, counts=False)
        return response.json()

    body: Callable[[], dict[str, Any]] = lambda: next(bodies)  # noqa: E731
    assert post_json(http, "/x", body, read, fast(max_retries=0)) == ({"ok": 1}, 1)
    assert [json.loads(r.content) for r in sent] == [{"n": 1}, {"n": 2}]  # built per attempt


def test_backoff_has_full_jitter_is_capped_and_honours_retry_after():
    retry = Backoff(5, backoff=1.0, max_backoff=4.0, rng=random.Random(1))
    waits = [retry.delay(n) for n in range(1, 30)]
    assert all(0 <= w <= 4.0 for w in waits) and len(set(waits)) > 20
    assert retry.delay(1, 3.0) >= 3.0 and retry.delay(1, 3600.0) == 4.0
