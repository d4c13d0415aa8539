"""boxgym/SupportChat-v0: Support tasks whose customer answers, played by a simulated user."""

from __future__ import annotations

import importlib.util
import json
from typing import Any

import pytest

import gym
from environments.support import CONVERSATION, SupportChatEnv, SupportEnv
from environments.support._grading import load_gold
from gym._envs._registry import tasks_of
from gym.policies import LocalPolicy, Policy, ScriptPolicy, SimulatedUser, Turn

CHAT = "boxgym/SupportChat-v0"
STOP = "###STOP###"
HAVE_LOCAL = all(importlib.util.find_spec(m) for m in ("torch", "transformers", "gguf"))
needs_local = pytest.mark.skipif(
    not HAVE_LOCAL, reason="the local extra is not installed: pip install -e '.[local]'"
)


def call(name: str, /, **arguments: Any) -> gym.ToolCall:
    return gym.ToolCall(name=name, arguments=arguments)


# -- without containers -------------------------------------------------------------------


def test_the_chat_env_holds_the_tasks_with_a_user_and_support_v0_the_others():
    chat = tasks_of(CHAT)
    plain = tasks_of("boxgym/Support-v0")
    assert {t.id for t in chat} == {"chat-cancel-blender", "chat-address-which-order"}
    assert all(t.user for t in chat) and not any(t.user for t in plain)
    assert {t.split for t in chat} == {"train", "eval"}
    assert SupportChatEnv.load_tasks() == chat and SupportEnv.load_tasks() == plain


@pytest.mark.parametrize("task_id", ["chat-cancel-blender", "chat-address-which-order"])
def test_the_first_message_leaves_out_what_the_agent_must_ask(task_id):
    (task,) = [t for t in tasks_of(CHAT) if t.id == task_id]
    gold = load_gold(task)
    asked = [json.dumps(a.arguments) for a in gold.actions if a.name == "verify_identity"]
    email = json.loads(asked[0])["email"]
    written = [a for a in gold.actions if a.name in ("cancel_order", "update_shipping_address")]
    order = written[0].arguments["order_id"]
    for needed in (email, order):
        assert needed in task.user and needed not in task.prompt


def test_the_agent_is_told_its_customer_answers():
    env = gym.make(CHAT)
    inner = gym.make("boxgym/Support-v0")
    try:
        task = env.unwrapped.task_by_id("chat-cancel-blender")
        prompt = env.unwrapped.prompt(task)
        assert CONVERSATION in prompt and task.prompt.strip() in prompt
        assert "customer can answer" in env.unwrapped.system_prompt_for(task)
        plain = inner.unwrapped.task_by_id("cancel-espresso")
        assert CONVERSATION not in inner.unwrapped.prompt(plain)
        assert "customer can answer" not in inner.unwrapped.system_prompt_for(plain)
    finally:
        env.close()
        inner.close()


# -- in real containers ------------------------------------------------------------------


class Customer(Policy):
    """A stand-in user policy: the customer's lines, in order."""

    name = "customer"

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.asked: list[list[dict[str, Any]]] = []

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Turn:
        self.asked.append(messages)
        return Turn(message={"role": "assistant", "content": self.lines[len(self.asked) - 1]})


ASK = "Happy to help. Which order is it, and what are your email address and ZIP code?"
CONFIRM = "I found order O5010 (blender, $89.00). Shall I cancel it? Please confirm."
DONE = "Order O5010 is cancelled, and the full $89.00 will be refunded."
AGENT = [
    call("submit", answer=ASK),
    call("find_customer", email="farah.haddad@example.com"),
    call(
        "verify_identity", customer_id="C1006", email="farah.haddad@example.com", zip_code="02139"
    ),
    call("get_order", order_id="O5010"),
    call("submit", answer=CONFIRM),
    call("cancel_order", order_id="O5010", reason="Given one as a present", confirm=True),
    call("submit", answer=DONE),
]
LINES = [
    "It's the blender, O5010. Email farah.haddad@example.com, ZIP 02139.",
    "Yes, please cancel order O5010.",
    f"Great, thank you! {STOP}",
]


