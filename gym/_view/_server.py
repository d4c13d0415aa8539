"""A local, read-only HTTP server over the viewer's pages (the standard library's server).

Only GET and HEAD are answered (every other method gets 405); requests whose Host is
not the address served are refused (a web page elsewhere cannot read the viewer by
rebinding a DNS name to 127.0.0.1); every answer carries a Content-Security-Policy
that forbids inline script and anything from another origin.

The log is quiet: a line per request at INFO (hidden by default), a failed page as one
line at ERROR, and nothing at all when a browser cancels a request (a closed or reset
connection is how browsers stop loading a page).
"""

from __future__ import annotations

import errno
import logging
import sys
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from gym._core._errors import ConfigError, GymError
from gym._view._site import CSP, NotFound, Page, Site, _html

__all__ = ["Viewer", "serve"]

log = logging.getLogger(__name__)

GONE = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError)
"""What a socket raises when the browser went away: never worth a line."""
MAX_QUERY = 2048
"""Characters of a query string read (a search reads far fewer)."""

HEADERS = {
    "Content-Security-Policy": CSP + "; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cache-Control": "no-store",
}


class _Handler(BaseHTTPRequestHandler):
    site: Site
    hosts: frozenset[str] | None
    """Host header values answered; None when serving every address (0.0.0.0)."""
    server_version = "boxgym-view"
    sys_version = ""

    def __getattr__(self, name: str) -> Callable[[], None]:
        if name.startswith("do_"):  # every method other than GET and HEAD
            return self._not_allowed
        raise AttributeError(name)

    def do_GET(self) -> None:  # noqa: N802 (the standard library's naming)
        self._answer(body=True)

    def do_HEAD(self) -> None:  # noqa: N802
        self._answer(body=False)

    def _not_allowed(self) -> None:
        page = _html("error.html", status="405 method not allowed", message=self.command, db="")
        self._send(HTTPStatus.METHOD_NOT_ALLOWED, page, body=True, extra={"Allow": "GET, HEAD"})

    def _answer(self, *, body: bool) -> None:
        if self.hosts is not None and self.headers.get("Host", "").lower() not in self.hosts:
            page = _html("error.html", status="421 wrong host", message="unknown Host", db="")
            self._send(HTTPStatus.MISDIRECTED_REQUEST, page, body=body)
            return
        parts = urlsplit(self.path)
        name = unquote(parts.path).lstrip("/")
        query = {k: v[0] for k, v in parse_qs(parts.query[:MAX_QUERY]).items()}
        try:
            page, status = self.site.page(name, query), HTTPStatus.OK
        except NotFound as exc:
            page, status = self._error("404 not found", str(exc)), HTTPStatus.NOT_FOUND
        except GymError as exc:
            page, status = self._error("error", str(exc)), HTTPStatus.INTERNAL_SERVER_ERROR
        except Exception as exc:
            log.error("viewer page %r failed: %s", name, one_line(exc))
            log.debug("viewer page %r failed", name, exc_info=True)
            page = self._error("error", "the page failed; the viewer's log says why")
            status = HTTPStatus.INTERNAL_SERVER_ERROR
        self._send(status, page, body=body)

    def _error(self, status: str, message: str) -> Page:
        return _html("error.html", status=status, message=message, db=self.site.db)

    def _send(
        self, status: HTTPStatus, page: Page, *, body: bool, extra: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        for key, value in {**HEADERS, **(extra or {}), "Content-Type": page.type}.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(page.body)))
        try:
            self.end_headers()
            if body:
                self.wfile.write(page.body)
        except GONE:  # the browser cancelled the request
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        log.info("%s " + format, self.address_string(), *args)


def one_line(exc: BaseException) -> str:
    """An exception as one line: its type and the first line of its message."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """One line for a failed request (none for a browser that went away); no traceback."""
        exc = sys.exc_info()[1]
        if exc is None or isinstance(exc, GONE):
            return
        log.error("viewer: a request from %s failed: %s", client_address[0], one_line(exc))
        log.debug("viewer: the request failed", exc_info=True)


class Viewer:
    """A running viewer: its URL, and `close` to stop it.

    Args:
        site: the pages to serve.
        host: the address to listen on (127.0.0.1 by default: this machine only).
        port: the port (0: a free one).
    """

    def __init__(self, site: Site, host: str = "127.0.0.1", port: int = 0) -> None:
        self.server = _Server((host, port), _Handler)
        bound = self.server.server_address[1]
        shown = f"[{host}]" if ":" in host else host
        names = {shown, "localhost", "127.0.0.1", "[::1]"} if host in _LOCAL else {shown}
        hosts = None if host in _ANY else _hosts(names, bound)
        handler = type("Handler", (_Handler,), {"site": site, "hosts": hosts})
        self.server.RequestHandlerClass = handler
        self.url = f"http://{'127.0.0.1' if host in _ANY else shown}:{bound}/"
        self._thread: threading.Thread | None = None

    def start(self) -> Viewer:
        """Serve in a background thread."""
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in this thread until interrupted."""
        self.server.serve_forever()

    def close(self) -> None:
        """Stop serving and release the port."""
        if self._thread is not None:
            self.server.shutdown()
            self._thread.join()
        self.server.server_close()


_LOCAL = {"127.0.0.1", "localhost", "::1"}
_ANY = {"0.0.0.0", "::", ""}


def _hosts(names: set[str], port: int) -> frozenset[str]:
    return frozenset(n.lower() for name in names for n in (name, f"{name}:{port}"))


def serve(site: Site, host: str = "127.0.0.1", port: int = 0) -> Viewer:
    """Start a viewer in a background thread; `Viewer.url` is where it answers.

    Raises:
        ConfigError: the address cannot be bound (choose another ``--port``).
    """
    try:
        return Viewer(site, host, port).start()
    except OSError as exc:
        fix = (
            "choose another --port"
            if exc.errno in (errno.EADDRINUSE, errno.EACCES)
            else ("check --host: an address of this machine, e.g. 127.0.0.1")
        )
        raise ConfigError(f"cannot serve the viewer on {host}:{port}: {exc} ({fix})") from exc
