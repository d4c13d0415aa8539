"""Running one episode: an environment, a policy, and the conversation between them.

Each assistant turn may call several tools (parallel calls): each call is one
environment step, in order, answered by its own ``role: tool`` message. A step that ends
the episode ends the turn too: the calls after it are not run, and each is answered by a
tool message saying so (the conversation stays valid chat: every call has its answer).
When the final tool ends a user turn that is not the last, the step's ``info["user"]``
(the next user message) follows the tool messages as a ``role: user`` message, and the
calls after it in the same assistant message are not run either (their turn is over).
When the policy's conversation outgrows its model's context (`ContextFull`), the episode
ends truncated and is graded, as at a spent budget: the agent's own turns filled it.
The seconds a turn's policy spent on its server's failures (`Turn.waited_s`) are left
out of the episode's time budget: the server's failure is not the agent's.
Any other failure is never graded: the infrastructure's (`InfraError`) and the policy's
(`PolicyError`) end the episode as ``infra_error``, and so does an unexpected exception
of the policy's ``act`` or of a step, a defect, logged with its traceback, that ends
its episode and never the run.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import gymnasium
from pydantic import BaseModel, Field

from gym._core._errors import GymError, InfraError, PolicyError
from gym._core._models import Outcome, Verdict
from gym._core._tools import ToolCall
from gym._envs._env import SYSTEM_PROMPT, StepRecord, env_of
from gym._policy import Policy, Turn
from gym._policy._base import ContextFull

__all__ = ["SYSTEM_PROMPT", "EpisodeResult", "action_of", "failed", "run_episode"]

_log = logging.getLogger("gym.rollout")

NOT_RUN = "Not run: {why}, so the calls after it in your message were not executed."
"""The tool message answering a call left unexecuted after the episode or the turn ended."""


class EpisodeResult(BaseModel):
    """Everything one episode produced."""

    env_id: str
    """Environment id."""
    task_id: str
    """Task id."""
    split: str = ""
    """Task split."""
    seed: int | None = None
    """Reset seed."""
    outcome: Outcome
    """pass, fail or infra_error."""
    reward: float | None = None
    """Reward (None for infra_error)."""
    verdict: Verdict | None = None
    """The full verdict, when grading produced one."""
    end_reason: str = ""
    """submit, a limit, or the infrastructure failure."""
    messages: list[dict[str, Any]] = Field(default_factory=list)
    """The whole conversation in OpenAI chat format."""
    turns: list[Turn] = Field(default_factory=list)
    """Each assistant turn (token ids, logprobs, latency)."""
    steps: list[StepRecord] = Field(default_factory=list)
    """Each environment step (tool call, observation, timing, user turn)."""
    step_turns: list[int] = Field(default_factory=list)
    """For each step, the index in `turns` of the assistant turn that made it (a turn
    with several tool calls makes several steps)."""
    tools: list[dict[str, Any]] = Field(default_factory=list)
    """The episode's tool schemas (OpenAI format), as reset offered them."""
    export: dict[str, Any] | None = None
    """The final state handed to the grader (for regrading), when the family exports one."""
    duration_s: float = 0.0
    """Wall-clock seconds of the episode, grading included."""
    user_transcript: list[dict[str, Any]] = Field(default_factory=list)
    """The user's messages (`ContainerEnv.user_transcript`): each with its ``turn`` and
    ``content``, and from a simulated user the ``raw`` record of its policy's turn."""


def run_episode(
    env: gymnasium.Env[Any, Any],
    policy: Policy,
    *,
    task_id: str,
    seed: int | None = None,
    system_prompt: str | None = None,
) -> EpisodeResult:
    """Run one episode to its end and return what happened; infra failures are caught.

    Args:
        env: a boxgym environment made with `gym.make` (or `gymnasium.make`).
        policy: the policy that chooses tool calls.
        task_id: the task to run.
        seed: the reset seed.
        system_prompt: the first message of the conversation; None: the environment's
            (reset's ``info["system_prompt"]``: the task's, the family's, or
            `SYSTEM_PROMPT`).
    """
    start = time.monotonic()
    inner = env_of(env)
    messages: list[dict[str, Any]] = [{"role": "system", "content": system_prompt or SYSTEM_PROMPT}]
    turns: list[Turn] = []
    step_turns: list[int] = []
    tools: list[dict[str, Any]] = []
    result: dict[str, Any] = {"outcome": "infra_error", "end_reason": ""}
    export: dict[str, Any] | None = None
    try:
        obs, info = env.reset(seed=seed, options={"task": task_id})
        if system_prompt is None:
            messages[0]["content"] = info.get("system_prompt") or SYSTEM_PROMPT
        messages.append({"role": "user", "content": obs})
        tools = info["tools"]
        assert inner.task is not None
        policy.start(inner.task, inner)
        result, export = _contained(lambda: _loop(env, policy, messages, turns, tools, step_turns))
    except (InfraError, PolicyError) as exc:
        result, export = failed(exc)
    finally:
        env.close()
    return EpisodeResult(
        env_id=inner.env_id,
        task_id=task_id,
        split=inner.task.split if inner.task else "",
        seed=seed,
        messages=messages,
        turns=turns,
        steps=list(inner.trace),
        step_turns=step_turns,
        tools=tools,
        export=export,
        duration_s=time.monotonic() - start,
        user_transcript=list(inner.user_transcript),
        **result,
    )


