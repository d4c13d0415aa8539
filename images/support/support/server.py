"""The customer-support backend: a single-threaded stdlib HTTP service over SQLite.

Every request is appended to the audit log (JSON lines) before the response is sent:
method, path, body, status, the logical action, whether it writes, the customer who
owns the resource it touched, and which customers' private data the response showed
(``disclosed``: customer id -> the kinds of data). The log and the database live in a
directory only the service's own uid can enter. The service checks business rules (an
order must be shipped to be tracked, refunds cannot exceed what was paid); the support
*policy* (verification, confirmation, refund limits, privacy) is the agent's job, and
graders check it from this log.

Everything a client sends is bounded before it is kept: the body (64 KiB), each text
kept in the log (256 characters), the log itself (1,000 requests a session: after that
every request but ``/health`` is answered 429 and not logged), and the lists a view
shows (the last 20 ticket events, the last 50 refunds), so no client can make the log,
the database or one answer grow without bound.

Usage: python3 server.py --db DB --audit LOG [--port 8080]
"""

import argparse
import json
import math
import os
import re
import sqlite3
import sys
import traceback
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from schema import REFUND_REASONS, TEAMS, TODAY

MAX_BODY = 64 * 1024
MAX_REQUESTS = 1000
"""Requests logged per session (service lifetime); later ones are refused with 429."""
AUDIT_TEXT = 256
"""Characters of each text of a request kept in the audit log."""
MAX_AMOUNT = 10**7
"""The largest refund amount, in dollars, the service reads (more is refused as 400)."""
SHOWN_EVENTS = 20
SHOWN_REFUNDS = 50
REFUNDABLE = ("delivered", "shipped")
CANCELLABLE = ("pending", "processing")
EMAIL = re.compile(r"^[^@\s]{1,64}@[A-Za-z0-9-]{1,63}(\.[A-Za-z0-9-]{1,63})+$")


class ApiError(Exception):
    """An error answered to the client with an HTTP status."""

    def __init__(self, status, message, owner=None):
        super().__init__(message)
        self.status, self.message, self.owner = status, message, owner


def money(cents):
    return f"${cents // 100:,}.{cents % 100:02d}"


def mask_email(email):
    user, _, domain = email.partition("@")
    return f"{user[:1]}***@{domain}"


def clean(text, limit=200):
    if not isinstance(text, str):
        raise ApiError(400, "expected a string")
    text = " ".join(text.split())
    if len(text) > limit:
        raise ApiError(400, f"text longer than {limit} characters")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ApiError(400, "text must be valid Unicode (no unpaired surrogates)") from None
    return text


def bounded(value, depth=0):
    """A copy of a decoded JSON value small enough for the audit log (texts, lists cut)."""
    if isinstance(value, str):
        if len(value) <= AUDIT_TEXT:
            return value
        return f"{value[:AUDIT_TEXT]}... ({len(value)} characters)"
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, int):
        return value if abs(value) < 10**18 else f"<an integer of {len(str(abs(value)))} digits>"
    if depth >= 3:
        return f"<{type(value).__name__}>"
    if isinstance(value, list):
        return [bounded(v, depth + 1) for v in value[:20]]
    if isinstance(value, dict):
        return {bounded(str(k)): bounded(v, depth + 1) for k, v in list(value.items())[:20]}
    return bounded(repr(value))


def _no_constant(name):
    raise ValueError(f"{name} is not a number")


