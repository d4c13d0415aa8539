"""Host-side canaries: what an escape would touch, watched from outside the sandbox.

- A TCP listener on every host address: a connection from a sandbox proves a route
  out (whatever the sandbox printed about it).
- A secret planted in this process's environment: seeing it inside a sandbox proves a
  leak of the harness's environment.
- A canary folder on the host: any change to it after an episode proves a write
  outside the sandbox (through a link followed on copy-out, for example).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import secrets
import socket
import struct
import tempfile
import threading
from pathlib import Path

__all__ = ["Canaries", "host_addresses"]

_SIOCGIFADDR = 0x8915


def host_addresses() -> list[str]:
    """IPv4 addresses of this host's interfaces (docker0 first), loopback left out."""
    found: list[str] = []
    for _, name in sorted(socket.if_nameindex(), key=lambda item: item[1] != "docker0"):
        address = _address_of(name)
        if address and not address.startswith("127.") and address not in found:
            found.append(address)
    return found


def _address_of(interface: str) -> str:
    """The IPv4 address of an interface ('' if it has none)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            packed = fcntl.ioctl(
                sock.fileno(), _SIOCGIFADDR, struct.pack("256s", interface.encode()[:15])
            )
        except OSError:
            return ""
    return socket.inet_ntoa(packed[20:24])


class Canaries:
    """The canaries of one suite run; start with `open`, stop with `close`."""

    def __init__(self) -> None:
        self.secret_name = f"BOXGYM_REDTEAM_{secrets.token_hex(4).upper()}"
        self.secret = f"rt-secret-{secrets.token_hex(16)}"
        self.folder = Path(tempfile.mkdtemp(prefix="boxgym-canary-"))
        (self.folder / "canary.txt").write_text(self.secret)
        self._listener: socket.socket | None = None
        self.port = 0
        self.hits: list[tuple[str, bytes]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()

    def open(self) -> Canaries:
        """Plant the secret and start listening on every host address."""
        os.environ[self.secret_name] = self.secret
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("0.0.0.0", 0))  # noqa: S104 - the point is to be reachable from anywhere
        listener.listen(16)
        listener.settimeout(0.2)
        self._listener, self.port = listener, listener.getsockname()[1]
        threading.Thread(target=self._accept, name="redteam-canary", daemon=True).start()
        return self

    def _accept(self) -> None:
        assert self._listener is not None
        while not self._stop.is_set():
            try:
                conn, peer = self._listener.accept()
            except (TimeoutError, OSError):
                continue
            with conn:
                conn.settimeout(1.0)
                data = b""
                with contextlib.suppress(OSError):
                    data = conn.recv(256)
            with self._lock:
                self.hits.append((peer[0], data))

    def hits_with(self, token: str) -> list[str]:
        """Peers whose connection carried ``token`` (a sandbox reached the host)."""
        with self._lock:
            return [peer for peer, data in self.hits if token.encode() in data]

    def folder_digest(self) -> str:
        """A hash of the canary folder's names and contents (changes show as a new hash)."""
        digest = hashlib.sha256()
        for path in sorted(self.folder.rglob("*")):
            digest.update(str(path.relative_to(self.folder)).encode())
            if path.is_file() and not path.is_symlink():
                digest.update(path.read_bytes())
        return digest.hexdigest()

    def close(self) -> None:
        """Stop listening, remove the secret and the folder."""
        self._stop.set()
        if self._listener is not None:
            self._listener.close()
        os.environ.pop(self.secret_name, None)
        import shutil

        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> Canaries:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()
