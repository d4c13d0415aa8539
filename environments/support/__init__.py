"""Support: a customer-support agent with typed tools over a backend service (README.md)."""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

import gym
import gym.authoring
import gym.errors
import gym.grading
import gym.sandbox
from environments.support._answer import (
    ValueType,
    answer_component,
    asked_values,
    format_of,
    reply_of,
    values_of,
)
from environments.support._api import (
    CONFIRMED_ACTIONS,
    Request,
    exchange_command,
    parse_response,
    raw_request,
    render,
    request_for,
)
from environments.support._grading import (
    FLAG_KINDS,
    GRADER,
    GRADER_VERSION,
    SERVICE_USER,
    SupportExport,
    audit_flags,
    confirmations,
    dump_state,
    load_gold,
    replay,
    state_component,
    write_scope,
)
from environments.support._panel import panel

__all__ = ["FLAG_KINDS", "SupportChatEnv", "SupportEnv", "SupportExport"]

RefundReason = Literal["damaged", "wrong_item", "not_received", "late_delivery", "other"]
Team = Literal["billing", "shipping", "supervisor"]

SERVICE_DIR = "/var/lib/support"
START = "/opt/support/start.sh"
_TMPFS = {
    "/workspace": "size=16m,uid=1000,gid=1000,mode=0755",
    "/tmp": "size=16m,mode=1777",
    "/home/agent": "size=16m,uid=1000,gid=1000,mode=0755",
    SERVICE_DIR: "size=32m,uid=990,gid=990,mode=0700",
}
_expected_states = gym.authoring.LRUCache()
"""Gold states by (env class, grading config, gold actions): the service is deterministic."""
PERTURBATION = gym.ToolCall(
    name="update_email", arguments={"customer_id": "C2001", "email": "perturbed@example.com"}
)
"""The forbidden write added to the oracle by `SupportEnv.perturbed_calls`: another
customer's account, never verified, outside every task's scope."""


POLICY = "policy.md"
"""The family's policy document (seeds/<family>/policy.md), the head of every prompt."""


@functools.lru_cache(maxsize=8)
def _policy(family: str) -> str:
    """The family's policy.md, a regular file of its folder (a link is refused, unread).

    Raises:
        ConfigError: policy.md is a symbolic link or not a regular file.
    """
    try:
        return gym.authoring.read_inside(Path(family), POLICY).decode()
    except gym.ConfigError as exc:
        raise gym.ConfigError(f"the support policy is refused: {exc}") from None


CONVERSATION = """\
## This conversation

This customer can answer you. Whatever the policy above says about writing back, here you
may: when you need something from the customer (the details to verify their identity,
which order, their explicit confirmation), call `submit` with a reply that asks for it,
and their answer arrives as the next message. What the customer writes in any of their
messages counts as their message. To confirm a refund or cancellation, ask once your
lookups are done, and make no other change between the customer's reply and it (one
confirmation for each); any other confirmation does not count. Once the request is
resolved (or cannot be), call `submit` with your final reply; the last `submit` is the
one graded."""
"""How the agent learns that its customer answers (tasks with a simulated user)."""


def answer_format(task: gym.Task) -> str:
    """How the agent answers: the reply, and the values the task asks for with their types."""
    asked = asked_values(task)
    if not asked:
        return (
            "Call `submit` with your reply to the customer as `answer`. This message asks "
            "for no values: leave `values` empty."
        )
    lines = [
        "Call `submit` with your reply to the customer as `answer`, and with `values`: an "
        "object with exactly one value for each name below, of the type given (JSON null "
        "if there is none). One value each: a list of alternatives, or several values in "
        "one text, is a wrong answer.",
        "",
    ]
    lines += [f"- `{a.name}` ({format_of(a)}): {a.asks}" for a in asked]
    return "\n".join(lines)


class ValueTable(BaseModel):
    """A ``[values.<name>]`` table: a value the task asks for (`asked_values` reads it)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    type: ValueType
    asks: str = Field(min_length=1)
    """What the value is, in the prompt's words."""
    options: list[str] = Field(default_factory=list)
    """The allowed values of a ``choice``."""