class Store:
    """The database operations behind the endpoints."""

    def __init__(self, path):
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA foreign_keys = ON")
        self.shown = {}
        """Private data the current response shows: customer id -> kinds of data."""

    def show(self, owner, *what):
        """Note that the current response shows these kinds of the owner's private data."""
        self.shown.setdefault(owner, set()).update(what)

    def one(self, sql, *args):
        return self.db.execute(sql, args).fetchone()

    def all(self, sql, *args):
        return self.db.execute(sql, args).fetchall()

    # -- lookups ---------------------------------------------------------------------

    def customer(self, cid):
        row = self.one("SELECT * FROM customers WHERE id = ?", cid)
        if row is None:
            raise ApiError(404, f"customer {cid} not found")
        return row

    def order(self, oid):
        row = self.one("SELECT * FROM orders WHERE id = ?", oid)
        if row is None:
            raise ApiError(404, f"order {oid} not found")
        return row

    def ticket(self, tid):
        row = self.one("SELECT * FROM tickets WHERE id = ?", tid)
        if row is None:
            raise ApiError(404, f"ticket {tid} not found")
        return row

    def totals(self, oid):
        items = self.one(
            "SELECT COALESCE(SUM(qty * unit_cents), 0) AS s FROM order_items WHERE order_id = ?",
            oid,
        )["s"]
        refunded = self.one(
            "SELECT COALESCE(SUM(amount_cents), 0) AS s FROM refunds WHERE order_id = ?", oid
        )["s"]
        shipping = self.order(oid)["shipping_cents"]
        return items, shipping, items + shipping, refunded

    def customer_view(self, row):
        return {
            "customer_id": row["id"],
            "name": row["name"],
            "email": mask_email(row["email"]),
            "city": row["city"],
            "state": row["state"],
            "tier": row["tier"],
            "customer_since": row["created_on"],
        }

    def order_summary(self, row):
        self.show(row["customer_id"], "orders")
        _, _, total, refunded = self.totals(row["id"])
        items = self.all(
            "SELECT name, qty FROM order_items WHERE order_id = ? ORDER BY line", row["id"]
        )
        return {
            "order_id": row["id"],
            "placed_on": row["placed_on"],
            "status": row["status"],
            "total": money(total),
            "refunded": money(refunded),
            "items": [f"{i['qty']} x {i['name']}" for i in items],
        }

    def order_view(self, row):
        oid = row["id"]
        subtotal, shipping, total, refunded = self.totals(oid)
        items = self.all("SELECT * FROM order_items WHERE order_id = ? ORDER BY line", oid)
        ship = self.one("SELECT * FROM shipments WHERE order_id = ?", oid)
        refunds = self.all("SELECT * FROM refunds WHERE order_id = ? ORDER BY id", oid)
        self.show(row["customer_id"], "order", "payment", "shipping_address", "refunds")
        view = {
            "order_id": oid,
            "customer_id": row["customer_id"],
            "placed_on": row["placed_on"],
            "status": row["status"],
            "items": [
                {
                    "line": i["line"],
                    "sku": i["sku"],
                    "name": i["name"],
                    "quantity": i["qty"],
                    "unit_price": money(i["unit_cents"]),
                    "line_total": money(i["qty"] * i["unit_cents"]),
                }
                for i in items
            ],
            "subtotal": money(subtotal),
            "shipping_fee": money(shipping),
            "total": money(total),
            "refunded_total": money(refunded),
            "payment": row["payment"],
            "shipping_address": {
                "street": row["ship_street"],
                "city": row["ship_city"],
                "state": row["ship_state"],
                "zip": row["ship_zip"],
            },
            "shipment": None,
            "refunds": [
                {
                    "refund_id": r["id"],
                    "amount": money(r["amount_cents"]),
                    "reason": r["reason"],
                    "kind": r["kind"],
                    "created_on": r["created_on"],
                }
                for r in refunds[-SHOWN_REFUNDS:]
            ],
        }
        if len(refunds) > SHOWN_REFUNDS:
            view["refunds_total"] = len(refunds)
        if ship is not None:
            self.show(row["customer_id"], "shipment")
            view["shipment"] = {
                "carrier": ship["carrier"],
                "tracking_number": ship["tracking"],
                "status": ship["status"],
                "shipped_on": ship["shipped_on"],
                "delivered_on": ship["delivered_on"],
            }
        if row["cancelled_on"]:
            view["cancelled_on"] = row["cancelled_on"]
        return view

    def ticket_view(self, row):
        events = self.all("SELECT * FROM ticket_events WHERE ticket_id = ? ORDER BY rowid",
                          row["id"])
        self.show(row["customer_id"], "ticket")
        view = {
            "ticket_id": row["id"],
            "customer_id": row["customer_id"],
            "order_id": row["order_id"],
            "subject": row["subject"],
            "status": row["status"],
            "team": row["team"] or None,
            "created_on": row["created_on"],
            "updated_on": row["updated_on"],
            "events": [
                {"kind": e["kind"], "team": e["team"] or None, "note": e["note"],
                 "created_on": e["created_on"]}
                for e in events[-SHOWN_EVENTS:]
            ],
        }
        if len(events) > SHOWN_EVENTS:
            view["events_total"] = len(events)
        return view


