"""The judge's answer cache: a SQLite file keyed by a content hash of each call.

One connection per file and process, opened on first use and kept (not reopened per
lookup); a lock makes it safe to share between threads. After a fork the child opens
its own. WAL mode lets several processes share the file. A cache that cannot be read
or written is logged and skipped: the judge then asks the model.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ["JudgeCache", "cache_at", "call_key"]

log = logging.getLogger("gym._grading._judge")

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS judge_cache (key TEXT PRIMARY KEY, version TEXT NOT NULL,"
    " mode TEXT NOT NULL, value TEXT NOT NULL, created_at REAL NOT NULL)"
)


def call_key(version: str, mode: str, *inputs: str) -> str:
    """Content hash of a judge call: version, mode and inputs."""
    return hashlib.sha256(json.dumps([version, mode, *inputs]).encode()).hexdigest()


class JudgeCache:
    """Judge answers in one SQLite file, through one connection guarded by a lock.

    Args:
        path: the SQLite file (created, with its folder, on first use).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = 0

    def get(self, key: str) -> dict[str, Any] | None:
        """The cached answer of a call, or None (also when the file is unreadable)."""
        try:
            with self._lock:
                row = (
                    self._db()
                    .execute("SELECT value FROM judge_cache WHERE key = ?", (key,))
                    .fetchone()
                )
        except (sqlite3.Error, OSError) as exc:
            log.warning("judge cache %s unreadable (%s); asking the model", self.path, exc)
            return None
        value = json.loads(row[0]) if row is not None else None
        return value if isinstance(value, dict) else None

    def put(self, key: str, version: str, mode: str, value: dict[str, Any]) -> None:
        """Store the answer of a call (a failure to write is logged, not raised)."""
        row = (key, version, mode, json.dumps(value), time.time())
        try:
            with self._lock:
                self._db().execute("INSERT OR REPLACE INTO judge_cache VALUES (?, ?, ?, ?, ?)", row)
        except (sqlite3.Error, OSError) as exc:
            log.warning("judge cache %s not written (%s)", self.path, exc)

    def close(self) -> None:
        """Close the connection (a later call opens it again)."""
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None

    def _db(self) -> sqlite3.Connection:
        """The open connection (the caller holds the lock)."""
        if self._conn is None or self._pid != os.getpid():
            self._conn = None
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(
                self.path, timeout=30, isolation_level=None, check_same_thread=False
            )
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute(_SCHEMA)
            except sqlite3.Error:
                conn.close()
                raise
            self._conn, self._pid = conn, os.getpid()
        return self._conn


_caches: dict[Path, JudgeCache] = {}
_caches_lock = threading.Lock()


def cache_at(path: Path) -> JudgeCache:
    """The process's cache of one file (every judge using that file shares it)."""
    key = Path(os.path.abspath(path))
    with _caches_lock:
        cache = _caches.get(key)
        if cache is None:
            cache = _caches[key] = JudgeCache(key)
        return cache


@atexit.register
def _close_all() -> None:
    with _caches_lock:
        for cache in _caches.values():
            cache.close()
