"""Training samples from episodes, token-in/token-out.

A sample is one token sequence the policy really saw and produced: the first turn's
prompt ids, then for each turn the ids it sampled and, between turns, the
environment's tokens, which are the part of the next turn's prompt ids past what came
before (the tool result as the policy's own chat template rendered it when it built
that prompt). Nothing is re-tokenized and no chat template is applied to a finished
conversation: every id comes from what the policy recorded.

That works while each prompt starts with the previous prompt and completion (the
prefix property). Where it does not (a template that rewrites earlier turns, a
sampled tokenization that re-tokenizes differently), the sequence is split: the turn
that breaks the prefix starts a new sample, and `EpisodeSamples.prefix_breaks` counts
the splits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from gym._core._errors import ConfigError

__all__ = [
    "EpisodeSamples",
    "Sample",
    "TurnTokens",
    "episode_samples",
    "first_steps",
    "turn_tokens",
]

_Step = TypeVar("_Step")


class TurnTokens(BaseModel):
    """What a policy recorded for one turn."""

    prompt: list[int]
    """Token ids of the prompt the policy generated from."""
    completion: list[int]
    """Token ids it sampled."""
    logprobs: list[float]
    """The sampler's log-probability of each sampled token."""


class Sample(BaseModel):
    """One training sequence: ids, which of them were sampled, and their rollout logprobs."""

    input_ids: list[int]
    """Prompt, sampled and environment token ids, in order."""
    loss_mask: list[int]
    """1 on the tokens the policy sampled, 0 on prompt and environment tokens."""
    rollout_logprobs: list[float]
    """The sampler's log-probability at each sampled token, 0.0 elsewhere."""
    turns: list[int]
    """Indices of the episode's turns this sample holds."""
    truncated: bool = False
    """Its last completion did not end with the end-of-turn token (cut by the token budget,
    or stopped at a stop string)."""
    advantage: float = 0.0
    """The advantage every sampled token of the sample gets (set by the caller)."""
    episode_id: str = ""
    """The episode it came from."""

    @property
    def sampled(self) -> int:
        """How many tokens the policy sampled in it."""
        return sum(self.loss_mask)


class EpisodeSamples(BaseModel):
    """The samples of one episode and how often its prefix property broke."""

    samples: list[Sample] = Field(default_factory=list)
    """One sample, or one per run of turns that keep the prefix property."""
    prefix_breaks: int = 0
    """Turns whose prompt did not start with the sequence before it (each began a sample)."""


def _ids(value: Any, what: str, turn: int) -> list[Any]:
    if value is None:
        raise ConfigError(
            f"turn {turn} has no {what}: train on episodes from a policy that records "
            "token ids and logprobs (local, tiny, or openai against vLLM)"
        )
    return list(value)


def turn_tokens(turns: Sequence[Any]) -> list[TurnTokens]:
    """The token records of an episode's turns.

    Args:
        turns: `gym.policies.Turn` objects (an `EpisodeResult`'s ``turns``) or stored step rows
            (``Store.steps(episode_id)``, one per turn: see `first_steps`): anything
            with ``prompt_token_ids``, ``completion_token_ids`` and ``logprobs``.

    Raises:
        ConfigError: a turn lacks token ids or logprobs, or they disagree in length.
    """
    out = []
    for i, turn in enumerate(turns):
        completion = _ids(turn.completion_token_ids, "completion token ids", i)
        logprobs = _ids(turn.logprobs, "logprobs", i)
        if len(logprobs) != len(completion):
            raise ConfigError(
                f"turn {i} has {len(completion)} sampled tokens but {len(logprobs)} logprobs"
            )
        prompt = _ids(turn.prompt_token_ids, "prompt token ids", i)
        out.append(TurnTokens(prompt=prompt, completion=completion, logprobs=logprobs))
    return out


def first_steps(steps: Sequence[_Step], said: Sequence[int]) -> list[_Step]:
    """The steps that hold their turn's tokens: the first step of each policy turn.

    A turn that made several tool calls made a step per call, and the runner stores the
    turn's tokens on its first call's step only (the later ones hold None): a turn is its
    tokens once, whatever calls it made. A step past ``said`` is a turn of its own.

    Args:
        steps: an episode's stored steps, in order.
        said: for each step, the policy turn (assistant message) that made it
            (`gym._store.said_by_step`).
    """
    return [s for i, s in enumerate(steps) if i == 0 or i >= len(said) or said[i] != said[i - 1]]


class _Builder:
    """The sample being grown, turn by turn."""

    def __init__(self, index: int, turn: TurnTokens) -> None:
        self.ids = list(turn.prompt)
        self.mask = [0] * len(turn.prompt)
        self.logprobs = [0.0] * len(turn.prompt)
        self.turns: list[int] = []
        self.add(index, turn)

    def extends(self, turn: TurnTokens) -> bool:
        return turn.prompt[: len(self.ids)] == self.ids

    def add(self, index: int, turn: TurnTokens) -> None:
        env = turn.prompt[len(self.ids) :] if self.turns else []
        self.ids += env + turn.completion
        self.mask += [0] * len(env) + [1] * len(turn.completion)
        self.logprobs += [0.0] * len(env) + turn.logprobs
        self.turns.append(index)

    def sample(self, eos: int | None) -> Sample:
        ends = not self.mask[-1] or eos is None or self.ids[-1] == eos
        return Sample(
            input_ids=self.ids,
            loss_mask=self.mask,
            rollout_logprobs=self.logprobs,
            turns=self.turns,
            truncated=not ends,
        )


def episode_samples(
    turns: Sequence[TurnTokens], *, eos_token_id: int | None = None
) -> EpisodeSamples:
    """Training samples of one episode, split where the prefix property breaks.

    Args:
        turns: the episode's turns in order (see `turn_tokens`).
        eos_token_id: the end-of-turn token; when given, a sample whose last
            completion does not end with it is marked ``truncated``.
    """
    if not turns:
        return EpisodeSamples()
    current = _Builder(0, turns[0])
    samples, breaks = [], 0
    for index, turn in enumerate(turns[1:], start=1):
        if current.extends(turn):
            current.add(index, turn)
            continue
        samples.append(current.sample(eos_token_id))
        current, breaks = _Builder(index, turn), breaks + 1
    samples.append(current.sample(eos_token_id))
    return EpisodeSamples(samples=samples, prefix_breaks=breaks)