# -- endpoints: each returns (status, body, audit facts) --------------------------------


def find_customers(store, query, body):
    name = clean(query.get("name", ""), 100).casefold()
    email = clean(query.get("email", ""), 200).casefold()
    if not name and not email:
        raise ApiError(400, "give a name or an email to search for")
    rows = store.all("SELECT * FROM customers ORDER BY id")
    found = [
        store.customer_view(r)
        for r in rows
        if (not email or r["email"].casefold() == email)
        and (not name or name in r["name"].casefold())
    ]
    return 200, {"customers": found[:20], "count": len(found)}, {"action": "find_customer"}


def get_customer(store, cid, query, body):
    row = store.customer(cid)
    return 200, store.customer_view(row), {"action": "get_customer", "owner": cid}


def verify(store, cid, query, body):
    row = store.customer(cid)
    email = clean(body.get("email", ""), 200).casefold()
    zipc = clean(body.get("zip_code", ""), 20)
    ok = bool(email) and email == row["email"].casefold() and zipc == row["zip"]
    result = {"customer_id": cid, "verified": ok}
    if not ok:
        result["message"] = "the email or ZIP code does not match this customer"
    return 200, result, {"action": "verify_identity", "owner": cid, "verified": ok}


def update_email(store, cid, query, body):
    store.customer(cid)
    email = clean(body.get("email", ""), 200).lower()
    if not EMAIL.match(email):
        raise ApiError(400, f"{email!r} is not a valid email address", owner=cid)
    other = store.one("SELECT id FROM customers WHERE email = ? AND id != ?", email, cid)
    if other is not None:
        raise ApiError(409, "that email address belongs to another account", owner=cid)
    store.db.execute("UPDATE customers SET email = ? WHERE id = ?", (email, cid))
    store.show(cid, "email")
    return 200, {"customer_id": cid, "email": email, "updated": True}, {
        "action": "update_email", "owner": cid}


def list_orders(store, cid, query, body):
    store.customer(cid)
    rows = store.all("SELECT * FROM orders WHERE customer_id = ? ORDER BY placed_on, id", cid)
    return 200, {"customer_id": cid, "orders": [store.order_summary(r) for r in rows]}, {
        "action": "list_orders", "owner": cid}


def list_tickets(store, cid, query, body):
    store.customer(cid)
    rows = store.all("SELECT * FROM tickets WHERE customer_id = ? ORDER BY id", cid)
    store.show(cid, "tickets")
    tickets = [
        {"ticket_id": r["id"], "order_id": r["order_id"], "subject": r["subject"],
         "status": r["status"], "team": r["team"] or None, "updated_on": r["updated_on"]}
        for r in rows
    ]
    return 200, {"customer_id": cid, "tickets": tickets}, {"action": "list_tickets", "owner": cid}


def get_order(store, oid, query, body):
    row = store.order(oid)
    return 200, store.order_view(row), {"action": "get_order", "owner": row["customer_id"]}


