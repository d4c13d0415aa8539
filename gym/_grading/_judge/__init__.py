"""An LLM judge: an optional, versioned, cached grading component.

A `Judge` asks a model behind any OpenAI-compatible ``/v1/chat/completions`` endpoint
for a structured verdict. It never decides an episode alone: by default its component
is not gated and only weighs in the partial-credit reward, and the state graders
(hidden tests, trajectory flags) keep the final word.

Two modes:

* `Judge.score`: one answer, one score in [0, 1] with a reason. ``passed = score >=
  threshold``.
* `Judge.compare`: which of two answers is better, asked twice with the order swapped.
  When the two orders disagree the result is a tie and ``order_flip`` is set, so the
  judge's position bias cancels instead of choosing the winner.

And the same two for one step of an agent's conversation (dense per-step rewards), with
a step prompt and rubric of their own: `Judge.assess_step` scores a step in the context
of the steps before it; `Judge.compare_steps` compares two steps taken after the same
context (two branches of a fork), order-swapped as `compare`. Step calls are versioned by
`Judge.step_version` (the judge's `version` plus the step prompts and rubric) and cached
like the others.

Reproducibility: ``temperature=0`` and ``top_p=1`` are always sent; the judge's
`Judge.version` is a short sha256 of the model, the prompt templates and the rubric;
every call is cached by a content hash of (version, mode, inputs) in a SQLite file
(``<data dir>/judge-cache.db`` by default), so grading the same final state again costs
nothing and returns the same verdict.

The verdict is only what the judge itself said: each call tells the judge a nonce (a
keyed hash of the call under a secret of the process, which the candidate cannot
compute), and the verdict is the one JSON object of its answer carrying it
(`parse_verdict`); an object quoted from the candidate's work carries none. An answer
cut off (``finish_reason`` ``length`` or ``content_filter``, an unclosed ``<think>``)
is no verdict.

Failures: connection errors, timeouts, 429 and 5xx are retried by the shared
`gym._core._http.post_json` with exponential backoff and full jitter (honouring
``Retry-After``); once the retries are spent, or on 401, 403, 404, 405 or 408,
`gym.GradingError` is raised: the judge's failure, recorded as infra_error. When the
judge answers but gives no verdict (`NoVerdict`: none with the nonce, a cut answer, a
request refused with another 4xx such as a content filter's 400), provenance is decided
by behaviour: the same judge is asked a fixed control case; if that gets a verdict the
failure is the input's (score 0, `JudgeScore.no_verdict`; a `score` component that fails
with ``judge_no_verdict``), and only if it fails too is it the judge's (`GradingError`).
Pairwise calls (`compare`, `compare_steps`) cannot say which answer caused it and raise
`NoVerdict`.

The package splits the judge by job: `_client` (the `Judge` and its results),
`_prompts` (default templates and rubrics), `_steps` (a step and its context as texts),
`_parse` (reading a verdict out of an
answer) and `_cache` (the SQLite cache). Calibration against labels sits above the run
store, in `gym._reports._calibrate`; `unified_diff` is in `gym._grading._diff`.
"""

from gym._grading._judge._client import Judge, JudgeScore, PairwiseResult, call_nonce
from gym._grading._judge._parse import NoVerdict, Preference, parse_verdict
from gym._grading._judge._prompts import (
    DEFAULT_RUBRIC,
    DEFAULT_STEP_RUBRIC,
    PROMPT_VERSION,
    STEP_PROMPT_VERSION,
)
from gym._grading._judge._steps import StepView, split_step

__all__ = [
    "DEFAULT_RUBRIC",
    "DEFAULT_STEP_RUBRIC",
    "PROMPT_VERSION",
    "STEP_PROMPT_VERSION",
    "Judge",
    "JudgeScore",
    "NoVerdict",
    "PairwiseResult",
    "Preference",
    "StepView",
    "call_nonce",
    "parse_verdict",
    "split_step",
]
