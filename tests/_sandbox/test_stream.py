import os
import resource
import socket

import pytest

from gym._sandbox import decode
from gym._sandbox._shell import quote
from gym._sandbox._stream import Capture, ExecSocket


def test_capture_keeps_head_and_tail_and_marks_the_cut():
    cap = Capture(100)
    cap.add(b"H" * 80)
    cap.add(b"M" * 1000)
    cap.add(b"T" * 10)
    text = cap.text()
    assert text.startswith("H" * 75) and text.endswith("T" * 10)
    assert cap.truncated and "bytes truncated by boxgym" in text
    assert len(cap.bytes()) == 100


def test_capture_below_the_cap_is_untouched():
    cap = Capture(100)
    cap.add(b"abc")
    assert cap.text() == "abc" and not cap.truncated


def test_decode_is_tolerant_of_invalid_utf8_and_nul():
    assert decode(b"ok \xff\xfe \x00 end") == "ok \ufffd\ufffd \ufffd end"


def test_quote_escapes_everything_but_a_safe_set():
    assert quote("echo hi") == "$'echo hi'"
    assert quote("a'b\\c\n") == "$'a\\x27b\\x5cc\\x0a'"
    assert quote("é") == "$'\\xc3\\xa9'"


def test_ended_by_peer_sees_the_end_of_a_socket_past_descriptor_1023():
    class Attached:  # what the docker SDK hands out, without an HTTP response under it
        def __init__(self, sock):
            self._sock = sock

        def close(self):
            pass

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 2048:
        pytest.skip("the descriptor limit is under 2048")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 2048), hard))
    pad = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    ours, engine = socket.socketpair()
    try:
        assert ours.fileno() > 1023  # select() refuses it: a live container read as gone
        ours.settimeout(30)
        link = ExecSocket(Attached(ours))
        assert not link.ended_by_peer()
        engine.close()
        assert link.ended_by_peer()
    finally:
        ours.close()
        engine.close()
        for fd in pad:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
