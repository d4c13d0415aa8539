"""The viewer's HTTP server: read-only, local, with a CSP, over SQLite and PostgreSQL."""

from __future__ import annotations

import http.client
import re
import urllib.parse

import pytest
import viewdata

from gym._store import Store
from gym._view import Site, serve
from gym._view._links import episode_page, raw_page, run_page
from gym.errors import StoreError


def request(url: str, method: str = "GET", path: str = "/", host: str | None = None):
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    headers = {"Host": host} if host else {}
    conn.request(method, path, headers=headers)
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response, body


@pytest.fixture(scope="module")
def viewer(stored):
    store = Store(stored, read_only=True)
    running = serve(Site(store))
    yield running
    running.close()
    store.close()


def test_it_listens_on_loopback_on_a_free_port(viewer):
    parts = urllib.parse.urlsplit(viewer.url)
    assert parts.hostname == "127.0.0.1" and parts.port > 0
    response, body = request(viewer.url)
    assert response.status == 200 and b"baseline" in body


def test_every_answer_carries_the_security_headers(viewer):
    response, _ = request(viewer.url, path="/" + run_page(viewdata.RUN_B))
    csp = response.getheader("Content-Security-Policy")
    assert "script-src 'self'" in csp and "default-src 'none'" in csp
    assert "unsafe-inline" not in csp and "frame-ancestors 'none'" in csp
    assert response.getheader("X-Content-Type-Options") == "nosniff"


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE"])
def test_only_get_and_head_are_answered(viewer, method):
    response, _ = request(viewer.url, method=method, path="/index.html")
    assert response.status == 405 and response.getheader("Allow") == "GET, HEAD"


def test_head_answers_headers_without_a_body(viewer):
    response, body = request(viewer.url, method="HEAD", path="/index.html")
    assert response.status == 200 and body == b""
    assert int(response.getheader("Content-Length")) > 1000


def test_a_foreign_host_header_is_refused(viewer):
    """A page elsewhere cannot read the viewer by pointing its own name at 127.0.0.1."""
    response, body = request(viewer.url, host="attacker.example:80")
    assert response.status == 421 and b"baseline" not in body
    port = urllib.parse.urlsplit(viewer.url).port
    assert request(viewer.url, host=f"localhost:{port}")[0].status == 200


def test_raw_text_is_plain_text_that_browsers_do_not_sniff(viewer):
    response, body = request(viewer.url, path="/" + raw_page(viewdata.hostile_id(), "step-0-text"))
    assert response.status == 200
    assert response.getheader("Content-Type") == "text/plain; charset=utf-8"
    assert body.decode("utf-8").startswith("<script>alert(1)</script>")
    assert "\ufffd" in body.decode("utf-8")  # the lone surrogate, replaced


def test_unknown_pages_are_404_with_the_name_escaped(viewer):
    response, body = request(viewer.url, path="/episode-%3Cscript%3Ex.html")
    assert response.status == 404
    assert b"<script>x" not in body
    response, _ = request(viewer.url, path="/../../etc/passwd")
    assert response.status == 404


def test_postgres_store_is_served_read_only_and_its_password_never_shown(postgres_url):
    url = postgres_url.replace("postgres@", "postgres:s3cret-pw@")  # trust auth ignores it
    writer = Store(url)
    try:
        viewdata.fill(writer)
        reader = Store(url, read_only=True)
        running = serve(Site(reader))
        try:
            for path in ("/", "/" + run_page(viewdata.RUN_A), "/" + episode_page("a0isxpri0")):
                response, body = request(running.url, path=path)
                assert response.status == 200, path
                assert b"s3cret-pw" not in body and b"***" in body
            found = request(running.url, path="/search.html?q=SQUARE+root+outcome%3Afail")[1]
            assert set(re.findall(r'<tr data-id="(\w+)">', found.decode())) == {"b0isxpri1"}
            api = f"/api/search.json?run={viewdata.RUN_B}&q=flag%3Atests_touched+100%25"
            assert request(running.url, path=api)[1] == b'{"ids": [], "more": false, "note": ""}'
            status = request(running.url, path=f"/api/run/{viewdata.RUN_A}/status.json")[1]
            assert b'"state": "finished"' in status
        finally:
            running.close()
        with pytest.raises(StoreError, match="read-only"):
            reader.ensure_run(viewdata.new_run("new"))
        assert [r.id for r in reader.runs()] == [viewdata.RUN_B, viewdata.RUN_A]
        reader.close()
    finally:
        from sqlmodel import SQLModel

        SQLModel.metadata.drop_all(writer.engine)
        writer.close()