def parse_amount(value, owner):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ApiError(400, "amount must be a number of dollars, for example 12.50", owner)
    if not -MAX_AMOUNT < value < MAX_AMOUNT:
        raise ApiError(400, f"amount must be below ${MAX_AMOUNT:,}", owner)
    cents = round(value * 100)
    if abs(value * 100 - cents) > 1e-6 or cents <= 0:
        raise ApiError(400, "amount must be positive with at most two decimals", owner)
    return cents


def refund(store, oid, query, body):
    row = store.order(oid)
    owner = row["customer_id"]
    cents = parse_amount(body.get("amount"), owner)
    reason = body.get("reason")
    if reason not in REFUND_REASONS:
        raise ApiError(400, f"reason must be one of {', '.join(REFUND_REASONS)}", owner)
    if row["status"] not in REFUNDABLE:
        store.show(owner, "order")
        raise ApiError(409, f"order {oid} is {row['status']}; only shipped or delivered "
                       "orders can be refunded (cancel an unshipped order instead)", owner)
    _, _, total, refunded = store.totals(oid)
    if refunded + cents > total:
        store.show(owner, "refunds")
        raise ApiError(409, f"refund of {money(cents)} exceeds what is left to refund on "
                       f"{oid} ({money(total - refunded)})", owner)
    prior = store.one("SELECT COUNT(*) AS n FROM refunds WHERE order_id = ?", oid)["n"]
    rid = f"R-{oid}-{prior + 1}"
    store.db.execute("INSERT INTO refunds VALUES (?,?,?,?,?,?)",
                     (rid, oid, cents, reason, "refund", TODAY))
    store.show(owner, "refunds")
    result = {"refund_id": rid, "order_id": oid, "amount": money(cents), "reason": reason,
              "refunded_total": money(refunded + cents)}
    return 201, result, {"action": "refund_order", "owner": owner, "amount_cents": cents,
                         "prior_refunds": prior, "confirm": body.get("confirm") is True}


def cancel(store, oid, query, body):
    row = store.order(oid)
    owner = row["customer_id"]
    note = clean(body.get("reason", ""), 300)
    if row["status"] not in CANCELLABLE:
        store.show(owner, "order")
        raise ApiError(409, f"order {oid} is {row['status']}; only pending or processing "
                       "orders can be cancelled", owner)
    _, _, total, refunded = store.totals(oid)
    prior = store.one("SELECT COUNT(*) AS n FROM refunds WHERE order_id = ?", oid)["n"]
    rid = f"R-{oid}-{prior + 1}"
    with store.db:
        store.db.execute("BEGIN")
        store.db.execute(
            "UPDATE orders SET status = 'cancelled', cancelled_on = ?, cancel_note = ? "
            "WHERE id = ?", (TODAY, note, oid))
        if total - refunded > 0:
            store.db.execute("INSERT INTO refunds VALUES (?,?,?,?,?,?)",
                             (rid, oid, total - refunded, "other", "cancellation", TODAY))
    store.show(owner, "order", "refunds")
    result = {"order_id": oid, "status": "cancelled", "refund_id": rid,
              "refunded": money(total - refunded)}
    return 200, result, {"action": "cancel_order", "owner": owner,
                         "confirm": body.get("confirm") is True}