@pytest.mark.docker
def test_the_customer_answers_each_submit_and_the_last_one_is_graded(engine):
    customer = Customer(LINES)
    user = SimulatedUser(customer, seed=0)
    env = gym.make(CHAT, user=user, max_steps=12)
    result = gym.run_episode(env, ScriptPolicy(AGENT), task_id="chat-cancel-blender", seed=0)
    assert result.outcome == "pass", result.verdict
    ends = [(s.turn, s.user) for s in result.steps if s.turn_end]
    assert ends == [(0, LINES[0]), (1, LINES[1]), (2, None)]  # the stop token ended it
    said = [m["content"] for m in result.messages if m["role"] == "user"][1:]
    assert said == LINES[:2]
    # the customer read the agent's replies, never the policy document or tool output
    assert [m["content"] for m in customer.asked[-1][1:]] == [
        "Hi, I'd like to cancel an order I placed last week, please.",
        ASK,
        LINES[0],
        CONFIRM,
        LINES[1],
        DONE,
    ]
    assert [(t["turn"], t["content"]) for t in result.user_transcript[1:]] == [
        (1, LINES[0]),
        (2, LINES[1]),
    ]
    assert result.user_transcript[1]["raw"]["source"] == "policy"
    assert user.transcript[-1]["ended"] == "stop" and user.transcript[-1]["raw"] == LINES[2]


class SmallContext(Policy):
    """A stand-in user policy whose model holds ``room`` characters: past them it is
    refused as a served model's context is (`ContextFull`)."""

    name = "small-context"

    def __init__(self, room: int) -> None:
        self.room = room

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Turn:
        size = sum(len(str(m.get("content") or "")) for m in messages)
        if size > self.room:
            raise gym.policies.ContextFull(f"{size} characters", context_tokens=self.room)
        return Turn(message={"role": "assistant", "content": "It is order O5010."})


@pytest.mark.docker
@pytest.mark.parametrize(
    ("room", "outcome"), [(20_000, "fail"), (200, "infra_error")], ids=["reply", "scenario"]
)
def test_a_user_context_filled_by_the_agents_reply_is_graded_not_infra(engine, room, outcome):
    """The agent's reply is as long as it makes it: one past the user's context ends the
    conversation, as its turn limit does, and the episode is graded (it was infra_error,
    the agent's failure turned into the environment's). Only a scenario that does not fit
    the user's model alone is the environment's fault."""
    user = SimulatedUser(SmallContext(room), seed=0)
    env = gym.make(CHAT, user=user, max_steps=4)
    wall = call("submit", answer="Thank you for writing to us. " * 2000)
    result = gym.run_episode(env, ScriptPolicy([wall]), task_id="chat-cancel-blender", seed=0)
    assert result.outcome == outcome, result.verdict
    if outcome == "fail":
        assert user.transcript[-1]["ended"] == "context_full"
        assert user.transcript[-1]["source"] == "limit"


@pytest.mark.docker
def test_without_a_user_only_the_scripted_turns_answer(engine):
    env = gym.make(CHAT, max_steps=12)
    result = gym.run_episode(env, ScriptPolicy(AGENT), task_id="chat-cancel-blender", seed=0)
    # the task's one scripted turn answers the first question; nobody answers the second
    ends = [(s.turn, s.user) for s in result.steps if s.turn_end]
    assert ends == [(0, "Yes, please cancel order O5010."), (1, None)]
    assert result.outcome == "fail" and len(result.steps) == 5  # nothing was cancelled


def _local_run(seed: int) -> list[dict[str, Any]]:
    policy = LocalPolicy(max_new_tokens=12, constrained=False, prime=False)
    user = SimulatedUser(policy, seed=seed, max_turns=2)
    env = gym.make(CHAT, user=user, max_steps=4)
    ask = [call("submit", answer=ASK), call("submit", answer=DONE)]
    result = gym.run_episode(env, ScriptPolicy(ask), task_id="chat-cancel-blender", seed=1)
    assert result.outcome in ("pass", "fail"), result.end_reason  # graded, never infra_error
    assert user.transcript[1]["source"] == "policy" and user.transcript[1]["usage"]
    return [{k: t[k] for k in ("turn", "message", "raw", "ended")} for t in user.transcript]


@needs_local
@pytest.mark.slow
@pytest.mark.docker
def test_a_local_policy_user_gives_the_same_messages_on_a_seeded_rerun(engine):
    first = _local_run(seed=5)
    assert first == _local_run(seed=5)
    assert len(first) >= 2 and first[1]["raw"]  # smollm2 wrote the customer's second turn
