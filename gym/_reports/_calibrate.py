"""Calibrating the LLM judge: its agreement with labelled answers, and labels from runs.

Three kinds of labelled item, one JSON object a line, told apart by their keys:
``{task, answer, label: 0|1}`` (an answer), ``{task, answer_a, answer_b, label: a|b|tie}``
(a pair) and ``{task, conversation, step, label: 0|1}`` (one step of an agent's
conversation: ``conversation`` is its chat messages, ``step`` the index of the assistant
message judged, from 0; later messages are ignored). Step items are scored by
`Judge.assess_step` and reported apart, as ``steps``.

This sits above the run store (it reads graded episodes to label them) and the
registry (it loads tasks to diff their answers), in the runner and statistics layer;
the judge itself (`gym._grading._judge`) knows nothing of either.
"""

from __future__ import annotations

import json
import logging
import statistics
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gym._core._errors import ConfigError, GymError
from gym._core._models import Task
from gym._core._tree import read_tree
from gym._envs._registry import tasks_of
from gym._grading import Export, Judge, unified_diff
from gym._grading._judge import Preference, split_step
from gym._store import Store

__all__ = [
    "CalibrationReport",
    "PairwiseLabel",
    "PairwiseStats",
    "PointwiseLabel",
    "PointwiseStats",
    "StepLabel",
    "calibrate",
    "cohen_kappa",
    "labels_from_run",
    "pearson",
    "read_labels",
]

log = logging.getLogger(__name__)


class PointwiseLabel(BaseModel):
    """A labelled answer: did it deserve to pass?"""

    model_config = ConfigDict(extra="ignore")

    task: str
    """The task prompt."""
    answer: str
    """The answer (for code tasks, the diff)."""
    label: Literal[0, 1]
    """1: good (a human said so, or the hidden tests passed); 0: bad."""
    source: str = ""
    """Where the label came from (an episode id, a rater)."""


class PairwiseLabel(BaseModel):
    """A labelled pair: which answer is better?"""

    model_config = ConfigDict(extra="ignore")

    task: str
    """The task prompt."""
    answer_a: str
    """The first answer."""
    answer_b: str
    """The second answer."""
    label: Preference
    """``a``, ``b`` or ``tie``."""
    source: str = ""
    """Where the label came from."""


class StepLabel(BaseModel):
    """A labelled step: was this step of an agent's conversation a good one?"""

    model_config = ConfigDict(extra="ignore")

    task: str
    """The task prompt."""
    conversation: list[dict[str, Any]]
    """The chat messages, at least up to and including the step."""
    step: int = Field(ge=0)
    """The step judged: the index of its assistant message among the assistant messages."""
    label: Literal[0, 1]
    """1: a good step; 0: a bad one."""
    source: str = ""
    """Where the label came from (an episode id and step, a rater)."""


class PointwiseStats(BaseModel):
    """How the judge's pointwise verdicts agree with the labels."""

    n: int
    """Labelled answers."""
    accuracy: float
    """Share where ``score >= threshold`` equals the label."""
    kappa: float | None
    """Cohen's kappa between judge and labels (None when undefined)."""
    length_correlation: float | None
    """Pearson correlation of the score with the answer's (or step's) length (length bias)."""
    mean_score: float
    """Mean judge score."""
    threshold: float
    """The threshold used."""


class PairwiseStats(BaseModel):
    """How the judge's pairwise verdicts agree with the labels."""

    n: int
    """Labelled pairs."""
    accuracy: float
    """Share where the (order-swapped) decision equals the label."""
    kappa: float | None
    """Cohen's kappa over a/b/tie (None when undefined)."""
    flip_rate: float
    """Share of pairs where swapping the order changed the decision."""


class CalibrationReport(BaseModel):
    """Agreement of a judge with a labelled set."""

    judge_version: str
    """The judge's version."""
    model: str
    """The judge's model."""
    prompt_version: str
    """The prompt templates' label."""
    pointwise: PointwiseStats | None = None
    """Pointwise agreement, if the set had pointwise items."""
    pairwise: PairwiseStats | None = None
    """Pairwise agreement, if the set had pairwise items."""
    steps: PointwiseStats | None = None
    """Agreement on step items (`Judge.assess_step`), if the set had any."""
    step_version: str = ""
    """The judge's step version (`Judge.step_version`), when step items were scored."""


