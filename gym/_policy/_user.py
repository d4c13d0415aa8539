"""A simulated user: a customer played by a policy of its own, seeded and recorded.

The agent talks to a customer who answers. `SimulatedUser` plays the task's ``user``
scenario (who the customer is, what they want, what they know) with any policy: the
``local`` one on the CPU, or ``openai`` against a served model. It is the ``user`` of a
`ContainerEnv`: the environment calls `SimulatedUser.start` at reset and
`SimulatedUser.reply` each time the agent ends its turn (``submit``), and the user's
message opens the next turn; None ends the episode.

After tau2-bench's user simulator: a system prompt of guidelines around the scenario,
the conversation turned round (the agent's replies are what the simulator reads, its own
messages are its assistant turns; tool traffic is left out), information given only when
asked, one short message at a time, and a stop token (``###STOP###``) when the request
is done or cannot be. Seeded and repeatable: the user's policy starts each episode with
the user's seed (the local policy then seeds its sampling per (seed, turn); greedy at
temperature 0), so the same seed, task and conversation give the same message. Every
turn is recorded in `SimulatedUser.transcript` (the message, the turn, the policy's raw
text, why the conversation ended).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from pydantic import BaseModel, Field

from gym._core._errors import ConfigError
from gym._core._models import Task
from gym._core._tools import decode_arguments
from gym._envs._users import ScriptedUser, User
from gym._policy._base import ContextFull, Policy

__all__ = [
    "STOP",
    "USERS",
    "NamedUser",
    "SimulatedUser",
    "UserTurn",
    "agent_replies",
    "turned_round",
    "user_from_name",
    "user_prompt",
]

STOP = "###STOP###"
"""The token a simulated user writes when its request is done or cannot be."""
ENDINGS = (STOP, "###TRANSFER###", "###OUT-OF-SCOPE###")
"""Tokens that end the conversation (tau2-bench's three)."""
USERS = ("scripted", "local", "openai")
"""Who may play the user on the command line (``gym run --user``)."""

GUIDELINES = f"""\
You are a customer writing to a customer-support agent. Stay in that role for the whole
conversation: you are the customer, never the agent.

- Write one short message at a time, as the customer would: plain sentences, no lists,
  no names of speakers, no tool calls.
- Follow the scenario below. Never make up facts it does not give you: what it does not
  say, you do not know.
- Give a piece of information (an email address, a ZIP code, an order, an address) only
  when the agent asks for it, and write it exactly as the scenario does.
- Say things in your own words rather than repeating the scenario.
- When your request is done, or the agent says it cannot be done, or the scenario gives
  you nothing more to say, write {STOP} and nothing else."""

_CALL_BLOCK = re.compile(r"<tool_call>.*?(?:</tool_call>|\Z)", re.DOTALL)


class UserTurn(BaseModel):
    """One entry of a simulated user's transcript: a message it sent, or the end."""

    turn: int
    """The user turn the message opens (0: the task's own first message)."""
    message: str | None
    """What the agent was sent; None: the user ended the conversation here."""
    source: Literal["task", "policy", "limit"]
    """``task`` for the task's first message, ``policy`` for the user policy's turns,
    ``limit`` when a limit ended the conversation (``max_turns``, without asking the
    policy; ``context_full``, the conversation past the policy's context)."""
    raw: str = ""
    """The user policy's whole text, as it wrote it (stop token included)."""
    ended: str = ""
    """Why the conversation ended here: ``stop`` (an ending token), ``empty`` (nothing
    written), ``max_turns`` or ``context_full``; '' when it goes on."""
    usage: dict[str, int] = Field(default_factory=dict)
    """Token counts of the user policy's turn."""
    latency_s: float = 0.0
    """Seconds the user policy took."""


@dataclass(frozen=True)
class _Episode:
    """What a policy's `Policy.start` reads of an episode: its seed (the user's here)."""

    np_random_seed: int | None


def user_prompt(task: Task) -> str:
    """The simulated user's system prompt: the guidelines, then the task's scenario."""
    return f"{GUIDELINES}\n\n<scenario>\n{scenario_of(task).strip()}\n</scenario>"


def scenario_of(task: Task) -> str:
    """The task's user scenario ('' when it has none)."""
    return str(task.user)


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def _said_text(message: dict[str, Any]) -> str:
    """An assistant message's text without the tool-call blocks written in it."""
    return _CALL_BLOCK.sub("", _text(message.get("content"))).strip()


def _final_reply(message: dict[str, Any], final_tool: str, reply_argument: str) -> str | None:
    """The reply a message sent with the final tool (its argument, else its text), or None."""
    for call in reversed(message.get("tool_calls") or []):
        fn = call.get("function", call) if isinstance(call, dict) else {}
        if fn.get("name") != final_tool:
            continue
        try:
            arguments = decode_arguments(final_tool, fn.get("arguments"))
        except ValueError:
            arguments = {}
        reply = arguments.get(reply_argument)
        return reply.strip() if isinstance(reply, str) else _said_text(message)
    return None


def _reply_in(segment: Sequence[dict[str, Any]], final_tool: str, reply_argument: str) -> str:
    """What the agent said to the user in one of its turns.

    Its last final call's reply, else its last text.
    """
    assistant = [m for m in segment if m.get("role") == "assistant"]
    for message in reversed(assistant):
        reply = _final_reply(message, final_tool, reply_argument)
        if reply is not None:
            return reply
    for message in reversed(assistant):
        if text := _said_text(message):
            return text
    return ""


def agent_replies(
    conversation: Sequence[dict[str, Any]],
    said: Sequence[str],
    *,
    final_tool: str = "submit",
    reply_argument: str = "answer",
) -> list[str]:
    """The agent's reply to each message the user sent, in order.

    The conversation is cut where the user's own messages appear (``said[1:]``, in order;
    the first user message is the environment's prompt, not the user's words). In each
    part, the agent's reply is the ``reply_argument`` of its last call of the final tool
    (Support's ``submit(answer=...)``), else that message's text, else its last text.
    Tool calls, tool results and any other message (an error shown as a user message)
    are left out.

    Args:
        conversation: the episode's OpenAI messages, from the agent's side.
        said: the user's messages so far, the task's first message first.
        final_tool: the tool that ends the agent's turn.
        reply_argument: the final tool's argument that holds the reply.
    """
    parts: list[list[dict[str, Any]]] = [[]]
    for message in conversation:
        mine = len(parts) < len(said) and _text(message.get("content")) == said[len(parts)]
        if message.get("role") == "user" and mine:
            parts.append([])
        else:
            parts[-1].append(message)
    return [_reply_in(part, final_tool, reply_argument) for part in parts]


def turned_round(
    conversation: Sequence[dict[str, Any]],
    said: Sequence[str],
    *,
    final_tool: str = "submit",
    reply_argument: str = "answer",
) -> list[dict[str, str]]:
    """The conversation as the simulated user reads it.

    Its own messages as ``assistant``, the agent's replies as ``user`` (see
    `agent_replies`), alternating.
    """
    replies = agent_replies(
        conversation, said, final_tool=final_tool, reply_argument=reply_argument
    )
    messages: list[dict[str, str]] = []
    for index, message in enumerate(said):
        messages.append({"role": "assistant", "content": message})
        if index < len(replies):
            messages.append({"role": "user", "content": replies[index]})
    return messages


def read_reply(raw: str) -> tuple[str | None, str]:
    """The message a user policy's text sends, and why the conversation ends ('' if not)."""
    text = raw.strip()
    if any(token in text for token in ENDINGS):
        return None, "stop"
    if not text:
        return None, "empty"
    return text, ""


class SimulatedUser:
    """A user simulator driven by a policy of its own (a `User` of `ContainerEnv`).

    A task without a ``user`` scenario is played from its scripted ``turns`` instead.

    Args:
        policy: who plays the user (a `LocalPolicy` with ``prime=False``, or an
            `OpenAIPolicy`; any policy whose turns are text). It is asked with no tools.
        seed: the user's seed: each episode starts the policy with it, so the local
            policy's sampling is seeded per (seed, turn). None: the episode's reset seed.
        max_turns: the most user turns in an episode, the task's first message
            included; the conversation ends after that many.
        final_tool: the tool with which the agent ends its turn.
        reply_argument: the final tool's argument holding the reply to the user (its
            message text is read when the call has none).

    Attributes:
        transcript: this episode's turns (`UserTurn` as JSON), the first message first.
    """

    def __init__(
        self,
        policy: Policy,
        *,
        seed: int | None = None,
        max_turns: int = 10,
        final_tool: str = "submit",
        reply_argument: str = "answer",
    ) -> None:
        if max_turns < 1:
            raise ConfigError(f"max_turns must be at least 1, not {max_turns}")
        self.policy = policy
        self.seed = seed
        self.max_turns = max_turns
        self.final_tool = final_tool
        self.reply_argument = reply_argument
        self.transcript: list[dict[str, Any]] = []
        self._said: list[str] = []
        self._scripted: list[str] = []
        self._last: dict[str, Any] | None = None
        self._started = False

    def params(self) -> dict[str, Any]:
        """What identifies this user in run lineage: its policy, seed and turn limit."""
        return {
            "policy": self.policy.name,
            "policy_params": self.policy.params(),
            "seed": self.seed,
            "max_turns": self.max_turns,
        }

    def start(self, task: Task, seed: int | None) -> None:
        """Begin an episode: the task's prompt is the user's first message.

        Args:
            task: the episode's task.
            seed: the episode's reset seed (used when the user has no seed of its own).
        """
        first = task.prompt.strip()
        self._said, self._started, self._last = [first], True, None
        self._scripted = list(task.turns)
        self.transcript = [UserTurn(turn=0, message=first, source="task").model_dump()]
        episode = _Episode(self.seed if self.seed is not None else seed)
        self.policy.start(task, cast(Any, episode))

    def reply(self, task: Task, conversation: list[dict[str, Any]]) -> str | None:
        """The user's next message after the agent ended its turn; None ends the episode.

        Args:
            task: the episode's task.
            conversation: the episode's OpenAI messages from the agent's side.

        Raises:
            ConfigError: called before `start`.
            ContextFull: the scenario alone is past the user policy's context (the
                conversation past it ends it instead: ``context_full``).
        """
        if not self._started:
            raise ConfigError("SimulatedUser.reply before start(): the environment starts it")
        turn = len(self._said)
        if not scenario_of(task):
            return self._scripted_reply(turn)
        if turn >= self.max_turns:
            self._record(UserTurn(turn=turn, message=None, source="limit", ended="max_turns"))
            return None
        messages = [
            {"role": "system", "content": user_prompt(task)},
            *turned_round(
                conversation,
                self._said,
                final_tool=self.final_tool,
                reply_argument=self.reply_argument,
            ),
        ]
        try:
            out = self.policy.act(messages, [])
        except ContextFull:
            self._check_the_scenario_fits(task)
            self._record(UserTurn(turn=turn, message=None, source="limit", ended="context_full"))
            return None
        raw = _text(out.message.get("content"))
        message, ended = read_reply(raw)
        self._record(
            UserTurn(
                turn=turn,
                message=message,
                source="policy",
                raw=raw,
                ended=ended,
                usage=out.usage,
                latency_s=out.latency_s,
            )
        )
        if message is not None:
            self._said.append(message)
        return message

    def _check_the_scenario_fits(self, task: Task) -> None:
        """Ask once with the scenario and the first message alone (after a `ContextFull`).

        Which text filled the user's context decides whose doing it is. The scenario is
        the task's and the environment's; the conversation is the agent's as much as the
        user's (its replies, and the user's answers to them): past the context, the
        conversation ends as at ``max_turns``, and the episode is graded. Only a scenario
        that does not fit alone is the environment's fault.

        Raises:
            ContextFull: the scenario alone is past the user policy's context.
        """
        alone = [
            {"role": "system", "content": user_prompt(task)},
            {"role": "assistant", "content": self._said[0]},
            {"role": "user", "content": "Hi."},
        ]
        self.policy.act(alone, [])

    def _scripted_reply(self, turn: int) -> str | None:
        """A task without a scenario: its scripted turns, in order."""
        if turn - 1 >= len(self._scripted):
            return None
        message = self._scripted[turn - 1]
        self._said.append(message)
        self._record(UserTurn(turn=turn, message=message, source="task"))
        return message

    def _record(self, turn: UserTurn) -> None:
        self._last = turn.model_dump()
        self.transcript.append(self._last)

    def raw_turn(self) -> dict[str, Any] | None:
        """The record of the last reply, kept in the environment's transcript.

        A `UserTurn` as JSON: the policy's raw text, why it ended (`RecordingUser`).
        """
        return self._last

    def close(self) -> None:
        """Release the user's policy."""
        self.policy.close()


# -- by name (the command line) -----------------------------------------------------------


def user_from_name(
    name: str,
    *,
    model: str | None = None,
    base_url: str | None = None,
    seed: int | None = None,
    max_turns: int = 10,
    temperature: float = 0.0,
    max_new_tokens: int = 128,
) -> User:
    """The user ``gym run --user`` names: the scripted turns, or a simulated user.

    Args:
        name: ``scripted`` (the task's ``turns``), ``local`` (a transformers model on
            the CPU, SmolLM2-135M-Instruct by default) or ``openai`` (a served model).
        model: the user's model (local: a bundled name or a folder; openai: required).
        base_url: the openai endpoint (``http://localhost:8000/v1`` by default).
        seed: the user's seed (None: each episode's reset seed).
        max_turns: the most user turns in an episode.
        temperature: the user policy's sampling temperature (0: greedy).
        max_new_tokens: the most tokens of one user message.

    Raises:
        ConfigError: an unknown name, or openai without a model.
    """
    if name == "scripted":
        return ScriptedUser()
    policy: Policy
    if name == "local":
        from gym._policy._local import DEFAULT_MODEL, LocalPolicy

        policy = LocalPolicy(
            model or DEFAULT_MODEL,
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            seed=seed or 0,
            constrained=False,
            prime=False,
        )
    elif name == "openai":
        if not model:
            raise ConfigError("--user openai needs --user-model (the served model's name)")
        from gym._policy._openai import OpenAIPolicy

        policy = OpenAIPolicy(
            model,
            base_url or "http://localhost:8000/v1",
            temperature=temperature,
            max_tokens=max_new_tokens,
            seed=seed,
            logprobs=False,
            return_token_ids=False,
            constrained=False,
        )
    else:
        raise ConfigError(f"unknown user {name!r}; known users: {', '.join(USERS)}")
    return SimulatedUser(policy, seed=seed, max_turns=max_turns)


@dataclass(frozen=True)
class NamedUser:
    """A user factory from ``gym run --user`` and its options: plain data, so it pickles.

    Attributes:
        name: one of `USERS`.
        params: `user_from_name`'s keyword arguments (model, base_url, seed...).
    """

    name: str
    params: dict[str, Any] = field(default_factory=dict)

    def __call__(self) -> User:
        """A new user (one per episode: a user keeps its episode's transcript)."""
        return user_from_name(self.name, **self.params)

    def check(self) -> None:
        """Reach the model server of a served user (``openai``) before a run stores anything.

        The other users have nothing to reach (a local model loads in each worker).

        Raises:
            PolicyError: nothing answers at ``--user-base-url``.
            ConfigError: the server does not serve ``--user-model``.
        """
        if self.name != "openai":
            return
        user = self()
        if isinstance(user, SimulatedUser):
            try:
                user.policy.check(flags="--user-")
            finally:
                user.close()