# -- issue 28 ------------------------------------------------------------------------------


def _reset(url: str, path: str) -> None:
    """Ask for a page, then close the connection at once with a reset (a cancelled load)."""
    import socket
    import struct

    parts = urllib.parse.urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=30)
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {parts.netloc}\r\n\r\n".encode())
    sock.recv(1024)  # the answer has begun
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def test_a_cancelled_request_leaves_no_trace_in_the_log(viewer, capfd, caplog):
    """Defect 6: a browser cancelling a request printed a BrokenPipe traceback."""
    import time

    big = "/" + raw_page(viewdata.hostile_id(), "step-0-observation")  # 10 MB to write
    for _ in range(3):
        _reset(viewer.url, big)
    time.sleep(1.0)  # the handler threads meet the closed sockets
    assert request(viewer.url)[0].status == 200  # still serving
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Error" not in err, err
    assert [r for r in caplog.records if r.levelname in ("ERROR", "WARNING")] == []


def test_a_failing_page_is_one_line_in_the_log(stored, capfd, caplog):
    """The server's log: a failed page is one line at ERROR, never a traceback."""

    class Broken(Site):
        def page(self, name, query=None):
            raise RuntimeError("the disk fell off\nsecond line of the message")

    store = Store(stored, read_only=True)
    running = serve(Broken(store))
    try:
        response, body = request(running.url, path="/index.html")
    finally:
        running.close()
        store.close()
    assert response.status == 500 and b"the page failed" in body
    errors = [r for r in caplog.records if r.levelname == "ERROR"]
    assert [r.getMessage() for r in errors] == [
        "viewer page 'index.html' failed: RuntimeError: the disk fell off"
    ]
    assert "Traceback" not in capfd.readouterr().err


def test_requests_are_not_logged_by_default(viewer, capfd):
    request(viewer.url, path="/index.html")
    request(viewer.url, path="/nothing-here.html")
    assert capfd.readouterr().err == ""


def test_the_favicon_is_served(viewer):
    for path in ("/favicon.ico", "/static/favicon.svg"):
        response, body = request(viewer.url, path=path)
        assert response.status == 200 and response.getheader("Content-Type") == "image/svg+xml"
        assert body.startswith(b"<svg")


def test_the_status_endpoint_is_small_json_of_runs_in_view_only(stored):
    import json

    store = Store(stored, read_only=True)
    running = serve(Site(store, [viewdata.RUN_B]))
    try:
        response, body = request(running.url, path=f"/api/run/{viewdata.RUN_B}/status.json")
        assert response.status == 200
        assert response.getheader("Content-Type") == "application/json; charset=utf-8"
        assert response.getheader("X-Content-Type-Options") == "nosniff"
        data = json.loads(body)
        assert (data["state"], data["episodes"], data["planned"], data["live"]) == (
            "finished",
            8,
            8,
            False,
        )
        assert (data["passed"], data["failed"], data["infra_error"]) == (5, 3, 0)
        hidden, _ = request(running.url, path=f"/api/run/{viewdata.RUN_A}/status.json")
        assert hidden.status == 404  # out of view
        gone, _ = request(running.url, path="/api/run/..%2f..%2fetc/status.json")
        assert gone.status == 404
    finally:
        running.close()
        store.close()


def test_search_is_served_escaped_and_bounded(viewer):
    import html
    import json

    path = "/search.html?" + urllib.parse.urlencode({"q": "square ROOT outcome:pass"})
    response, body = request(viewer.url, path=path)
    text = body.decode()
    assert response.status == 200
    hits = set(re.findall(r'<tr data-id="(\w+)">', text))
    assert hits == {"a0isxpri0", "a0isxpri1", "b0isxpri0"}  # B's #1 failed
    assert "check small divisors up to the square root of n." in html.unescape(text)  # context
    response, body = request(viewer.url, path="/search?q=%3Cscript%3Ealert(1)")
    text = body.decode()
    assert "&lt;script&gt;alert(1)" in text and "<script>alert" not in text
    assert set(re.findall(r'<tr data-id="(\w+)">', text)) == {viewdata.hostile_id()}
    api = "/api/search.json?" + urllib.parse.urlencode(
        {"run": viewdata.RUN_B, "q": "flag:tests_touched"}
    )
    response, body = request(viewer.url, path=api)
    assert sorted(json.loads(body)["ids"]) == ["b0gcdxof0", "b0gcdxof1", "b0isxpri1"]
    assert request(viewer.url, path="/api/search.json?run=zz&q=x")[0].status == 404
