"""The viewer's HTTP server: read-only, local, with a CSP, over SQLite and PostgreSQL."""

from __future__ import annotations

import http.client
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
