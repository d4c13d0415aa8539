"""The support database: its schema, and the columns each canonical dump leaves out."""

TODAY = "2026-03-02"
"""The service's fixed clock: every date it writes is this day (deterministic state)."""

SCHEMA = """
CREATE TABLE customers (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL UNIQUE, phone TEXT NOT NULL,
    street TEXT NOT NULL, city TEXT NOT NULL, state TEXT NOT NULL, zip TEXT NOT NULL,
    tier TEXT NOT NULL, created_on TEXT NOT NULL
);
CREATE TABLE orders (
    id TEXT PRIMARY KEY, customer_id TEXT NOT NULL REFERENCES customers(id),
    placed_on TEXT NOT NULL, status TEXT NOT NULL, shipping_cents INTEGER NOT NULL,
    ship_street TEXT NOT NULL, ship_city TEXT NOT NULL, ship_state TEXT NOT NULL,
    ship_zip TEXT NOT NULL, payment TEXT NOT NULL, cancelled_on TEXT, cancel_note TEXT
);
CREATE TABLE order_items (
    order_id TEXT NOT NULL REFERENCES orders(id), line INTEGER NOT NULL, sku TEXT NOT NULL,
    name TEXT NOT NULL, qty INTEGER NOT NULL, unit_cents INTEGER NOT NULL,
    PRIMARY KEY (order_id, line)
);
CREATE TABLE shipments (
    order_id TEXT PRIMARY KEY REFERENCES orders(id), carrier TEXT NOT NULL,
    tracking TEXT NOT NULL, status TEXT NOT NULL, shipped_on TEXT NOT NULL, delivered_on TEXT
);
CREATE TABLE refunds (
    id TEXT PRIMARY KEY, order_id TEXT NOT NULL REFERENCES orders(id),
    amount_cents INTEGER NOT NULL, reason TEXT NOT NULL, kind TEXT NOT NULL,
    created_on TEXT NOT NULL
);
CREATE TABLE tickets (
    id TEXT PRIMARY KEY, customer_id TEXT NOT NULL REFERENCES customers(id), order_id TEXT,
    subject TEXT NOT NULL, status TEXT NOT NULL, team TEXT NOT NULL, created_on TEXT NOT NULL,
    updated_on TEXT NOT NULL
);
CREATE TABLE ticket_events (
    id TEXT PRIMARY KEY, ticket_id TEXT NOT NULL REFERENCES tickets(id), kind TEXT NOT NULL,
    team TEXT NOT NULL, note TEXT NOT NULL, created_on TEXT NOT NULL
);
"""

TABLES = {
    "customers": ("id",),
    "orders": ("id",),
    "order_items": ("order_id", "line"),
    "shipments": ("order_id",),
    "refunds": ("id",),
    "tickets": ("id",),
    "ticket_events": ("id",),
}
"""Every table and its primary key columns."""

FREE_TEXT = {"orders": ("cancel_note",), "ticket_events": ("note",)}
"""Free-text columns kept in the database but left out of canonical state."""
ADDRESS_LINES = {"customers": ("street", "city"), "orders": ("ship_street", "ship_city")}
"""Address lines: in canonical state as a postal service reads them (`address_key`)."""
_SPELLED_OUT = {
    "street": "st", "avenue": "ave", "road": "rd", "boulevard": "blvd", "drive": "dr",
    "lane": "ln", "court": "ct", "place": "pl", "terrace": "ter", "highway": "hwy",
    "parkway": "pkwy", "square": "sq", "circle": "cir", "apartment": "apt", "suite": "ste",
    "floor": "fl", "building": "bldg", "room": "rm", "north": "n", "south": "s", "east": "e",
    "west": "w", "northeast": "ne", "northwest": "nw", "southeast": "se", "southwest": "sw",
}
"""Words of an address line and their standard (USPS) abbreviations."""


def address_key(line):
    """An address line as compared: case, spacing and the marks , . # ignored, and each
    street suffix, unit designator or direction taken as its standard abbreviation
    ("45 Elm Street, Apt. 3B" and "45 elm st apt 3b" are one address; "4,5" is not "45")."""
    words = "".join(" " if c in ",.#" else c for c in line).casefold().split()
    return " ".join(_SPELLED_OUT.get(word, word) for word in words)

REFUND_REASONS = ("damaged", "wrong_item", "not_received", "late_delivery", "other")
TEAMS = ("billing", "shipping", "supervisor")
