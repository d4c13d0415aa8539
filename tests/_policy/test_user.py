"""SimulatedUser: the turned-round conversation, seeding, the stop token, the transcript."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

import gym
from gym._policy import Policy, Turn
from gym._policy._user import (
    STOP,
    NamedUser,
    SimulatedUser,
    agent_replies,
    read_reply,
    turned_round,
    user_from_name,
    user_prompt,
)

SCENARIO = "You are Farah Haddad. You want to cancel order O5010. Your ZIP code is 02139."
TASK = gym.Task(id="t1", family="demo", prompt="Hi, I need to cancel an order.", user=SCENARIO)


def submit(answer: str, call_id: str = "c1") -> dict[str, Any]:
    """An assistant message calling submit with a reply, as the policies write it."""
    arguments = json.dumps({"answer": answer, "values": {}})
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": "submit", "arguments": arguments},
            }
        ],
    }


def lookup(call_id: str = "c0") -> dict[str, Any]:
    arguments = json.dumps({"order_id": "O5010"})
    return {
        "role": "assistant",
        "content": "Let me look.",
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": "get_order", "arguments": arguments},
            }
        ],
    }


def tool(call_id: str, text: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


PROMPT = "# Policy\n...\n## The customer's message\n\nHi, I need to cancel an order."
CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a support agent."},
    {"role": "user", "content": PROMPT},
    lookup("c0"),
    tool("c0", '{"status": "processing"}'),
    submit("Which order is it, and what is your ZIP code?", "c1"),
    tool("c1", ""),
]


class SeededStandIn(Policy):
    """A stand-in user policy: text drawn from (its episode's seed, the turn), and the
    messages it was asked with kept."""

    name = "stand-in"

    def __init__(self, replies: list[str] | None = None) -> None:
        self.replies = replies
        self.asked: list[list[dict[str, Any]]] = []
        self.tools: list[list[dict[str, Any]]] = []
        self.seed: int | None = None
        self.turn = 0

    def start(self, task: gym.Task, env: Any) -> None:
        self.seed, self.turn = env.np_random_seed, 0

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Turn:
        self.asked.append(messages)
        self.tools.append(tools)
        if self.replies is not None:
            text = self.replies[self.turn]
        else:
            text = f"It is order O50{random.Random(f'{self.seed}:{self.turn}').randrange(100)}."
        self.turn += 1
        return Turn(message={"role": "assistant", "content": text}, usage={"completion_tokens": 3})


def test_the_conversation_is_turned_round_without_tool_traffic():
    said = ["Hi, I need to cancel an order.", "O5010, ZIP 02139."]
    convo = [
        *CONVERSATION,
        {"role": "user", "content": said[1]},
        lookup("c2"),
        tool("c2", "{}"),
        {"role": "user", "content": "Error: invalid arguments (not the customer)"},
        submit("Done: order O5010 is cancelled.", "c3"),
        tool("c3", ""),
    ]
    assert turned_round(convo, said) == [
        {"role": "assistant", "content": "Hi, I need to cancel an order."},
        {"role": "user", "content": "Which order is it, and what is your ZIP code?"},
        {"role": "assistant", "content": "O5010, ZIP 02139."},
        {"role": "user", "content": "Done: order O5010 is cancelled."},
    ]


def test_a_reply_without_the_argument_is_the_messages_own_text():
    said_text = {
        "role": "assistant",
        "content": 'Which order?\n<tool_call>\n{"name": "submit", "arguments": {}}\n</tool_call>',
        "tool_calls": [
            {"id": "c9", "type": "function", "function": {"name": "submit", "arguments": "{}"}}
        ],
    }
    assert agent_replies([CONVERSATION[1], said_text], ["opening"]) == ["Which order?"]
    plain = {"role": "assistant", "content": "Could you tell me the order number?"}
    assert agent_replies([CONVERSATION[1], plain], ["opening"]) == [
        "Could you tell me the order number?"
    ]


def test_the_user_is_asked_with_its_scenario_and_no_tools():
    policy = SeededStandIn()
    user = SimulatedUser(policy, seed=1)
    user.start(TASK, seed=None)
    message = user.reply(TASK, CONVERSATION)
    assert message is not None and message.startswith("It is order O50")
    (asked,) = policy.asked
    assert policy.tools == [[]]
    assert asked[0] == {"role": "system", "content": user_prompt(TASK)}
    assert SCENARIO in asked[0]["content"] and STOP in asked[0]["content"]
    assert "# Policy" not in json.dumps(asked)  # the agent's prompt is not the customer's words
    assert asked[1:] == [
        {"role": "assistant", "content": TASK.prompt},
        {"role": "user", "content": "Which order is it, and what is your ZIP code?"},
    ]


def _messages(seed: int | None, reset_seed: int | None) -> list[str | None]:
    user = SimulatedUser(SeededStandIn(), seed=seed, max_turns=3)
    user.start(TASK, seed=reset_seed)
    first = user.reply(TASK, CONVERSATION)
    convo = [*CONVERSATION, {"role": "user", "content": first}, submit("Thanks, and?", "c5")]
    return [first, user.reply(TASK, convo)]


def test_the_same_seed_gives_the_same_messages_and_another_seed_others():
    assert _messages(7, reset_seed=1) == _messages(7, reset_seed=2)  # its own seed decides
    assert _messages(7, reset_seed=1) != _messages(8, reset_seed=1)
    assert _messages(None, reset_seed=5) == _messages(None, reset_seed=5)  # else the episode's
    assert _messages(None, reset_seed=5) != _messages(None, reset_seed=6)
    first, second = _messages(7, reset_seed=1)
    assert first != second  # seeded per turn


def test_the_stop_token_ends_the_conversation_and_is_recorded():
    policy = SeededStandIn(replies=["O5010, ZIP 02139.", f"Great, thanks! {STOP}"])
    user = SimulatedUser(policy, seed=0)
    user.start(TASK, seed=None)
    assert user.reply(TASK, CONVERSATION) == "O5010, ZIP 02139."
    convo = [*CONVERSATION, {"role": "user", "content": "O5010, ZIP 02139."}, submit("Done.")]
    assert user.reply(TASK, convo) is None
    assert [(t["turn"], t["message"], t["source"], t["ended"]) for t in user.transcript] == [
        (0, TASK.prompt, "task", ""),
        (1, "O5010, ZIP 02139.", "policy", ""),
        (2, None, "policy", "stop"),
    ]
    assert user.transcript[2]["raw"] == f"Great, thanks! {STOP}"
    assert user.transcript[1]["usage"] == {"completion_tokens": 3}


def test_max_turns_ends_without_asking_the_policy():
    policy = SeededStandIn(replies=["O5010."])
    user = SimulatedUser(policy, max_turns=2)
    user.start(TASK, seed=0)
    assert user.reply(TASK, CONVERSATION) == "O5010."
    assert user.reply(TASK, [*CONVERSATION, {"role": "user", "content": "O5010."}]) is None
    assert len(policy.asked) == 1
    assert user.transcript[-1]["ended"] == "max_turns" and user.transcript[-1]["source"] == "limit"


def test_a_task_without_a_scenario_plays_its_scripted_turns():
    task = gym.Task(id="t2", family="demo", prompt="first", turns=("second", "third"))
    policy = SeededStandIn()
    user = SimulatedUser(policy)
    user.start(task, seed=0)
    assert [user.reply(task, []), user.reply(task, []), user.reply(task, [])] == [
        "second",
        "third",
        None,
    ]
    assert policy.asked == []


def test_reply_before_start_and_bad_settings_are_config_errors():
    with pytest.raises(gym.ConfigError, match="start"):
        SimulatedUser(SeededStandIn()).reply(TASK, CONVERSATION)
    with pytest.raises(gym.ConfigError, match="max_turns"):
        SimulatedUser(SeededStandIn(), max_turns=0)


def test_read_reply():
    assert read_reply("  Sure, it is O5010.  ") == ("Sure, it is O5010.", "")
    assert read_reply("###OUT-OF-SCOPE###") == (None, "stop")
    assert read_reply("   ") == (None, "empty")


def test_users_by_name():
    local = user_from_name("local", seed=3, max_turns=2, max_new_tokens=16)
    assert isinstance(local, SimulatedUser)
    assert local.params()["policy"] == "local" and local.params()["seed"] == 3
    assert local.params()["policy_params"]["prime"] is False  # a user writes text, not calls
    with pytest.raises(gym.ConfigError, match="--user-model"):
        user_from_name("openai")
    with pytest.raises(gym.ConfigError, match="known users"):
        user_from_name("robot")
    assert isinstance(NamedUser("local", {"seed": 1})(), SimulatedUser)