Label = PointwiseLabel | PairwiseLabel | StepLabel
"""Any labelled item."""


def _kind(raw: dict[str, Any]) -> type[PointwiseLabel | PairwiseLabel | StepLabel]:
    if "answer_a" in raw:
        return PairwiseLabel
    return StepLabel if "conversation" in raw else PointwiseLabel


def read_labels(path: Path) -> list[Label]:
    """Labelled items from a JSONL file (blank lines and ``#`` comments skipped).

    Raises:
        ConfigError: the file is missing, or a line is neither kind of item.
    """
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise ConfigError(f"cannot read labels {path}: {exc}") from exc
    items: list[Label] = []
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            raw = json.loads(line)
            if not isinstance(raw, dict):
                raise ValueError("not a JSON object")
            kind = _kind(raw)
            if kind is not PairwiseLabel and isinstance(raw.get("label"), bool):
                raw["label"] = int(raw["label"])
            items.append(kind.model_validate(raw))
        except (ValueError, ValidationError) as exc:
            raise ConfigError(
                f"{path}:{number}: expected {{task, answer, label: 0|1}}, "
                f"{{task, answer_a, answer_b, label: a|b|tie}} or "
                f"{{task, conversation, step, label: 0|1}}: {_said(exc)}"
            ) from None
    if not items:
        raise ConfigError(f"{path} holds no labelled items")
    return items


def _said(exc: ValueError | ValidationError) -> str:
    """What is wrong with a label line, in one line (a field's errors joined)."""
    if isinstance(exc, ValidationError):
        return "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'line'}: {e['msg']}" for e in exc.errors()
        )
    return str(exc)


def cohen_kappa(rater_a: Sequence[Any], rater_b: Sequence[Any]) -> float | None:
    """Cohen's kappa of two raters' labels: (p_o - p_e) / (1 - p_e).

    Returns None when it is undefined (no items, or both raters always gave the same
    single label, so that chance agreement is 1).
    """
    if len(rater_a) != len(rater_b):
        raise ValueError("both raters must label the same items")
    n = len(rater_a)
    if n == 0:
        return None
    observed = sum(1 for x, y in zip(rater_a, rater_b, strict=True) if x == y) / n
    expected = 0.0
    for c in set(rater_a) | set(rater_b):
        expected += (sum(1 for x in rater_a if x == c) / n) * (
            sum(1 for y in rater_b if y == c) / n
        )
    if expected >= 1.0:
        return None
    return (observed - expected) / (1.0 - expected)


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Pearson correlation (`statistics.correlation`), or None where it is undefined.

    It is undefined with fewer than two points or no variance in either series.

    Raises:
        ValueError: the series differ in length.
    """
    if len(xs) != len(ys):
        raise ValueError("both series must have the same length")
    try:
        return statistics.correlation(xs, ys)
    except statistics.StatisticsError:
        return None


def _pointwise(
    scores: Sequence[float], labels: Sequence[int], lengths: Sequence[int], threshold: float
) -> PointwiseStats:
    """Agreement of scores (passed at ``threshold``) with 0/1 labels."""
    predicted = [int(s >= threshold) for s in scores]
    return PointwiseStats(
        n=len(scores),
        accuracy=sum(x == y for x, y in zip(predicted, labels, strict=True)) / len(scores),
        kappa=cohen_kappa(predicted, labels),
        length_correlation=pearson(scores, [float(n) for n in lengths]),
        mean_score=sum(scores) / len(scores),
        threshold=threshold,
    )


def _step_length(judge: Judge, item: StepLabel) -> int:
    """The length of the step's text as the judge is shown it."""
    view = split_step(
        item.conversation,
        item.step,
        item.task,
        per_message=judge.step_message_chars,
        context_chars=judge.step_context_chars,
    )
    return len(view.step)


