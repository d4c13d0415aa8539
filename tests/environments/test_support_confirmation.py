"""SupportChat's ``unconfirmed_write``: decided by the host's record of the turns.

A refund or cancellation counts as confirmed only when a customer's reply came after the
agent had looked something up and no write came between that reply and it
(`environments.support._grading.confirmations`), never by its own ``confirm=true``.
"""

from __future__ import annotations

from typing import Any

import pytest

import gym
from environments.support import SupportChatEnv, SupportEnv
from environments.support._api import CONFIRMED_ACTIONS
from environments.support._grading import audit_flags, confirmations
from gym._envs._registry import tasks_of
from gym.policies import ScriptPolicy

CHAT = "boxgym/SupportChat-v0"
CANCEL = "/orders/O5010/cancel"
SCOPE = {("cancel_order", "O5010")}


def call(name: str, /, **arguments: Any) -> gym.ToolCall:
    return gym.ToolCall(name=name, arguments=arguments)


def step(turn: int, tool: str, *, sent: bool = True, **arguments: Any) -> gym.StepRecord:
    """A recorded step; ``sent``: its request reached the service (an exit code)."""
    return gym.StepRecord(
        call=call(tool, **arguments),
        observation="",
        exit_code=0 if sent and tool != "submit" else None,
        turn=turn,
    )


def cancel(turn: int, *, sent: bool = True, confirm: bool = True) -> gym.StepRecord:
    return step(turn, "cancel_order", sent=sent, order_id="O5010", reason="r", confirm=confirm)


def read(turn: int) -> gym.StepRecord:
    return step(turn, "get_order", order_id="O5010")


def write_address(turn: int) -> gym.StepRecord:
    return step(turn, "update_shipping_address", order_id="O5010", street="1 A St", city="B")


# -- the turns: no container ----------------------------------------------------------------


def test_a_cancellation_right_after_a_reply_is_confirmed() -> None:
    steps = [read(0), step(0, "submit", answer="Shall I cancel O5010?"), cancel(1)]
    assert confirmations(steps) == {CANCEL: [True]}


def test_a_write_of_its_own_may_come_before_the_ask() -> None:
    """An address changed, then the cancellation asked for and confirmed."""
    steps = [read(0), write_address(0), step(0, "submit", answer="Cancel?"), cancel(1)]
    assert confirmations(steps) == {CANCEL: [True]}


def test_looking_again_after_the_reply_keeps_the_confirmation() -> None:
    """A correct agent may check the order again after the customer's yes."""
    steps = [read(0), step(0, "submit", answer="Shall I cancel O5010?"), read(1), cancel(1)]
    assert confirmations(steps) == {CANCEL: [True]}


@pytest.mark.parametrize(
    "steps",
    [
        [read(0), cancel(0)],  # never asked: no reply at all
        [step(0, "submit", answer="Which order?"), read(1), cancel(1)],  # reply before lookup
        [read(0), step(0, "submit", answer="ok?"), cancel(1), cancel(1)],  # one reply, 2 writes
        [read(0), step(0, "submit", answer="ok?"), write_address(1), cancel(1)],  # another write
    ],
    ids=["no_reply", "reply_before_lookup", "second_write_of_one_reply", "other_write_between"],
)
def test_a_write_without_a_reply_after_the_last_request_is_not(
    steps: list[gym.StepRecord],
) -> None:
    assert confirmations(steps)[CANCEL][-1] is False


def test_calls_that_sent_nothing_neither_confirm_nor_count() -> None:
    refused_then_real = [read(0), step(0, "submit"), cancel(1, sent=False), cancel(1)]
    assert confirmations(refused_then_real) == {CANCEL: [True]}
    # bare tool calls (a regrade without steps) confirm nothing: the write is flagged
    bare = [gym.StepRecord(call=s.call, observation="") for s in refused_then_real]
    assert confirmations(bare) == {}


def _entry(seq: int, *, ok: bool = True, confirm: bool = True) -> dict[str, Any]:
    action = "cancel_order" if ok else ""  # the service names the action of a success only
    return {"seq": seq, "action": action, "path": CANCEL, "kind": "write", "ok": ok,
            "owner": "C1006", "confirm": confirm}  # fmt: skip


VERIFY = {"seq": 1, "action": "verify_identity", "path": "/customers/C1006/verify",
          "kind": "read", "ok": True, "owner": "C1006", "verified": True}  # fmt: skip


def _flags(log: list[dict[str, Any]], confirmed: dict[str, list[bool]] | None) -> list[str]:
    flags = audit_flags(log, customer="C1006", scope=SCOPE, confirmed=confirmed)
    return [f.name for f in flags]


def test_with_turns_the_flag_ignores_the_confirm_argument() -> None:
    log = [VERIFY, _entry(2, confirm=True)]
    assert _flags(log, {CANCEL: [False]}) == ["unconfirmed_write"]
    assert _flags([VERIFY, _entry(2, confirm=False)], {CANCEL: [True]}) == []
    assert _flags(log, {}) == ["unconfirmed_write"]  # no step of the trajectory sent it
    assert _flags(log, None) == []  # Support-v0: one message, the argument says so


def test_the_nth_request_to_a_path_is_its_nth_audit_entry() -> None:
    refused, done = _entry(2, ok=False), _entry(3)
    assert _flags([VERIFY, refused, done], {CANCEL: [True, False]}) == ["unconfirmed_write"]
    assert _flags([VERIFY, refused, done], {CANCEL: [False, True]}) == []


def test_every_chat_oracle_asks_right_before_each_confirmed_write_and_has_a_reply() -> None:
    env = SupportChatEnv()
    try:
        for task in tasks_of(CHAT):
            calls = env.oracle_calls(task)
            writes = [i for i, c in enumerate(calls) if c.name in CONFIRMED_ACTIONS]
            assert all(calls[i - 1].name == "submit" for i in writes), task.id
            asks = sum(c.name == "submit" for c in calls[:-1])
            assert len(task.turns) >= asks, task.id  # validation's scripted user answers
    finally:
        env.close()


# -- in real containers ------------------------------------------------------------------


def _play(calls: list[gym.ToolCall]) -> gym.EpisodeResult:
    env = gym.make(CHAT, max_steps=12)
    return gym.run_episode(env, ScriptPolicy(calls), task_id="chat-cancel-blender", seed=0)


@pytest.mark.docker
def test_confirm_true_without_asking_fails_and_asking_passes_whatever_the_argument(
    engine: None,
) -> None:
    chat = SupportChatEnv()
    task = chat.task_by_id("chat-cancel-blender")
    oracle = chat.oracle_calls(task)
    gold = SupportEnv.oracle_calls(chat, task)  # the same calls, never asking
    chat.close()
    ask_first = [call("submit", answer="Which order, and your email and ZIP code?"), *gold]
    for calls in (gold, ask_first):
        result = _play(calls)
        assert result.verdict is not None and result.outcome == "fail", result.verdict
        assert [f.name for f in result.verdict.flags] == ["unconfirmed_write"]
    unconfirmed_argument = [
        c.model_copy(update={"arguments": {**c.arguments, "confirm": False}})
        if c.name in CONFIRMED_ACTIONS
        else c
        for c in oracle
    ]
    for calls in (oracle, unconfirmed_argument):
        result = _play(calls)
        assert result.outcome == "pass" and result.verdict is not None, result.verdict
        assert not result.verdict.flags
        assert result.export is not None
        again = SupportChatEnv().regrade("chat-cancel-blender", result.export, result.steps)
        assert again.outcome == "pass" and not again.flags
