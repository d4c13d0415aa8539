"""How support tool calls map onto the service's HTTP API, and how exchanges travel.

The agent has no shell: each tool call becomes one HTTP request, built here on the
host, sent by bash's ``/dev/tcp`` client inside the container (the container has no
network; the service listens on 127.0.0.1 there), and the raw response is parsed
here. The same mapping replays gold actions in the grading container.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlencode

__all__ = [
    "CONFIRMED_ACTIONS",
    "PORT",
    "WRITE_TOOLS",
    "Request",
    "batch_command",
    "exchange_command",
    "parse_batch",
    "parse_response",
    "raw_request",
    "render",
    "request_for",
    "target_of",
]

PORT = 8080
Request = tuple[str, str, dict[str, Any] | None]
"""An HTTP request: method, path (with query), JSON body or None."""

_ID = re.compile(r"^[A-Za-z0-9-]{1,32}$")
WRITE_TOOLS = frozenset(
    {
        "refund_order",
        "cancel_order",
        "update_shipping_address",
        "update_email",
        "escalate_ticket",
        "close_ticket",
    }
)
"""Tools that change the backend's state (the service logs them as writes)."""
CONFIRMED_ACTIONS = frozenset({"refund_order", "cancel_order"})
"""Writes the policy allows only after the customer's explicit confirmation."""


def ident(value: Any, what: str) -> str:
    """An id as the service spells it (trimmed, upper case), or ValueError."""
    text = str(value).strip().upper()
    if not _ID.match(text):
        raise ValueError(f"{what} {value!r} is not a valid id (letters, digits and '-')")
    return text  # the pattern admits nothing that would need quoting in a URL path


def _find(a: Mapping[str, Any]) -> Request:
    query = {k: str(a[k]) for k in ("name", "email") if a.get(k)}
    return ("GET", "/customers?" + urlencode(query), None)


_REQUESTS: dict[str, Callable[[Mapping[str, Any]], Request]] = {
    "find_customer": _find,
    "get_customer": lambda a: ("GET", f"/customers/{ident(a['customer_id'], 'customer')}", None),
    "verify_identity": lambda a: (
        "POST",
        f"/customers/{ident(a['customer_id'], 'customer')}/verify",
        {"email": a["email"], "zip_code": a["zip_code"]},
    ),
    "list_orders": lambda a: (
        "GET",
        f"/customers/{ident(a['customer_id'], 'customer')}/orders",
        None,
    ),
    "list_tickets": lambda a: (
        "GET",
        f"/customers/{ident(a['customer_id'], 'customer')}/tickets",
        None,
    ),
    "get_order": lambda a: ("GET", f"/orders/{ident(a['order_id'], 'order')}", None),
    "get_ticket": lambda a: ("GET", f"/tickets/{ident(a['ticket_id'], 'ticket')}", None),
    "refund_order": lambda a: (
        "POST",
        f"/orders/{ident(a['order_id'], 'order')}/refunds",
        {"amount": a["amount"], "reason": a["reason"], "confirm": a.get("confirm", False)},
    ),
    "cancel_order": lambda a: (
        "POST",
        f"/orders/{ident(a['order_id'], 'order')}/cancel",
        {"reason": a["reason"], "confirm": a.get("confirm", False)},
    ),
    "update_shipping_address": lambda a: (
        "PUT",
        f"/orders/{ident(a['order_id'], 'order')}/address",
        {"street": a["street"], "city": a["city"], "state": a["state"], "zip": a["zip_code"]},
    ),
    "update_email": lambda a: (
        "PUT",
        f"/customers/{ident(a['customer_id'], 'customer')}/email",
        {"email": a["email"]},
    ),
    "escalate_ticket": lambda a: (
        "POST",
        f"/tickets/{ident(a['ticket_id'], 'ticket')}/escalate",
        {"team": a["team"], "note": a.get("note", "")},
    ),
    "close_ticket": lambda a: (
        "POST",
        f"/tickets/{ident(a['ticket_id'], 'ticket')}/close",
        {"resolution": a.get("resolution", "")},
    ),
}


def request_for(name: str, arguments: Mapping[str, Any]) -> Request:
    """The HTTP request a tool call makes.

    Raises:
        ValueError: the tool is unknown, or an argument is missing or malformed.
    """
    build = _REQUESTS.get(name)
    if build is None:
        raise ValueError(f"no support tool named {name!r}")
    try:
        return build(arguments)
    except KeyError as exc:
        raise ValueError(f"{name} needs the argument {exc.args[0]!r}") from None


def target_of(path: str) -> str:
    """The resource id a request path acts on (``/orders/O5001/refunds`` -> ``O5001``)."""
    parts = path.split("?")[0].strip("/").split("/")
    return parts[1] if len(parts) > 1 else ""


def raw_request(request: Request) -> bytes:
    """The request as HTTP/1.1 bytes; ``Connection: close`` so the reply ends the stream."""
    method, path, body = request
    data = json.dumps(body).encode() if body is not None else b""
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
    )
    return head.encode() + data


def exchange_command(request: Request, port: int = PORT) -> str:
    """A bash command that sends the request to the service and prints the raw reply.

    It exits 3 when nothing listens on the port. The request travels base64-encoded,
    so no argument text is ever interpreted by the shell.
    """
    return _send(request, port, "cat")


def batch_command(requests: list[Request], port: int = PORT) -> str:
    """A bash script that sends requests in order, printing each raw reply on one line.

    Replies are base64-encoded; the script exits 3 as soon as nothing listens.
    """
    lines = ["set -o pipefail"]
    lines += [f"{_send(r, port, 'base64 -w0')} || exit 3; echo" for r in requests]
    return "\n".join(lines) + "\n"


def _send(request: Request, port: int, reader: str) -> str:
    """A subshell that sends the request (base64 on the command line) and reads the reply."""
    payload = base64.b64encode(raw_request(request)).decode()
    connect = f"exec 3<>/dev/tcp/127.0.0.1/{port} || exit 3"
    return f"( {connect}; base64 -d <<<'{payload}' >&3 && {reader} <&3 )"


def parse_batch(output: str) -> list[tuple[int, Any]]:
    """Status and body of each reply printed by `batch_command`.

    Raises:
        ValueError: a line is not a base64 HTTP reply with a JSON body.
    """
    return [
        parse_response(base64.b64decode(line).decode("utf-8", "replace"))
        for line in output.splitlines()
        if line.strip()
    ]


def parse_response(raw: str) -> tuple[int, Any]:
    """Status and JSON body of a raw HTTP reply.

    Raises:
        ValueError: the reply is not an HTTP response with a JSON body.
    """
    head, sep, body = raw.partition("\r\n\r\n")
    status_line = head.split("\r\n", 1)[0].split()
    if not sep or len(status_line) < 2 or not status_line[1].isdigit():
        raise ValueError(f"not an HTTP response: {raw[:200]!r}")
    try:
        return int(status_line[1]), json.loads(body) if body.strip() else None
    except json.JSONDecodeError as exc:
        raise ValueError(f"the reply body is not JSON ({exc.msg}): {body[:200]!r}") from None


def render(status: int, body: Any) -> str:
    """The observation the agent reads for a reply."""
    if status >= 400:
        message = body.get("error") if isinstance(body, dict) else body
        return f"Error ({status}): {message}"
    return json.dumps(body, indent=2, ensure_ascii=False)
