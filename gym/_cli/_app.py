"""What every command module of the CLI shares: the typer app, consoles and options.

Command modules import these from here, never from the package (``gym._cli``), which
imports the command modules to register them: so no module imports its own importer.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Annotated, Any

import typer
from rich.console import Console

__all__ = [
    "DbOpt",
    "JsonFlag",
    "RuntimeOpt",
    "app",
    "console",
    "env_app",
    "err",
    "images_app",
    "print_json",
    "train_app",
    "use_runtime",
]

app = typer.Typer(
    name="gym",
    help="boxgym: containerized agent environments, benchmarks and training.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
images_app = typer.Typer(help="Build and list environment images.", no_args_is_help=True)
env_app = typer.Typer(help="List, validate, import and create environments.", no_args_is_help=True)
app.add_typer(images_app, name="images")
app.add_typer(env_app, name="env")
train_app = typer.Typer(
    help="Train a local model on environment rewards (grpo, rft).", no_args_is_help=True
)
app.add_typer(train_app, name="train")
console = Console()
if not console.is_terminal:  # logs and pipes: wide enough for the report tables
    console = Console(width=140)
err = Console(stderr=True)

JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
DbOpt = Annotated[
    str | None,
    typer.Option("--db", envvar="GYM_DB_URL", help="Store URL (sqlite:///f.db, postgresql://...)."),
]

RuntimeOpt = Annotated[
    str | None,
    typer.Option(
        "--runtime",
        envvar="GYM_RUNTIME",
        help="OCI runtime of every container (runsc: gVisor, see scripts/gvisor.sh).",
    ),
]


def use_runtime(runtime: str | None) -> None:
    """Make every sandbox of this process (and of its children) run under ``runtime``.

    Raises:
        ConfigError: the engine does not know the runtime (scripts/gvisor.sh registers runsc).
    """
    if not runtime:
        return
    from gym._errors import ConfigError
    from gym._sandbox import client

    known = client().info().get("Runtimes") or {}
    if runtime not in known:
        raise ConfigError(
            f"the Docker engine has no runtime {runtime!r} (it has: {', '.join(sorted(known))}); "
            "for gVisor run `sudo scripts/gvisor.sh` once"
        )
    os.environ["GYM_RUNTIME"] = runtime


def print_json(data: Any) -> None:
    """Print data as JSON on stdout (plain, no colour)."""
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")