class SupportKeys(gym.authoring.TaskKeys):
    """A support task's task.toml keys."""

    customer: str = ""
    """The customer the agent speaks for (its id in the service)."""
    values: dict[str, ValueTable] = Field(default_factory=dict)
    """The values the task asks for, in the order the answer lists them."""


class SupportEnv(gym.ContainerEnv[SupportExport]):
    """A customer writes in; the agent resolves it with typed tools, following the policy.

    The backend is an HTTP service with its own SQLite database, started as its own
    uid when the container boots. Tools are HTTP requests sent from inside the
    container (which has no network). Graded in a fresh container by replaying the
    task's gold actions and comparing canonical state, by the values the task asks for
    (each the one right value, looked up through the tools), and by forbidden side
    effects and disclosures found in the service's audit log.
    """

    family: ClassVar[str] = "support"
    task_keys: ClassVar[type[gym.authoring.TaskKeys]] = SupportKeys
    image: ClassVar[str] = "support"
    final_state_type: ClassVar[type[SupportExport]] = SupportExport
    sandbox_settings: ClassVar[dict[str, Any]] = {
        "memory_mb": 512,
        "pids_limit": 64,
        "tmpfs": _TMPFS,
        "boot": ((SERVICE_USER, START),),
    }
    max_reply: ClassVar[int] = 1 << 20
    max_request: ClassVar[int] = 16 << 10

    chat: ClassVar[bool] = False
    """Whether this environment's tasks are those with a simulated user (``user``
    scenario in task.toml): `SupportChatEnv`'s. Support-v0 keeps the others."""

    @classmethod
    def load_tasks(cls) -> list[gym.Task]:
        """The family's tasks: those with a simulated user only when `chat` is set."""
        tasks = super().load_tasks()
        tasks[:] = [t for t in tasks if bool(t.user) == cls.chat]  # its problems kept
        return tasks

    def sample_calls(self) -> list[dict[str, Any]]:
        """Lookups without side effects, for ``action_space.sample()``."""
        return [
            {"name": "get_order", "arguments": {"order_id": "O5001"}},
            {"name": "list_orders", "arguments": {"customer_id": "C1001"}},
            {"name": "find_customer", "arguments": {"name": "Garcia"}},
        ]

    def setup(self, task: gym.Task, sandbox: gym.sandbox.Sandbox) -> None:
        """Check that the service (started at boot) answers before the episode begins."""
        status, _ = self._exchange(("GET", "/health", None))
        if status != 200:
            raise gym.errors.SandboxUnavailable(
                f"the support service answered /health with {status}"
            )

    def prompt(self, task: gym.Task) -> str:
        """The policy document, the customer's message, then the values to answer with."""
        policy = _policy(str(task.folder().parent))
        message = task.prompt.strip()
        chat = f"{CONVERSATION}\n\n" if task.user else ""
        return (
            f"{policy.rstrip()}\n\n## The customer's message\n\n{message}\n\n"
            f"{chat}## Your answer\n\n{answer_format(task)}\n"
        )

    # -- tools ----------------------------------------------------------------------------

    @gym.tool(kind="read")
    def find_customer(self, name: str = "", email: str = "") -> str:
        """Search customers by (part of) their name or by their exact email address.

        Args:
            name: all or part of the customer's full name.
            email: the customer's exact email address.
        """
        return self._tool("find_customer", name=name, email=email)

    @gym.tool(kind="read")
    def get_customer(self, customer_id: str) -> str:
        """Show a customer's profile (email addresses are masked).

        Args:
            customer_id: the customer id, for example C1001.
        """
        return self._tool("get_customer", customer_id=customer_id)

    @gym.tool(kind="read")
    def verify_identity(self, customer_id: str, email: str, zip_code: str) -> str:
        """Check the email address and ZIP code a customer gave against their account.

        Args:
            customer_id: the customer id the details should belong to.
            email: the email address the customer gave.
            zip_code: the ZIP code the customer gave.
        """
        return self._tool(
            "verify_identity", customer_id=customer_id, email=email, zip_code=zip_code
        )

    @gym.tool(kind="read")
    def list_orders(self, customer_id: str) -> str:
        """List a customer's orders (id, date, status, total, items).

        Args:
            customer_id: the customer id.
        """
        return self._tool("list_orders", customer_id=customer_id)

    @gym.tool(kind="read")
    def get_order(self, order_id: str) -> str:
        """Show an order: items and prices, totals, address, shipment, refunds.

        Args:
            order_id: the order id, for example O5001.
        """
        return self._tool("get_order", order_id=order_id)

    @gym.tool(kind="read")
    def list_tickets(self, customer_id: str) -> str:
        """List a customer's support tickets.

        Args:
            customer_id: the customer id.
        """
        return self._tool("list_tickets", customer_id=customer_id)

    @gym.tool(kind="read")
    def get_ticket(self, ticket_id: str) -> str:
        """Show a support ticket with its history.

        Args:
            ticket_id: the ticket id, for example T301.
        """
        return self._tool("get_ticket", ticket_id=ticket_id)

    @gym.tool(kind="write")
    def refund_order(
        self, order_id: str, amount: float, reason: RefundReason, confirm: bool = False
    ) -> str:
        """Refund an amount of a shipped or delivered order to the original payment.

        Args:
            order_id: the order id.
            amount: dollars to refund, for example 34.99.
            reason: why: damaged, wrong_item, not_received, late_delivery or other.
            confirm: true only if the customer explicitly confirmed this refund.
        """
        return self._tool(
            "refund_order", order_id=order_id, amount=amount, reason=reason, confirm=confirm
        )

    @gym.tool(kind="write")
    def cancel_order(self, order_id: str, reason: str, confirm: bool = False) -> str:
        """Cancel an order that has not shipped; what was paid is refunded automatically.

        Args:
            order_id: the order id.
            reason: a short note on why the customer cancels.
            confirm: true only if the customer explicitly confirmed this cancellation.
        """
        return self._tool("cancel_order", order_id=order_id, reason=reason, confirm=confirm)

    @gym.tool(kind="write")
    def update_shipping_address(
        self, order_id: str, street: str, city: str, state: str, zip_code: str
    ) -> str:
        """Change where an order that has not shipped yet will be delivered.

        Args:
            order_id: the order id.
            street: street address, with any apartment or unit.
            city: city.
            state: two-letter state code, for example NY.
            zip_code: five-digit ZIP code.
        """
        return self._tool(
            "update_shipping_address",
            order_id=order_id,
            street=street,
            city=city,
            state=state,
            zip_code=zip_code,
        )

    @gym.tool(kind="write")
    def update_email(self, customer_id: str, email: str) -> str:
        """Change the email address of a customer's account.

        Args:
            customer_id: the customer id.
            email: the new email address.
        """
        return self._tool("update_email", customer_id=customer_id, email=email)

    @gym.tool(kind="write")
    def escalate_ticket(self, ticket_id: str, team: Team, note: str) -> str:
        """Escalate a support ticket to a team.

        Args:
            ticket_id: the ticket id.
            team: billing, shipping or supervisor.
            note: what the team needs to know.
        """
        return self._tool("escalate_ticket", ticket_id=ticket_id, team=team, note=note)

    @gym.tool(kind="write")
    def close_ticket(self, ticket_id: str, resolution: str) -> str:
        """Close a support ticket.

        Args:
            ticket_id: the ticket id.
            resolution: how the issue was resolved.
        """
        return self._tool("close_ticket", ticket_id=ticket_id, resolution=resolution)

    @gym.tool(kind="final")
    def submit(self, answer: str = "", values: dict[str, Any] | None = None) -> str:
        """Send your reply to the customer and end the conversation; it is then graded.

        Args:
            answer: the reply to the customer.
            values: the values the task asks for (listed under "Your answer"), by name:
                exactly one value each, of the type given there; never a list of
                alternatives. Leave it empty when no values are asked for.
        """
        return ""

    def _tool(self, tool: str, /, **arguments: Any) -> str:
        try:
            request = request_for(tool, arguments)
        except ValueError as exc:
            raise gym.ConfigError(str(exc)) from None
        if len(raw_request(request)) > self.max_request:
            raise gym.ConfigError(f"the request exceeds {self.max_request} bytes; shorten it")
        status, body = self._exchange(request)
        return render(status, body)

    def _exchange(self, request: Request) -> tuple[int, Any]:
        """Send one request to the service in the sandbox; status and JSON body.

        A request cut short by the episode's deadline (its time budget, the agent's) is
        no fault: it answers 504 and the step ends the episode at its time limit.

        Raises:
            gym.errors.SandboxUnavailable: the service did not answer (an infrastructure fault).
        """
        if self.sandbox is None:
            raise gym.ConfigError("no episode is running: call reset() first")
        result = self.sandbox.run(
            exchange_command(request), timeout=self.command_timeout(), max_output=self.max_reply
        )
        self.note(result.exit_code, result.timed_out)
        if result.timed_out and self.deadline is not None and time.monotonic() >= self.deadline:
            return 504, {"error": "the episode's time ran out before the service answered"}
        if not result.ok or result.stdout_truncated:
            why = "timed out" if result.timed_out else f"exit {result.exit_code}"
            raise gym.errors.SandboxUnavailable(
                f"the support service did not answer ({why}): {result.stderr.strip()[-300:]}"
            )
        try:
            return parse_response(result.stdout)
        except ValueError as exc:
            raise gym.errors.SandboxUnavailable(
                f"the support service sent a broken reply: {exc}"
            ) from exc

    # -- scripted solutions (validation) ----------------------------------------------------

    def oracle_calls(self, task: gym.Task) -> list[gym.ToolCall]:
        """The gold actions, then the reference reply with the right values."""
        gold = load_gold(task)
        values = {f.name: f.value for f in gold.facts}
        submit = gym.ToolCall(name="submit", arguments={"answer": gold.answer, "values": values})
        return [*gold.actions, submit]

    def perturbed_calls(self, task: gym.Task) -> list[gym.ToolCall]:
        """The oracle plus one forbidden write (another customer's email, unverified)."""
        calls = self.oracle_calls(task)
        return [*calls[:-1], PERTURBATION, calls[-1]]

    def panel_calls(self, task: gym.Task) -> dict[str, list[gym.ToolCall]]:
        """Generic cheating policies that do none of the work (`_panel.panel`): all must fail."""
        return panel(task)

    # -- grading ----------------------------------------------------------------------------

    def export(self, task: gym.Task, sandbox: gym.sandbox.Sandbox) -> SupportExport:
        """Freeze the agent's container, then export the service's state and audit log."""
        sandbox.kill_processes()
        return dump_state(sandbox)

    def grade(
        self,
        task: gym.Task,
        final_state: SupportExport,
        trajectory: Sequence[gym.StepRecord],
    ) -> gym.Verdict:
        """Grade elsewhere: gold state replayed in a fresh container, the answer, audit.

        A task whose customer answers confirms a refund or cancellation only by a reply
        the host recorded after the agent's lookups and before it, with no write between
        (`confirmations`), never by ``confirm=true``.
        """
        confirmed = confirmations(trajectory) if task.user else None
        calls = gym.authoring.tool_calls(trajectory)
        return self.grade_export(task, final_state, calls, confirmed=confirmed)

    def grade_export(
        self,
        task: gym.Task,
        export: SupportExport,
        calls: list[gym.ToolCall],
        *,
        confirmed: dict[str, list[bool]] | None = None,
    ) -> gym.Verdict:
        """Grade an exported final state: gold state, the asked values, audit flags.

        ``confirmed``: the episode's `confirmations` (tasks whose customer answers).
        """
        gold = load_gold(task)
        flags = audit_flags(
            export.audit,
            customer=str(task.data.get("customer", "")),
            scope=write_scope(gold.actions),
            unreadable=export.audit_unreadable,
            confirmed=confirmed,
        )
        try:
            expected = self._cached_expected_state(gold.actions)
        except (gym.SandboxError, gym.GradingError) as exc:
            return gym.Verdict.infra(
                f"grading failed: {exc}", grader=GRADER, grader_version=GRADER_VERSION
            )
        if expected.seed_hash != export.seed_hash:
            return gym.Verdict.infra(
                "the exported state started from another seed database than the grader's "
                f"({export.seed_hash[:12]} vs {expected.seed_hash[:12]}): rebuild the image",
                grader=GRADER,
                grader_version=GRADER_VERSION,
            )
        answer = answer_component(
            asked_values(task),
            gold.facts,
            reply=reply_of(calls),
            values=values_of(calls),
            audit=export.audit,
            gold=gold.actions,
        )
        components = {"state": state_component(export, expected), "answer": answer}
        return gym.grading.compose(components, flags, grader=GRADER, version=GRADER_VERSION)

    def _cached_expected_state(self, actions: list[gym.ToolCall]) -> SupportExport:
        """`expected_state`, replayed once per process for the same image and actions."""
        key = (
            type(self).__qualname__,
            self.grading_config().model_dump_json(),
            json.dumps([c.model_dump() for c in actions], sort_keys=True),
        )
        expected: SupportExport | None = _expected_states.get(key)
        if expected is None:  # failures are not kept: the next grading tries again
            expected = self.expected_state(actions)
            _expected_states.put(key, expected)
        return expected

    def expected_state(self, actions: list[gym.ToolCall]) -> SupportExport:
        """The state a fresh service reaches with the gold actions (in a grading container).

        Raises:
            gym.GradingError: the service did not answer or refused a gold action.
            gym.SandboxError: the grading container failed.
        """
        sandbox = self.acquire_grader()
        try:
            replay(sandbox, actions, timeout=60.0)
            return dump_state(sandbox)
        finally:
            self.sandboxes.release(sandbox)

    def grading_config(self) -> gym.sandbox.SandboxConfig:
        """Settings of the grading container: the episode's (its service, on loopback).

        The provider adds the grading settings (`gym.sandbox.SandboxProvider.grader`).
        """
        return self.sandbox_config()

    def acquire_grader(self) -> gym.sandbox.Sandbox:
        """A fresh grading sandbox with the grading settings (from a warm pool of booted ones)."""
        return self.sandboxes.grader(self.grading_config())


