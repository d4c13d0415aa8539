"""`gym serve`: an environment over the OpenEnv protocol, for trainers that speak it."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from gym._cli._app import app, err

__all__: list[str] = []


@app.command("serve")
def serve_cmd(
    env_id: Annotated[str, typer.Argument(help="Environment id, e.g. boxgym/PyFunc-v0.")],
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="Port to listen on (0: a free one).")
    ] = 8000,
    max_sessions: Annotated[
        int, typer.Option("--max-sessions", min=1, help="Sessions (episodes) at once.")
    ] = 8,
    session_timeout: Annotated[
        float,
        typer.Option(
            "--session-timeout",
            min=0,
            help="Seconds a session may stay idle before it is closed (0: never).",
        ),
    ] = 600.0,
    split: Annotated[
        str | None, typer.Option("--split", help="Only tasks of this split (e.g. train).")
    ] = None,
) -> None:
    """Serve ENV over the OpenEnv protocol: one WebSocket session per episode (docs/serving.md).

    Prints the server's URL on stdout once it listens; Ctrl-C stops it, closing every
    session and its containers.
    """
    from gym._serve._app import ServeConfig, serve

    config = ServeConfig(
        env_id=env_id,
        host=host,
        port=port,
        max_sessions=max_sessions,
        session_timeout=session_timeout or None,
        split=split,
    )
    if host not in ("127.0.0.1", "localhost", "::1"):
        err.print(
            f"[yellow]warning:[/] serving on {escape(host)}: anyone who reaches it runs "
            "episodes (containers) on this machine"
        )

    def ready(url: str) -> None:
        print(url, flush=True)  # plain, for scripts
        err.print(
            f"serving {escape(env_id)} over OpenEnv at {escape(url)} (sessions on /ws, "
            f"{max_sessions} at once); Ctrl-C stops it"
        )

    try:
        serve(config, ready=ready)
    except KeyboardInterrupt:
        pass
