"""Admin channel of the support service (run as the service's uid): canonical state dump.

Usage: python3 supportctl.py dump [--db DB] [--audit LOG] [--seed SEED_DB]

Prints one JSON object:
    state_hash  sha256 of the canonical state: every table as a list of rows sorted by
                their canonical JSON (free-text columns left out), so row order and
                insertion order never matter;
    delta       rows that differ from the pristine seed database,
                {table: {key: {"before": row | null, "after": row | null}}};
    counts      rows per table;
    audit       every audit log entry, in order.
"""

import argparse
import hashlib
import json
import os
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from schema import FREE_TEXT, TABLES

DATA = "/var/lib/support"


def canon(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def rows(path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    db.row_factory = sqlite3.Row
    out = {}
    for table, key in TABLES.items():
        skip = set(FREE_TEXT.get(table, ()))
        found = {}
        for row in db.execute(f"SELECT * FROM {table}"):
            data = {k: row[k] for k in row.keys() if k not in skip}
            found["#".join(str(row[k]) for k in key)] = data
        out[table] = found
    db.close()
    return out


def state_hash(tables):
    state = {t: sorted(canon(r) for r in found.values()) for t, found in tables.items()}
    return hashlib.sha256(canon(state).encode()).hexdigest()


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
    try:
        with open(path, encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]
    except FileNotFoundError:
        return []


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["dump"])
    parser.add_argument("--db", default=f"{DATA}/support.db")
    parser.add_argument("--audit", default=f"{DATA}/audit.jsonl")
    parser.add_argument("--seed", default="/opt/support/seed.db")
    args = parser.parse_args()
    now, seed = rows(args.db), rows(args.seed)
    report = {
        "state_hash": state_hash(now),
        "seed_hash": state_hash(seed),
        "delta": delta(seed, now),
        "counts": {t: len(found) for t, found in now.items()},
        "audit": audit(args.audit),
    }
    sys.stdout.write(canon(report) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