def failed(exc: InfraError | PolicyError) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The result of an episode a failure of the infrastructure or the policy ended.

    Always ``infra_error``, never a reward; with the final state the failure carried.
    """
    if isinstance(exc, PolicyError):
        return {"outcome": "infra_error", "end_reason": f"policy: {exc}"}, None
    verdict = Verdict.model_validate(exc.verdict) if exc.verdict else None
    result = {"outcome": "infra_error", "verdict": verdict, "end_reason": f"infra: {exc}"}
    return result, exc.final_state


def action_of(call: ToolCall, content: Any) -> dict[str, Any]:
    """The env action for a tool call, carrying the text of the message that made it."""
    text = content if isinstance(content, str) or content is None else str(content)
    return {"name": call.name, "arguments": call.arguments, "id": call.id, "content": text}


Transition = tuple[str, Any, bool, bool, dict[str, Any]]


def _contained(
    play: Callable[[], tuple[dict[str, Any], dict[str, Any] | None]],
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """``play()`` (the episode's `_loop`); an unexpected exception ends it ``infra_error``.

    Whatever the model answered is the agent's and is read into a turn; an exception
    that is not boxgym's own (`GymError`) escaping the policy's ``act`` or a step is a
    defect of boxgym or of the policy, never the agent's doing: it is logged with its
    traceback and the episode is an infra_error (never graded), instead of the whole
    run crashing with the episodes in flight.
    """
    try:
        return play()
    except GymError:
        raise
    except Exception as exc:
        what = f"{type(exc).__name__}: {exc}"
        _log.error(
            "boxgym defect (please report it), its episode ends infra_error: %s", what, exc_info=exc
        )
        return failed(InfraError(f"boxgym defect: {what}"))


def _loop(
    env: gymnasium.Env[Any, Any],
    policy: Policy,
    messages: list[dict[str, Any]],
    turns: list[Turn],
    tools: list[dict[str, Any]],
    step_turns: list[int],
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Turns until the episode ends; the outcome fields and the exported final state."""
    inner = env_of(env)
    while True:
        try:
            turn = policy.act(messages, tools)
        except ContextFull as exc:  # the agent's doing: graded, never an infra_error
            _, reward, _, _, info = inner.end_episode(reason=exc.end_reason, truncated=True)
            return _ended(reward, info)
        inner.exclude_wait(turn.waited_s)  # the server failing is not the agent's time
        turns.append(turn)
        messages.append(turn.message)
        content = turn.message.get("content")
        if not turn.calls:
            step_turns.append(len(turns) - 1)
            obs, reward, terminated, truncated, info = env.step(str(content or ""))
            hint = f"\n({turn.parse_error})" if turn.parse_error else ""
            messages.append({"role": "user", "content": obs + hint})
        else:
            obs, reward, terminated, truncated, info = _calls(
                env, turn, messages, step_turns, len(turns) - 1
            )
        if terminated or truncated:
            return _ended(reward, info)


def _ended(reward: Any, info: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The outcome fields and the exported final state of a terminal step's info."""
    verdict = Verdict.model_validate(info["verdict"])
    outcome = {
        "outcome": verdict.outcome,
        "reward": float(reward),
        "verdict": verdict,
        "end_reason": info.get("end_reason", ""),
    }
    return outcome, info.get("final_state")


def _calls(
    env: gymnasium.Env[Any, Any],
    turn: Turn,
    messages: list[dict[str, Any]],
    step_turns: list[int],
    index: int,
) -> Transition:
    """Step each call of a turn in order, one tool message each; the last transition.

    Stops at a step that ends the episode or the user's turn; the calls after it are
    answered as not run. A next user message follows the tool messages.
    """
    content = turn.message.get("content")
    for i, call in enumerate(turn.calls):
        step_turns.append(index)
        obs, reward, terminated, truncated, info = env.step(action_of(call, content))
        messages.append({"role": "tool", "tool_call_id": call.id or "", "content": obs})
        ended = terminated or truncated
        if ended or "user" in info:
            why = "the episode ended" if ended else f"your turn ended with {call.name}"
            for rest in turn.calls[i + 1 :]:
                skipped = NOT_RUN.format(why=why)
                messages.append({"role": "tool", "tool_call_id": rest.id or "", "content": skipped})
            break
    if "user" in info and not (terminated or truncated):
        messages.append({"role": "user", "content": info["user"]})
    return obs, reward, terminated, truncated, info
