"""The judge client: a model behind an OpenAI-compatible endpoint that grades answers.

See `gym._grading._judge` for what the judge is for. Requests go through the shared
retrying `gym._core._http.post_json`; answers are read by `gym._grading._judge._parse` and
cached by `gym._grading._judge._cache`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import random
import secrets
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from gym._core._errors import ConfigError, GradingError
from gym._core._http import Backoff, RetriesSpent, Retryable, post_json, server_message
from gym._core._models import Component
from gym._core._paths import data_dir
from gym._grading._judge._cache import cache_at, call_key
from gym._grading._judge._parse import (
    NoVerdict,
    Preference,
    parse_verdict,
    reason_text,
    score_value,
    winner_value,
)
from gym._grading._judge._prompts import (
    DEFAULT_RUBRIC,
    DEFAULT_STEP_RUBRIC,
    PAIRWISE_TEMPLATE,
    POINTWISE_TEMPLATE,
    PROMPT_VERSION,
    STEP_PAIRWISE_TEMPLATE,
    STEP_PROMPT_VERSION,
    STEP_TEMPLATE,
    SYSTEM_PROMPT,
)
from gym._grading._judge._steps import StepView, split_step

_SECRET = secrets.token_bytes(32)
"""The process's key for call nonces: what the candidate's text alone cannot give."""

CONTROL_TASK = "Write a Python function add(a, b) in calc.py that returns the sum of a and b."
"""The control case's task: a known small case any working judge gives a verdict on."""
CONTROL_ANSWER = (
    "--- /dev/null\n+++ b/calc.py\n@@ -0,0 +1,2 @@\n+def add(a, b):\n+    return a + b\n"
)
"""The control case's answer (a diff, as a code task shows the judge)."""
CONTROL_CONVERSATION: list[dict[str, Any]] = [
    {"role": "user", "content": CONTROL_TASK},
    {
        "role": "assistant",
        "content": "Writing the function.",
        "tool_calls": [
            {
                "id": "c0",
                "type": "function",
                "function": {
                    "name": "write_file",
                    "arguments": json.dumps(
                        {"path": "calc.py", "text": "def add(a, b):\n    return a + b\n"}
                    ),
                },
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c0", "content": "wrote calc.py (2 lines)"},
]
"""The control case of a step call: one step writing the function."""


def call_nonce(key: str) -> str:
    """The nonce of a call: a keyed hash of its cache key under the process's secret.

    Told the judge in the prompt (its markers and the verdict's ``nonce`` field); the
    candidate, who never sees the prompt, cannot compute it from its own text.
    """
    return hmac.new(_SECRET, key.encode(), hashlib.sha256).hexdigest()[:16]


if TYPE_CHECKING:
    import httpx  # imported where a request is made: `import gym` stays light

__all__ = ["Judge", "JudgeScore", "PairwiseResult", "call_nonce"]

_JUDGE_STATUSES = frozenset({401, 403, 404, 405, 408})
"""Answers that say the judge (its address, key or model) is wrong, whatever it is asked."""


class JudgeScore(BaseModel):
    """A pointwise verdict of the judge."""

    score: float
    """Score in [0, 1]."""
    reason: str = ""
    """The judge's reason, as it gave it."""
    version: str = ""
    """Version of the judge that gave it."""
    cached: bool = False
    """Whether it came from the cache (no request was sent)."""
    no_verdict: str = ""
    """Why the judge gave no verdict for this input while it gave one for the control case
    ('' when it gave one): the input's failure, scored 0 (never cached)."""


class PairwiseResult(BaseModel):
    """A pairwise preference, asked in both orders."""

    winner: Preference
    """``a``, ``b`` or ``tie``; a tie when the two orders disagree."""
    order_flip: bool
    """The two orders disagreed: swapping the answers changed the judge's decision."""
    first: Preference
    """The decision with answer_a shown first."""
    second: Preference
    """The decision with answer_b shown first, mapped back to a/b."""
    reasons: tuple[str, str] = ("", "")
    """The judge's reasons, in the same two orders."""
    version: str = ""
    """Version of the judge that gave it."""


class Judge(BaseModel):
    """A model that grades answers, behind an OpenAI-compatible endpoint.

    The settings are plain pydantic fields; `Judge.from_env` builds one from
    ``GYM_JUDGE_*`` variables. The HTTP client is created on first use; call
    `close` (or use the judge as a context manager) when done.

    Example::

        judge = gym.grading.Judge(base_url="http://localhost:8000/v1", model="qwen3-8b")
        component = judge.score(task.prompt, diff)        # a non-gated Component
        pair = judge.compare(task.prompt, diff_a, diff_b)  # order-swapped preference
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    base_url: str
    """The API root, ending in ``/v1`` (``/chat/completions`` is appended)."""
    model: str
    """The served model name."""
    api_key: str | None = Field(default=None, repr=False, exclude=True)
    """Bearer token; ``$OPENAI_API_KEY`` when None (none sent if that is unset)."""
    timeout: float = Field(default=120.0, gt=0)
    """Seconds one request may take."""
    connect_timeout: float = Field(default=10.0, gt=0)
    """Seconds to open a connection."""
    max_retries: int = Field(default=4, ge=0)
    """Failed attempts tolerated per call before `GradingError`."""
    backoff: float = Field(default=1.0, ge=0)
    """First backoff ceiling in seconds (doubles per attempt, full jitter)."""
    max_backoff: float = Field(default=30.0, ge=0)
    """The longest wait between attempts, ``Retry-After`` included."""
    max_tokens: int = Field(default=1024, gt=0)
    """The most tokens one judge answer may have."""
    seed: int | None = None
    """Sampling seed sent with each request (None: not sent)."""
    extra_body: dict[str, Any] = Field(default_factory=dict)
    """More request fields, merged last (never temperature or top_p)."""
    prompt_version: str = PROMPT_VERSION
    """Label of the prompt templates; bump it whenever a template changes."""
    pointwise_template: str = POINTWISE_TEMPLATE
    """Prompt of `score` (fields: task, rubric, answer, nonce)."""
    pairwise_template: str = PAIRWISE_TEMPLATE
    """Prompt of one order of `compare` (fields: task, rubric, first, second, nonce)."""
    system_prompt: str = SYSTEM_PROMPT
    """System message of every request."""
    rubric: str = DEFAULT_RUBRIC
    """What a good answer is; part of the version."""
    threshold: float = Field(default=0.5, ge=0, le=1)
    """``score >= threshold`` counts as passed."""
    weight: float = Field(default=1.0, ge=0)
    """Weight of the component in the partial-credit reward."""
    gated: bool = False
    """Whether the component must pass for the episode to pass (not by default)."""
    cache: bool = True
    """Cache every call (off: always ask the model)."""
    cache_path: Path | None = None
    """The SQLite cache file; ``<data dir>/judge-cache.db`` when None."""
    step_prompt_version: str = STEP_PROMPT_VERSION
    """Label of the step templates; bump it whenever one changes."""
    step_template: str = STEP_TEMPLATE
    """Prompt of `assess_step` (fields: task, rubric, context, step, index, nonce)."""
    step_pairwise_template: str = STEP_PAIRWISE_TEMPLATE
    """Prompt of one order of `compare_steps` (task, rubric, context, first, second, index,
    nonce)."""
    step_rubric: str = DEFAULT_STEP_RUBRIC
    """What a good step is; part of `step_version`."""
    step_context_chars: int = Field(default=16000, gt=0)
    """The most characters of earlier steps a step prompt shows (the latest are kept)."""
    step_message_chars: int = Field(default=4000, gt=0)
    """The most characters of one message a step prompt shows (head and tail kept)."""

    _client: httpx.Client | None = PrivateAttr(default=None)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _random: random.Random = PrivateAttr(default_factory=random.Random)
    _requests: int = PrivateAttr(default=0)

    @field_validator("base_url")
    @classmethod
    def _check_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"base_url {value!r} must start with http:// or https://")
        return value.rstrip("/")

    @field_validator("extra_body")
    @classmethod
    def _check_extra(cls, value: dict[str, Any]) -> dict[str, Any]:
        fixed = {"temperature", "top_p", "model", "messages"} & set(value)
        if fixed:
            raise ValueError(f"extra_body may not set {sorted(fixed)}: the judge fixes them")
        return value

    @classmethod
    def from_env(cls, **overrides: Any) -> Judge | None:
        """A judge from ``GYM_JUDGE_BASE_URL`` and ``GYM_JUDGE_MODEL``; None if unset.

        ``GYM_JUDGE_CACHE`` (a file path) and ``GYM_JUDGE_TIMEOUT`` (seconds) are read
        too; keyword arguments override all of them (a None override is ignored).

        Raises:
            ConfigError: only one of the two required variables is set, or a value is bad.
        """
        base_url = overrides.pop("base_url", None) or os.environ.get("GYM_JUDGE_BASE_URL")
        model = overrides.pop("model", None) or os.environ.get("GYM_JUDGE_MODEL")
        if not base_url and not model:
            return None
        if not base_url or not model:
            missing = "GYM_JUDGE_BASE_URL" if not base_url else "GYM_JUDGE_MODEL"
            raise ConfigError(
                f"a judge needs both GYM_JUDGE_BASE_URL and GYM_JUDGE_MODEL; set {missing}"
            )
        settings: dict[str, Any] = {}
        if cache := os.environ.get("GYM_JUDGE_CACHE"):
            settings["cache_path"] = Path(cache)
        if timeout := os.environ.get("GYM_JUDGE_TIMEOUT"):
            settings["timeout"] = timeout
        settings.update({k: v for k, v in overrides.items() if v is not None})
        try:
            return cls(base_url=base_url, model=model, **settings)
        except ValidationError as exc:
            raise ConfigError(f"bad judge settings: {exc}") from exc

    # -- identity ----------------------------------------------------------------------

    @property
    def version(self) -> str:
        """Short sha256 of the model, the prompts (and their label) and the rubric."""
        parts = (
            self.model,
            self.prompt_version,
            self.system_prompt,
            self.pointwise_template,
            self.pairwise_template,
            self.rubric,
        )
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:12]

    @property
    def step_version(self) -> str:
        """Short sha256 of `version` and the step prompts (their label) and step rubric.

        Step scores carry this version and are cached under it; `version`, which names
        outcome grades, does not change with the step prompts.
        """
        parts = (
            self.version,
            self.step_prompt_version,
            self.step_template,
            self.step_pairwise_template,
            self.step_rubric,
        )
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:12]

    @property
    def requests(self) -> int:
        """HTTP requests this judge has sent (retries included; cache hits send none)."""
        return self._requests

    def close(self) -> None:
        """Close the HTTP client (it is opened again on the next call)."""
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def __enter__(self) -> Judge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- pointwise ---------------------------------------------------------------------

    def score(self, task: str, answer: str) -> Component:
        """Score one answer; a component (not gated unless configured so).

        Raises:
            GradingError: the endpoint failed after its retries, or the answer held no
                valid ``{"score": ..., "reason": ...}`` object.
        """
        result = self.assess(task, answer)
        if result.no_verdict:
            return Component(
                score=0.0,
                passed=False,
                gated=self.gated,
                weight=self.weight,
                explanation=(
                    f"judge {self.version} ({self.model}, prompt v{self.prompt_version}): "
                    f"judge_no_verdict: {result.no_verdict[:600]}"
                ),
            )
        passed = result.score >= self.threshold
        reason = " ".join(result.reason.split())[:600]
        explanation = (
            f"judge {self.version} ({self.model}, prompt v{self.prompt_version}): score "
            f"{result.score:.2f} {'>=' if passed else '<'} threshold {self.threshold:.2f}"
            + (f": {reason}" if reason else "")
        )
        return Component(
            score=result.score,
            passed=passed,
            gated=self.gated,
            weight=self.weight,
            explanation=explanation,
        )

    def assess(self, task: str, answer: str) -> JudgeScore:
        """The judge's score and reason for one answer (cached).

        When the judge answers this input with no verdict (`NoVerdict`: none carrying the
        call's nonce, a cut answer, a refused request) but gives one for the control
        case, the failure is the input's: score 0 with `JudgeScore.no_verdict` set.

        Raises:
            GradingError: the judge unreachable, or no verdict for the control case either.
        """
        version = self.version
        key = call_key(version, "score", task, answer)
        hit = self._cache_get(key)
        if hit is not None:
            return JudgeScore(**hit, version=version, cached=True)
        try:
            value, reason = self._ask_score(
                self.pointwise_template,
                {"task": task, "rubric": self.rubric, "answer": answer},
                call_nonce(key),
            )
        except NoVerdict as exc:
            return self._no_verdict("score", exc, version)
        self._cache_put(key, version, "score", {"score": value, "reason": reason})
        return JudgeScore(score=value, reason=reason, version=version)

    def _ask_score(self, template: str, fields: dict[str, Any], nonce: str) -> tuple[float, str]:
        """One scoring request: (score, reason) of the one verdict carrying ``nonce``."""
        text = self._chat(template.format(**fields, nonce=nonce))
        obj = parse_verdict(text, nonce, "score")
        return score_value(obj.get("score"), text), reason_text(obj.get("reason"))

    def _no_verdict(self, kind: str, exc: NoVerdict, version: str) -> JudgeScore:
        """Score 0 for an input the judge gave no verdict on, if it is the input's doing.

        Raises:
            GradingError: the judge gave no verdict for the control case either.
        """
        failed = self._control(kind)
        if failed:
            raise GradingError(
                f"{exc}; the control case got no verdict either ({failed}): the judge's "
                "failure. The episode is recorded as infra_error"
            ) from exc
        why = f"no verdict for this input, while the control case got one: {exc}"
        return JudgeScore(score=0.0, reason=why, version=version, no_verdict=str(exc))

    def _control(self, kind: str) -> str:
        """Ask the control case of ``kind`` (``score`` or ``step``): '' or why it failed.

        Asked anew after each input with no verdict, never vouched for from an earlier
        call: a judge that got a verdict a minute ago may be down now, and only a control
        answered after the input's failure says the judge still works (the failure is
        then the input's). Its answer is never cached.
        """
        nonce = secrets.token_hex(8)
        try:
            if kind == "step":
                view = self._view(CONTROL_TASK, CONTROL_CONVERSATION, 0)
                fields = {
                    "task": CONTROL_TASK,
                    "rubric": self.step_rubric,
                    "context": view.context,
                    "step": view.step,
                    "index": 0,
                }
                self._ask_score(self.step_template, fields, nonce)
            else:
                fields = {"task": CONTROL_TASK, "rubric": self.rubric, "answer": CONTROL_ANSWER}
                self._ask_score(self.pointwise_template, fields, nonce)
        except GradingError as exc:
            return str(exc)[:300]
        return ""

    # -- pairwise ----------------------------------------------------------------------

    def compare(self, task: str, answer_a: str, answer_b: str) -> PairwiseResult:
        """Which answer is better, asked with a first, then with b first.

        Both orders must agree for a winner; otherwise the result is a tie with
        ``order_flip=True`` (the decision followed the position, not the content).

        Raises:
            GradingError: as for `score`, with a ``winner`` object instead.
        """
        one, reason_one = self._prefer(task, answer_a, answer_b)
        two, reason_two = self._prefer(task, answer_b, answer_a)
        return _pair(one, two, (reason_one, reason_two), self.version)

    def _prefer(self, task: str, first: str, second: str) -> tuple[Preference, str]:
        """One order: ``a`` when the answer shown first wins, ``b`` for the second."""
        version = self.version
        key = call_key(version, "pairwise", task, first, second)
        hit = self._cache_get(key)
        if hit is not None:
            return hit["winner"], hit["reason"]
        nonce = call_nonce(key)
        prompt = self.pairwise_template.format(
            task=task, rubric=self.rubric, first=first, second=second, nonce=nonce
        )
        text = self._chat(prompt)
        obj = parse_verdict(text, nonce, "winner")
        winner = winner_value(obj.get("winner"), text)
        reason = reason_text(obj.get("reason"))
        self._cache_put(key, version, "pairwise", {"winner": winner, "reason": reason})
        return winner, reason

    # -- steps -------------------------------------------------------------------------

    def assess_step(self, task: str, conversation: list[dict[str, Any]], step: int) -> JudgeScore:
        """The judge's score of one step in context (cached; see `gym._grading._judge._steps`).

        Args:
            task: the task prompt.
            conversation: chat messages up to and including the step (later ones are
                ignored: step ``step`` is the ``step``-th assistant message, or the last).
            step: the step's index.

        A step the judge gives no verdict on while it gives one for the control case
        scores 0 (`JudgeScore.no_verdict`), as in `assess`.

        Raises:
            GradingError: as for `assess` (never a made-up score).
            ValueError: the conversation holds no assistant message.
        """
        view = self._view(task, conversation, step)
        version = self.step_version
        key = call_key(version, "step", task, view.key, str(step))
        hit = self._cache_get(key)
        if hit is not None:
            return JudgeScore(**hit, version=version, cached=True)
        fields = {
            "task": task,
            "rubric": self.step_rubric,
            "context": view.context,
            "step": view.step,
            "index": step,
        }
        try:
            value, reason = self._ask_score(self.step_template, fields, call_nonce(key))
        except NoVerdict as exc:
            return self._no_verdict("step", exc, version)
        self._cache_put(key, version, "step", {"score": value, "reason": reason})
        return JudgeScore(score=value, reason=reason, version=version)

    def compare_steps(
        self,
        task: str,
        context: list[dict[str, Any]],
        step_a: list[dict[str, Any]],
        step_b: list[dict[str, Any]],
    ) -> PairwiseResult:
        """Which of two steps taken after the same context is better, asked in both orders.

        The branches of a fork share their context and differ from the fork step on:
        ``step_a`` and ``step_b`` are each branch's step (its assistant message and tool
        results). As in `compare`, orders that disagree give a tie with ``order_flip``.

        Raises:
            GradingError: as for `compare`.
            ValueError: a step holds no assistant message.
        """
        index = sum(m.get("role") == "assistant" for m in context)
        a = self._view(task, [*context, *step_a], index)
        b = self._view(task, [*context, *step_b], index)
        one, reason_one = self._prefer_step(task, a, b, index)
        two, reason_two = self._prefer_step(task, b, a, index)
        return _pair(one, two, (reason_one, reason_two), self.step_version)

    def _view(self, task: str, conversation: list[dict[str, Any]], step: int) -> StepView:
        return split_step(
            conversation,
            step,
            task,
            per_message=self.step_message_chars,
            context_chars=self.step_context_chars,
        )

    def _prefer_step(
        self, task: str, first: StepView, second: StepView, index: int
    ) -> tuple[Preference, str]:
        """One order of `compare_steps`: ``a`` when the step shown first wins.

        The context shown is the first view's (both share it).
        """
        version = self.step_version
        key = call_key(version, "step-pairwise", task, first.key, second.key, str(index))
        hit = self._cache_get(key)
        if hit is not None:
            return hit["winner"], hit["reason"]
        nonce = call_nonce(key)
        prompt = self.step_pairwise_template.format(
            task=task,
            rubric=self.step_rubric,
            context=first.context,
            first=first.step,
            second=second.step,
            index=index,
            nonce=nonce,
        )
        text = self._chat(prompt)
        obj = parse_verdict(text, nonce, "winner")
        winner = winner_value(obj.get("winner"), text)
        reason = reason_text(obj.get("reason"))
        self._cache_put(key, version, "step-pairwise", {"winner": winner, "reason": reason})
        return winner, reason

    # -- HTTP --------------------------------------------------------------------------

    def request_body(self, prompt: str) -> dict[str, Any]:
        """The JSON body of one chat completions request."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": self.system_prompt},
                {"role": "user", "content": prompt},
            ],
            "temperature": 0.0,
            "top_p": 1.0,
            "max_tokens": self.max_tokens,
        }
        if self.seed is not None:
            body["seed"] = self.seed
        return body | self.extra_body

    def _http(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                import httpx

                key = self.api_key if self.api_key is not None else os.environ.get("OPENAI_API_KEY")
                self._client = httpx.Client(
                    base_url=self.base_url,
                    headers={"Authorization": f"Bearer {key}"} if key else {},
                    timeout=httpx.Timeout(self.timeout, connect=self.connect_timeout),
                    event_hooks={"request": [self._count]},
                )
            return self._client

    def _count(self, _request: httpx.Request) -> None:
        """Count a request as it is sent (failed connections included)."""
        with self._lock:
            self._requests += 1

    def _chat(self, prompt: str) -> str:
        """The text of the model's answer to one prompt, with bounded retries."""
        retry = Backoff(self.max_retries, self.backoff, self.max_backoff, self._random)
        body = self.request_body(prompt)
        try:
            text, _ = post_json(self._http(), "/chat/completions", body, self._read, retry)
        except RetriesSpent as exc:
            raise GradingError(
                f"the judge at {self.base_url}/chat/completions {exc}; is it up and serving "
                f"{self.model!r}? The episode is recorded as infra_error"
            ) from None
        return text

    def _read(self, response: httpx.Response) -> str:
        """The answer's text; a body without one retries.

        Auth, a missing model or route (401, 403, 404, 405, 408) are the judge's failure
        (`GradingError`); another 4xx (a content filter's 400, a prompt too long) refuses
        this request and is `NoVerdict`, as is an answer cut at ``max_tokens`` or by a
        filter (``finish_reason``) or one with no text: whose doing it is, the control
        case decides (`Judge.assess`).
        """
        status = response.status_code
        where = f"the judge at {self.base_url}/chat/completions"
        if status >= 400:
            said = f"{where} answered HTTP {status}: {server_message(response)}"
            if status in _JUDGE_STATUSES:
                raise GradingError(f"{said} (check the model name and API key)")
            raise NoVerdict(f"{said} (the request was refused)")
        try:
            choice = response.json()["choices"][0]
            content = choice["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise Retryable(f"HTTP {status} without a chat completion in its body") from None
        finish = choice.get("finish_reason") if isinstance(choice, dict) else None
        if finish in ("length", "content_filter"):
            raise NoVerdict(f"{where} stopped its answer early (finish_reason {finish!r})")
        if not isinstance(content, str):
            raise NoVerdict(f"the judge {self.model!r} returned no text content")
        return content

    # -- cache -------------------------------------------------------------------------

    def cache_file(self) -> Path:
        """The SQLite file of the cache."""
        return self.cache_path or data_dir() / "judge-cache.db"

    def _cache_get(self, key: str) -> dict[str, Any] | None:
        return cache_at(self.cache_file()).get(key) if self.cache else None

    def _cache_put(self, key: str, version: str, mode: str, value: dict[str, Any]) -> None:
        if self.cache:
            cache_at(self.cache_file()).put(key, version, mode, value)


def _pair(
    one: Preference, two: Preference, reasons: tuple[str, str], version: str
) -> PairwiseResult:
    """The result of two orders: ``one`` with a first, ``two`` with b first (in its terms)."""
    second: Preference = {"a": "b", "b": "a", "tie": "tie"}[two]  # type: ignore[assignment]
    flip = one != second
    return PairwiseResult(
        winner="tie" if flip else one,
        order_flip=flip,
        first=one,
        second=second,
        reasons=reasons,
        version=version,
    )