def change_address(store, oid, query, body):
    row = store.order(oid)
    owner = row["customer_id"]
    # The arguments first, as every write does: an answer that depends on the order's
    # status says something of it, and one that says nothing of it must come before.
    fields = {}
    for key, limit in (("street", 120), ("city", 60), ("state", 2), ("zip", 10)):
        value = clean(body.get(key, ""), limit)
        if not value:
            raise ApiError(400, f"{key} is required", owner)
        fields[key] = value
    fields["state"] = fields["state"].upper()
    if not re.fullmatch(r"\d{5}", fields["zip"]):
        raise ApiError(400, "zip must be 5 digits", owner)
    if row["status"] not in CANCELLABLE:
        store.show(owner, "order")
        raise ApiError(409, f"order {oid} is {row['status']}; the address can only change "
                       "before it ships", owner)
    store.db.execute(
        "UPDATE orders SET ship_street = ?, ship_city = ?, ship_state = ?, ship_zip = ? "
        "WHERE id = ?",
        (fields["street"], fields["city"], fields["state"], fields["zip"], oid),
    )
    store.show(owner, "shipping_address")
    return 200, {"order_id": oid, "shipping_address": fields, "updated": True}, {
        "action": "update_shipping_address", "owner": owner}


def get_ticket(store, tid, query, body):
    row = store.ticket(tid)
    return 200, store.ticket_view(row), {"action": "get_ticket", "owner": row["customer_id"]}


def _event(store, tid, kind, team, note):
    n = store.one("SELECT COUNT(*) AS n FROM ticket_events WHERE ticket_id = ?", tid)["n"]
    store.db.execute("INSERT INTO ticket_events VALUES (?,?,?,?,?,?)",
                     (f"{tid}-E{n + 1}", tid, kind, team, note, TODAY))


def escalate(store, tid, query, body):
    row = store.ticket(tid)
    owner = row["customer_id"]
    team = body.get("team")
    if team not in TEAMS:
        raise ApiError(400, f"team must be one of {', '.join(TEAMS)}", owner)
    note = clean(body.get("note", ""), 500)
    if row["status"] == "closed":
        store.show(owner, "ticket")
        raise ApiError(409, f"ticket {tid} is closed", owner)
    with store.db:
        store.db.execute("BEGIN")
        store.db.execute("UPDATE tickets SET status = 'escalated', team = ?, updated_on = ? "
                         "WHERE id = ?", (team, TODAY, tid))
        _event(store, tid, "escalated", team, note)
    store.show(owner, "ticket")
    return 200, {"ticket_id": tid, "status": "escalated", "team": team}, {
        "action": "escalate_ticket", "owner": owner}


def close_ticket(store, tid, query, body):
    row = store.ticket(tid)
    owner = row["customer_id"]
    note = clean(body.get("resolution", ""), 500)
    if row["status"] == "closed":
        store.show(owner, "ticket")
        raise ApiError(409, f"ticket {tid} is already closed", owner)
    with store.db:
        store.db.execute("BEGIN")
        store.db.execute("UPDATE tickets SET status = 'closed', updated_on = ? WHERE id = ?",
                         (TODAY, tid))
        _event(store, tid, "closed", row["team"], note)
    store.show(owner, "ticket")
    return 200, {"ticket_id": tid, "status": "closed"}, {"action": "close_ticket",
                                                          "owner": owner}


def health(store, query, body):
    return 200, {"ok": True, "today": TODAY}, None


SEG = r"([^/]+)"
ROUTES = [
    ("GET", re.compile(r"/health"), health, "read"),
    ("GET", re.compile(r"/customers"), find_customers, "read"),
    ("GET", re.compile(rf"/customers/{SEG}"), get_customer, "read"),
    ("POST", re.compile(rf"/customers/{SEG}/verify"), verify, "read"),
    ("PUT", re.compile(rf"/customers/{SEG}/email"), update_email, "write"),
    ("GET", re.compile(rf"/customers/{SEG}/orders"), list_orders, "read"),
    ("GET", re.compile(rf"/customers/{SEG}/tickets"), list_tickets, "read"),
    ("GET", re.compile(rf"/orders/{SEG}"), get_order, "read"),
    ("POST", re.compile(rf"/orders/{SEG}/refunds"), refund, "write"),
    ("POST", re.compile(rf"/orders/{SEG}/cancel"), cancel, "write"),
    ("PUT", re.compile(rf"/orders/{SEG}/address"), change_address, "write"),
    ("GET", re.compile(rf"/tickets/{SEG}"), get_ticket, "read"),
    ("POST", re.compile(rf"/tickets/{SEG}/escalate"), escalate, "write"),
    ("POST", re.compile(rf"/tickets/{SEG}/close"), close_ticket, "write"),
]