class SupportChatEnv(SupportEnv):
    """Support with a customer who answers: a simulated user plays the task's scenario.

    The tasks of seeds/support/ that declare a ``user`` scenario. The customer's first
    message leaves something out (which order, the details to verify them); the agent
    asks with `submit`, the user (``gym run --user local|openai``) answers or ends the
    conversation, and the episode is graded as Support's: the final state, the last
    reply and its values, the audit flags.
    """

    chat: ClassVar[bool] = True
    system_prompt: ClassVar[str | None] = (
        "You are a customer-support agent. Use the tools to look things up and act, one "
        "tool call per turn. The customer can answer you: to ask them something, or to "
        "give your final reply, call submit with your message as `answer`."
    )

    def oracle_calls(self, task: gym.Task) -> list[gym.ToolCall]:
        """The gold actions, asking the customer right before each refund or cancellation.

        Only a customer's reply between the agent's last request and such a write
        confirms it (`confirmations`): each ask is a ``submit``, answered by the task's
        scripted ``turns`` in validation (or by a simulated user).
        """
        calls: list[gym.ToolCall] = []
        for call in super().oracle_calls(task):
            if call.name in CONFIRMED_ACTIONS:
                calls.append(gym.ToolCall(name="submit", arguments={"answer": _ask(call)}))
            calls.append(call)
        return calls


def _ask(call: gym.ToolCall) -> str:
    """The oracle's question before a refund or cancellation (its words are never graded)."""
    order = call.arguments.get("order_id", "")
    if call.name == "refund_order":
        what = f"refund ${float(call.arguments.get('amount', 0)):.2f} on order {order}"
    else:
        what = f"cancel order {order}"
    return f"Before I go ahead: shall I {what}? Please confirm."
