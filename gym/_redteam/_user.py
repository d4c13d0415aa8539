"""The simulated user's class row: a model of the environment's reads the agent's words.

A customer played by a model (`gym._policy._user.SimulatedUser`) is asked with the
agent's replies in its prompt, and those are as long as the agent makes them. Whose
doing a refusal of that prompt is, is decided by behaviour: the user is asked once with
its scenario alone (the environment's text), and only a scenario that does not fit is
the environment's fault.

- ``user.context_filled_by_the_agent``: on every task with a user scenario, the agent's
  first reply is a wall of invented words, past the context of the user's model (a
  stand-in server on localhost, refusing as vLLM does past its context; the real
  `OpenAIPolicy` asks it). The conversation ends there and the episode is graded
  (``pass`` or ``fail``), never ``infra_error``: the agent's failure is not the
  environment's. Then the same with a model that refuses even the scenario alone: that
  is ``infra_error`` (no reward), the environment's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import gymnasium

from gym._core._tools import ToolCall
from gym._envs._registry import tasks_of
from gym._policy import OpenAIPolicy, ScriptPolicy, SimulatedUser
from gym._redteam._core import Attack, Context, Finding, Names, register
from gym._redteam._stub import Reply, StubServer
from gym._run._rollout import run_episode

__all__: list[str] = []

CHAT = "boxgym/SupportChat-v0"
CONTEXT = 2048
"""The stand-in user model's context, in tokens."""


class StandInUser:
    """A chat-completions server playing a customer's model of ``CONTEXT`` tokens.

    A request whose messages hold more than ``room`` characters is refused as vLLM
    refuses a prompt past the context (HTTP 400); any other gets one short line.
    """

    def __init__(self, room: int) -> None:
        self.room = room
        self.refused = 0
        self.serving = StubServer(self._answer)

    def _answer(self, body: dict[str, Any]) -> Reply:
        size = sum(len(json.dumps(m.get("content") or "")) for m in body.get("messages") or [])
        if size > self.room:
            self.refused += 1
            message = (
                f"This model's maximum context length is {CONTEXT} tokens. However, you "
                f"requested {size // 3} tokens in the messages. Please reduce the length."
            )
            return Reply(status=400, body={"object": "error", "message": message, "code": 400})
        said = {"role": "assistant", "content": "Could you tell me what you found, please?"}
        choice = {"index": 0, "message": said, "finish_reason": "stop"}
        usage = {"prompt_tokens": size // 4, "completion_tokens": 9, "total_tokens": size // 4 + 9}
        return Reply(
            body={"id": "u", "object": "chat.completion", "choices": [choice], "usage": usage}
        )

    def __enter__(self) -> StandInUser:
        self.serving.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.serving.__exit__(*exc)


def _wall(names: Names) -> str:
    """Some 60,000 characters of invented words: far past the stand-in's context."""
    words = [names.ident()[: names.rng.randrange(3, 9)] for _ in range(200)]
    return " ".join(names.rng.choice(words) for _ in range(9000))


def _episode(ctx: Context, task_id: str, room: int, reply: str) -> tuple[str, int]:
    """One episode: the agent's one reply to a stand-in user; (outcome, refusals)."""
    with StandInUser(room) as stand_in:
        model = OpenAIPolicy("stand-in-user", stand_in.serving.url, context_tokens=CONTEXT)
        user = SimulatedUser(model, seed=ctx.seed)
        kwargs: dict[str, Any] = {"run": ctx.label, **ctx.env_kwargs}
        env = gymnasium.make(CHAT, user=user, max_steps=4, **kwargs)
        try:
            agent = ScriptPolicy([ToolCall(name="submit", arguments={"answer": reply})])
            result = run_episode(env, agent, task_id=task_id, seed=ctx.seed)
        finally:
            env.close()
        return result.outcome, stand_in.refused


@dataclass
class ContextFilledByTheAgent(Attack):
    """The agent's reply past the user model's context: graded; the scenario's: infra."""

    name: str = "user.context_filled_by_the_agent"
    envs: tuple[str, ...] = (CHAT,)
    expected: str = (
        "a reply past the user model's context ends the conversation, graded (pass or "
        "fail), never infra_error; a scenario past it alone: infra_error"
    )

    def run(self, ctx: Context, env_id: str) -> Finding:
        """Every task with a scenario, then one whose scenario alone is refused."""
        names = ctx.names()
        tasks = [t.id for t in tasks_of(env_id) if t.user]
        seen, held = [], True
        for task_id in tasks:
            outcome, refused = _episode(ctx, task_id, 20_000, _wall(names))
            ok = outcome in ("pass", "fail") and refused > 0
            held = held and ok
            seen.append(f"{task_id}: {outcome} after {refused} refusals")
        outcome, _ = _episode(ctx, tasks[0], 0, "Hello.")
        held = held and outcome == "infra_error"
        seen.append(f"scenario refused: {outcome}")
        return Finding("; ".join(seen), held)


register(ContextFilledByTheAgent())