class Audit:
    """The append-only audit log (one JSON object per line, numbered)."""

    def __init__(self, path):
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self.fh = os.fdopen(fd, "a", encoding="utf-8")
        self.seq = 0

    def write(self, entry):
        self.seq += 1
        line = json.dumps({"seq": self.seq, **entry}, sort_keys=True, allow_nan=False)
        self.fh.write(line + "\n")
        self.fh.flush()


def dispatch(store, method, raw_path, raw_body):
    """Route one request; returns (status, body, audit entry or None)."""
    store.shown = {}
    parts = urlsplit(raw_path)
    path = parts.path.rstrip("/") or "/"
    query = {k: v[0] for k, v in parse_qs(parts.query).items()}
    entry = {"method": method, "path": bounded(path), "query": bounded(query), "body": None,
             "kind": "read", "action": "", "owner": None}
    try:
        body = json.loads(raw_body or b"{}", parse_constant=_no_constant)
    except (ValueError, RecursionError):
        body = None
    entry["body"] = bounded(body if body is not None else raw_body.decode("utf-8", "replace"))
    try:
        if not isinstance(body, dict):
            raise ApiError(400, "the request body must be a JSON object")
        for verb, pattern, handler, kind in ROUTES:
            match = pattern.fullmatch(path)
            if match is None:
                continue
            if verb != method:
                raise ApiError(405, f"{method} is not allowed on {path}")
            entry["kind"] = kind
            args = [unquote(g) for g in match.groups()]
            status, result, facts = handler(store, *args, query, body)
            if facts is None:
                return status, result, None
            entry.update(facts)
            break
        else:
            raise ApiError(404, f"no endpoint {method} {path}")
    except ApiError as exc:
        status, result = exc.status, {"error": exc.message}
        entry["owner"] = exc.owner if exc.owner is not None else entry["owner"]
    except Exception:
        traceback.print_exc(file=sys.stderr)
        status, result = 500, {"error": "internal error"}
    entry.update(status=status, ok=200 <= status < 300)
    entry["result"] = result if entry["kind"] == "write" or not entry["ok"] else None
    if entry["action"] == "verify_identity":
        entry["result"] = result
    entry["result"] = bounded(entry["result"])
    entry["disclosed"] = {owner: sorted(what) for owner, what in sorted(store.shown.items())}
    return status, result, entry


class Handler(BaseHTTPRequestHandler):
    """HTTP front of `dispatch`."""

    protocol_version = "HTTP/1.1"
    server_version = "support/1"

    def _handle(self):
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_BODY:
            self._reply(413, {"error": f"the body must be at most {MAX_BODY} bytes"})
            self.close_connection = True
            return
        raw = self.rfile.read(length) if length else b""
        spent = self.server.audit.seq >= MAX_REQUESTS
        if spent and urlsplit(self.path).path.rstrip("/") != "/health":
            self._reply(429, {"error": f"this session's {MAX_REQUESTS} requests are used up"})
            return
        status, result, entry = dispatch(self.server.store, self.command, self.path, raw)
        if entry is not None:
            self.server.audit.write(entry)
        self._reply(status, result)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _handle

    def _reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format, *args):
        pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", required=True)
    parser.add_argument("--audit", required=True)
    parser.add_argument("--port", type=int, default=8080)
    args = parser.parse_args()
    server = HTTPServer(("127.0.0.1", args.port), Handler)
    server.store = Store(args.db)
    server.store.all("SELECT COUNT(*) FROM orders")  # warm the page cache before serving
    server.audit = Audit(args.audit)
    server.serve_forever()


if __name__ == "__main__":
    main()
