"""Running the suite (gym/_redteam/_suite.py): a stop leaves at once, nothing behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

pytestmark = [pytest.mark.docker, pytest.mark.timeout(180)]

GYM = os.path.join(os.path.dirname(sys.executable), "gym")


def test_sigterm_stops_the_suite_within_seconds_and_leaves_no_container(owned):
    """Rows queued behind the ones in flight must not run (they once all did, for minutes)."""
    proc = subprocess.Popen(
        [GYM, "redteam", "--family", "code", "--kind", "attack", "-c", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    lines: list[bytes] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 120
        while not any(b"held" in line for line in lines) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert any(b"held" in line for line in lines), "a row should have finished"
        assert owned(proc.pid), "rows should be running, in containers of their own"
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
        took = time.monotonic() - sent
    finally:
        proc.kill()
        proc.wait()
        reader.join(10)
        proc.stderr.close()
    assert code == 128 + signal.SIGTERM, b"".join(lines)[-2000:].decode()
    assert took < 10, f"exit took {took:.1f}s"
    deadline = time.monotonic() + 10
    while owned(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert owned(proc.pid) == []
