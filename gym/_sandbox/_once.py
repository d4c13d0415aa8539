"""One-shot hardened containers: the command is the container's main process.

For work done once in a fresh container (grading), starting the container with the
command itself costs about a bare container's lifecycle, where an exec into a started
container adds a whole runc exec on top. Standard input is attached before the start,
so an archive can be streamed in; output comes back on the attach stream.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Sequence

import docker.errors

from gym._sandbox._config import SandboxConfig
from gym._sandbox._engine import client, docker_errors, labels
from gym._sandbox._pool import remove_container_later
from gym._sandbox._stream import ExecResult, ExecSocket, pump

__all__ = ["run_once"]


def run_once(
    config: SandboxConfig,
    argv: Sequence[str],
    *,
    stdin: bytes | None = None,
    timeout: float = 60.0,
    max_output: int = 1 << 20,
    run: str = "adhoc",
) -> ExecResult:
    """Run ``argv`` as the main process of a fresh hardened container, then remove it.

    Args:
        config: the sandbox settings (hardening, limits, mounts; boot steps are ignored).
        argv: the command.
        stdin: bytes streamed to the command's standard input, then closed.
        timeout: seconds before the container is removed, whatever it is doing.
        max_output: bytes kept per stream (head and tail).
        run: value of the ``boxgym.run`` label.

    Raises:
        SandboxUnavailable: the container could not be created or vanished.
    """
    tags = labels(run, f"once-{uuid.uuid4().hex[:16]}", "grader")
    kwargs = config.create_kwargs(tags, command=list(argv))
    kwargs.pop("detach", None)
    kwargs["stdin_open"] = stdin is not None
    engine = client()
    start = time.monotonic()
    with docker_errors():
        container = engine.containers.create(**kwargs)
    sock: ExecSocket | None = None
    try:
        with docker_errors(container.id):
            params = {"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
            sock = ExecSocket(engine.api.attach_socket(container.id, params=params))
            container.start()
        out, err, timed_out = pump(sock, stdin, start + timeout, max_output)
        exit_code = None
        if not timed_out:
            with docker_errors(container.id):
                exit_code = int(engine.api.wait(container.id, timeout=30)["StatusCode"])
        oom = _oom_killed(engine, container.id) if exit_code == 137 else False
        result = ExecResult(
            exit_code=exit_code,
            stdout=out.text(),
            stderr=err.text(),
            duration_s=time.monotonic() - start,
            timed_out=timed_out,
            oom_killed=oom,
            stdout_truncated=out.truncated,
            stderr_truncated=err.truncated,
        )
        return result
    finally:
        if sock is not None:
            sock.close()
        remove_container_later(container.id)


def _oom_killed(engine: docker.DockerClient, container_id: str) -> bool:
    with contextlib.suppress(docker.errors.APIError):
        return bool(engine.api.inspect_container(container_id)["State"].get("OOMKilled"))
    return False