def calibrate(judge: Judge, items: Iterable[Label]) -> CalibrationReport:
    """Ask the judge about every labelled item and measure its agreement.

    Raises:
        GradingError: a judge call failed (nothing is reported from a partial run).
        ConfigError: a step item's conversation holds no assistant message.
    """
    items = list(items)
    points = [i for i in items if isinstance(i, PointwiseLabel)]
    pairs = [i for i in items if isinstance(i, PairwiseLabel)]
    steps = [i for i in items if isinstance(i, StepLabel)]
    report = CalibrationReport(
        judge_version=judge.version, model=judge.model, prompt_version=judge.prompt_version
    )
    if points:
        scores = [judge.assess(p.task, p.answer).score for p in points]
        lengths = [len(p.answer) for p in points]
        report.pointwise = _pointwise(scores, [p.label for p in points], lengths, judge.threshold)
    if pairs:
        results = [judge.compare(p.task, p.answer_a, p.answer_b) for p in pairs]
        winners = [r.winner for r in results]
        labels_ab = [p.label for p in pairs]
        report.pairwise = PairwiseStats(
            n=len(pairs),
            accuracy=sum(x == y for x, y in zip(winners, labels_ab, strict=True)) / len(pairs),
            kappa=cohen_kappa(winners, labels_ab),
            flip_rate=sum(r.order_flip for r in results) / len(pairs),
        )
    if steps:
        report.steps = _step_stats(judge, steps)
        report.step_version = judge.step_version
    return report


def _step_stats(judge: Judge, steps: Sequence[StepLabel]) -> PointwiseStats:
    try:
        scores = [judge.assess_step(s.task, s.conversation, s.step).score for s in steps]
        lengths = [_step_length(judge, s) for s in steps]
    except ValueError as exc:
        raise ConfigError(f"a step item cannot be judged: {exc}") from None
    return _pointwise(scores, [s.label for s in steps], lengths, judge.threshold)


def labels_from_run(store: Store, run_id: str) -> list[PointwiseLabel]:
    """Pointwise labels from a stored run: its graded answers, labelled by the graders.

    Each episode that ended ``pass`` or ``fail`` gives one item: the task prompt, the
    final answer (for code episodes, the diff of the exported files against the task's
    repo; otherwise the last assistant text) and ``label = 1`` for pass. Infra errors
    are left out: they say nothing about the answer.
    """
    with store.snapshot():  # the run found and its episodes of one moment
        episodes = store.episodes(store.run(run_id).id)
    envs: dict[str, dict[str, Task]] = {}
    out: list[PointwiseLabel] = []
    for e in episodes:
        if e.outcome not in ("pass", "fail"):
            continue
        tasks = envs.get(e.env_id)
        if tasks is None:
            tasks = envs.setdefault(e.env_id, _env_tasks(e.env_id))
        task = tasks.get(e.task_id)
        prompt = task.prompt if task is not None else _first_user(e.messages)
        answer = _episode_answer(e.export, e.messages, task)
        out.append(
            PointwiseLabel(
                task=prompt, answer=answer, label=1 if e.outcome == "pass" else 0, source=e.id
            )
        )
    return out


def _env_tasks(env_id: str) -> dict[str, Task]:
    """The tasks of an environment by id ({} when it cannot be loaded here)."""
    try:
        return {t.id: t for t in tasks_of(env_id)}
    except (GymError, ImportError) as exc:
        log.warning("cannot load %s (%s); using stored prompts and answers", env_id, exc)
        return {}


def _first_user(messages: list[dict[str, Any]]) -> str:
    for m in messages:
        if m.get("role") == "user" and isinstance(m.get("content"), str):
            return str(m["content"])
    return ""


def _episode_answer(
    export: dict[str, Any] | None, messages: list[dict[str, Any]], task: Task | None
) -> str:
    """The diff of an episode's exported files, else its last assistant text."""
    if export and isinstance(export.get("files"), dict):
        try:
            files = Export.model_validate(export).files
        except ValidationError:
            files = {}
        if files:
            base = read_tree(Path(task.path) / "repo") if task is not None else {}
            return unified_diff(base, files)
    for m in reversed(messages):
        if m.get("role") == "assistant" and isinstance(m.get("content"), str) and m["content"]:
            return str(m["content"])
    return ""
