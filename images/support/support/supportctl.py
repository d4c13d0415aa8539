"""Admin channel of the support service (run as the service's uid): canonical state dump.

Usage: python3 supportctl.py dump [--db DB] [--audit LOG] [--seed SEED_DB]

Prints one JSON object:
    state_hash  sha256 of the canonical state: every table as a list of rows sorted by
                their canonical JSON (free-text columns left out, address lines as a
                postal service reads them: schema.address_key), so row order and
                insertion order never matter;
    delta       rows that differ from the pristine seed database,
                {table: {key: {"before": row | null, "after": row | null}}};
    counts      rows per table;
    audit       every audit log entry, in order;
    audit_unreadable
                lines of the audit log that are not one JSON object each (0: the service
                writes whole lines, and the log is bounded so its disk never fills).

The output is ASCII (non-ASCII text escaped), whatever text the database or the log
holds, and bounded: the service logs at most 1,000 requests of bounded size, and this
reader stops at MAX_AUDIT_LINES lines or MAX_AUDIT_BYTES bytes.
"""

import argparse
import hashlib
import json
import os
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from schema import ADDRESS_LINES, FREE_TEXT, TABLES, address_key

DATA = "/var/lib/support"
MAX_AUDIT_LINES = 1100
MAX_AUDIT_BYTES = 16 << 20


def canon(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def rows(path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    db.row_factory = sqlite3.Row
    out = {}
    for table, key in TABLES.items():
        skip, lines = set(FREE_TEXT.get(table, ())), set(ADDRESS_LINES.get(table, ()))
        found = {}
        for row in db.execute(f"SELECT * FROM {table}"):
            data = {k: row[k] for k in row.keys() if k not in skip}
            data.update({k: address_key(str(data[k])) for k in lines if k in data})
            found["#".join(str(row[k]) for k in key)] = data
        out[table] = found
    db.close()
    return out


def state_hash(tables):
    state = {t: sorted(canon(r) for r in found.values()) for t, found in tables.items()}
    return hashlib.sha256(canon(state).encode("utf-8", "surrogatepass")).hexdigest()


def delta(before, after):
    out = {}
    for table in TABLES:
        old, new = before.get(table, {}), after.get(table, {})
        changed = {
            key: {"before": old.get(key), "after": new.get(key)}
            for key in sorted(set(old) | set(new))
            if old.get(key) != new.get(key)
        }
        if changed:
            out[table] = changed
    return out


def audit(path):
    """The log's entries (at most MAX_AUDIT_LINES), and how many lines were not entries."""
    entries, unreadable, size = [], 0, 0
    try:
        with open(path, "rb") as fh:
            for raw in fh:
                size += len(raw)
                if len(entries) + unreadable >= MAX_AUDIT_LINES or size > MAX_AUDIT_BYTES:
                    unreadable += 1
                    break
                if not raw.strip():
                    continue
                try:
                    entry = json.loads(raw.decode("utf-8"))
                except (ValueError, RecursionError):
                    entry = None
                if isinstance(entry, dict):
                    entries.append(entry)
                else:
                    unreadable += 1
    except FileNotFoundError:
        pass
    return entries, unreadable


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["dump"])
    parser.add_argument("--db", default=f"{DATA}/support.db")
    parser.add_argument("--audit", default=f"{DATA}/audit.jsonl")
    parser.add_argument("--seed", default="/opt/support/seed.db")
    args = parser.parse_args()
    now, seed = rows(args.db), rows(args.seed)
    entries, unreadable = audit(args.audit)
    report = {
        "state_hash": state_hash(now),
        "seed_hash": state_hash(seed),
        "delta": delta(seed, now),
        "counts": {t: len(found) for t, found in now.items()},
        "audit": entries,
        "audit_unreadable": unreadable,
    }
    text = json.dumps(report, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
