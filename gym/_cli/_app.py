"""What every command module of the CLI shares: the app, consoles, options, error path.

Command modules import these from here, never from the package (``gym._cli``), which
imports the command modules to register them: so no module imports its own importer.

Text we did not write (labels, task ids, paths, error messages, model output) is never
read as rich markup where it is printed (`rich.markup.escape`, `Text`, ``markup=False``),
and the consoles here neutralize terminal escapes, control and bidirectional characters
in whatever they print (`neutral`). Help texts are shown literally too (`command`).
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable, Iterable, Sequence
from typing import Annotated, Any, TypeVar

import typer
from pydantic import ValidationError
from rich.console import Console, ConsoleDimensions, ConsoleOptions, RenderableType
from rich.markup import escape
from rich.segment import Segment
from rich.text import Text

from gym._core._errors import ConfigError, GymError
from gym._core._json import dumps
from gym._core._paths import data_path
from gym._core._text import clean

_T = TypeVar("_T")

ClickException: type[Exception] = next(
    c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException"
)
"""The base of click's errors, from the click typer uses (its own copy since typer 0.2x)."""

__all__ = [
    "DbOpt",
    "JsonFlag",
    "RuntimeOpt",
    "app",
    "command",
    "console",
    "env_app",
    "err",
    "from_options",
    "images_app",
    "neutral",
    "one_of",
    "print_json",
    "run_cli",
    "say_error",
    "tasks_option",
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


def neutral(text: str) -> str:
    """The text with terminal escapes dropped and control and bidi characters made visible."""
    return text if text.isprintable() else clean(text)


def _neutral_text(text: Text, console: Console) -> Text:
    """The rich text with each styled piece `neutral` (styles kept, layout not yet done)."""
    if text.plain.isprintable():
        return text
    out = Text(justify=text.justify, overflow=text.overflow, no_wrap=text.no_wrap, end=text.end)
    for piece in text.render(console, end=""):
        out.append(neutral(piece.text), piece.style)
    return out


class _Console(Console):
    """A console no text can take over: all it prints passes `neutral` before its layout.

    Its width follows ``COLUMNS`` at each print (not once, at import); when the output is
    not a terminal and ``COLUMNS`` is not set, it is ``piped_width`` (if given).
    """

    def __init__(self, *, piped_width: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._width = kwargs.get("width")  # rich reads COLUMNS once here; we read it per print
        self._piped_width = piped_width

    def _size(self) -> ConsoleDimensions:
        dims: ConsoleDimensions = Console.size.fget(self)  # type: ignore[attr-defined]
        width = self._piped_width
        if width and not self.is_terminal and not os.environ.get("COLUMNS", "").isdigit():
            return ConsoleDimensions(width, dims.height)
        return dims

    size = property(_size, Console.size.fset)  # type: ignore[attr-defined]

    def render_str(self, text: str, **kwargs: Any) -> Text:
        """The text (markup read unless ``markup=False``), neutralized."""
        return _neutral_text(super().render_str(text, **kwargs), self)

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterable[Segment]:
        """Rich's segments of the renderable, a `Text` neutralized first."""
        if isinstance(renderable, Text):
            renderable = _neutral_text(renderable, self)
        return super().render(renderable, options)


# emoji=False: no ``:name:`` in what we print turns into an emoji (a task id, a path), and
# rich's table of emoji codes (2.3 MiB) is never loaded.
console = _Console(piped_width=140, emoji=False)  # logs and pipes: wide enough for the tables
# soft_wrap: a message on stderr stays one line in a log or a pipe (rich wraps at 80 columns
# there); its tables and bars take 140 columns, as stdout's.
err = _Console(stderr=True, emoji=False, soft_wrap=True, piped_width=140)

_debug = {"on": False}
"""Whether ``gym --debug`` asked for tracebacks."""


@app.callback()
def _global_options(
    debug: Annotated[
        bool,
        typer.Option(
            "--debug", envvar="GYM_DEBUG", help="On an error, also print its Python traceback."
        ),
    ] = False,
) -> None:
    _debug["on"] = debug


def one_of(*names: str) -> Callable[[str | None], str | None]:
    """An option callback that refuses any value but ``names`` (which its error lists)."""

    def check(value: str | None) -> str | None:
        if value is not None and value not in names:
            raise typer.BadParameter(f"{value!r} is not one of {', '.join(names)}")
        return value

    return check


def _store_url(value: str | None) -> str | None:
    """A store URL as given; a plain path or an unsupported database is refused.

    The error of a plain path gives the URL it likely means; that of another database
    (``mysql://``) says which we support.
    """
    if value is not None and not value.strip():
        raise typer.BadParameter(
            "the store URL is empty; give sqlite:///PATH or postgresql://..., or leave the "
            "option out for the default store"
        )
    if value and "://" not in value:
        raise typer.BadParameter(f"{value!r} is not a store URL; did you mean sqlite:///{value}?")
    if value and value.split("://")[0].split("+")[0] not in ("sqlite", "postgresql", "postgres"):
        scheme = value.split("://")[0]
        raise typer.BadParameter(
            f"only sqlite:/// and postgresql:// URLs are supported, not {scheme}://"
        )
    return value


def from_options(ctx: typer.Context, build: Callable[[], _T]) -> _T:
    """What ``build`` makes of a command's options, a refused value said by its option.

    A value a settings model refuses is said by the option that gave it
    (``--temperature must be greater than 0``), not by the model's field. A field is
    matched to the option spelled like it (``updates_per_step``: ``--updates-per-step``;
    ``loss.aggregation``: ``--aggregation``; ``lora.rank``: ``--lora-rank``); a field no
    option gives keeps its dotted name.

    Raises:
        ConfigError: a value is refused (every refusal on one line).
    """
    try:
        return build()
    except ValidationError as exc:
        said = "; ".join(_option_error(ctx, e) for e in exc.errors())
        raise ConfigError(said) from exc


def _option_error(ctx: typer.Context, error: Any) -> str:
    """One refusal of a settings model, by the option (or argument) that gave the field."""
    names = [str(part) for part in error["loc"] if isinstance(part, str)]
    where = _option_of(ctx, names) or ".".join(names) or "a value"
    msg = str(error["msg"])
    for prefix in ("Value error, ", "Assertion failed, "):
        msg = msg.removeprefix(prefix)
    if msg.startswith("Input should be "):
        return f"{where} must be {msg.removeprefix('Input should be ')}"
    return f"{where}: {msg}"


def _option_of(ctx: typer.Context, names: list[str]) -> str | None:
    """The command's option (``--x``) or argument (``ENVS``) a field path names, if any."""
    for start in range(len(names)):
        wanted = "-".join(names[start:]).replace("_", "-")
        for param in ctx.command.params:
            if f"--{wanted}" in param.opts:
                return f"--{wanted}"
            if param.param_type_name == "argument" and param.name == wanted.replace("-", "_"):
                return param.name.upper()
    return None


def _default_store() -> str:
    """The store a command uses without ``--db`` here, as its help says it (made by none)."""
    if os.environ.get("GYM_DB_URL"):
        return "the GYM_DB_URL set here"
    return f"sqlite:///{data_path() / 'runs.db'}"


JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
DbOpt = Annotated[
    str | None,
    typer.Option(
        "--db",
        envvar="GYM_DB_URL",
        callback=_store_url,
        help="Store URL: sqlite:///runs.db (a file), postgresql://... (default: "
        f"{_default_store()}). A command printed for you to paste (the one that finishes "
        "a run) names it as given but leaves a password out: give it in PGPASSWORD or "
        "~/.pgpass.",
    ),
]


def _task_ids(values: list[str] | None) -> list[str] | None:
    """``--tasks`` values split at commas: ``--tasks a,b`` is ``--tasks a --tasks b``."""
    if not values:
        return None
    ids = [part.strip() for value in values for part in value.split(",") if part.strip()]
    if not ids:
        raise typer.BadParameter("give a task id (repeat --tasks, or separate ids with commas)")
    return ids


def tasks_option(help: str, *aliases: str) -> Any:
    """The ``--tasks`` option: repeated, or ids separated by commas."""
    return typer.Option(
        "--tasks", *aliases, callback=_task_ids, help=f"{help} (repeat it, or a,b)."
    )


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
    from gym._core._errors import ConfigError
    from gym._sandbox import client

    known = client().info().get("Runtimes") or {}
    if runtime not in known:
        raise ConfigError(
            f"the Docker engine has no runtime {runtime!r} (it has: {', '.join(sorted(known))}); "
            "for gVisor run `sudo scripts/gvisor.sh` once"
        )
    os.environ["GYM_RUNTIME"] = runtime


def print_json(data: Any) -> None:
    """Print data as JSON on stdout (plain, no colour; a number that is not finite: null)."""
    sys.stdout.write(dumps(data, indent=2, default=str) + "\n")


def say_error(message: str, hint: str = "") -> None:
    """Print ``error: MESSAGE`` on stderr as one line, literally, and a hint line if any."""
    err.print(Text.assemble(("error:", "bold red"), " ", message), soft_wrap=True)
    if hint:
        err.print(Text(hint, style="dim"), soft_wrap=True)


def _reflowed(text: str) -> str:
    """A help text's paragraphs each on one line, for the terminal's width to wrap.

    A docstring's line breaks are where its source wrapped, not where the reader's
    terminal does; a paragraph with an indented line keeps its lines.
    """
    paragraphs = text.split("\n\n")
    return "\n\n".join(
        p if any(line[:1].isspace() for line in p.splitlines()[1:]) else " ".join(p.split("\n"))
        for p in paragraphs
    )


def _literal_help(cmd: Any) -> None:
    """Reflow and escape every help text of the command tree: typer reads them as rich markup."""
    for item in (cmd, *cmd.params):
        for attr in ("help", "short_help", "epilog"):
            if getattr(item, attr, None):
                setattr(item, attr, escape(_reflowed(getattr(item, attr))))
    for sub in getattr(cmd, "commands", {}).values():
        _literal_help(sub)


def command() -> Any:
    """The click command tree of ``gym``, its help texts shown as written (``[[rule]]``)."""
    cmd = typer.main.get_command(app)
    _literal_help(cmd)
    return cmd


def run_cli(args: Sequence[str] | None = None) -> object:
    """Run the ``gym`` command line; the status to exit with.

    Every error leaves as one line on stderr (and at most a hint line), never a
    traceback unless ``--debug``: 2 for a usage error (a bad option or argument,
    `ConfigError`, `StoreError`, a value a settings model refuses), 1 for a failure
    (another `GymError`, an `OSError`, an internal error), 130 on Ctrl-C.
    """
    try:
        result = command().main(args=args, prog_name="gym", standalone_mode=False)
    except SystemExit as exc:
        return exc.code
    except ClickException as exc:
        return _usage(exc)
    except typer.Abort:
        say_error("aborted")
        return 1
    except KeyboardInterrupt:
        return 130
    except GymError as exc:
        return _failed(exc, str(exc), exc.exit_code)
    except OSError as exc:
        return _failed(exc, _os_message(exc), 1)
    except ValidationError as exc:  # a value a settings model refused (e.g. --lr 0)
        return _failed(exc, _invalid(exc), 2)
    except Exception as exc:
        return _failed(exc, f"internal error: {type(exc).__name__}: {exc}", 1, internal=True)
    return result if isinstance(result, int) else 0


def _usage(exc: Any) -> int:
    """Say a click error in one line (usage errors: and where the options are listed)."""
    code = int(exc.exit_code)
    if type(exc).__name__ == "NoArgsIsHelpError":  # a group called bare: its help
        exc.show()
        return code
    ctx = getattr(exc, "ctx", None)
    say_error(exc.format_message(), f"`{ctx.command_path} --help` lists the options" if ctx else "")
    return code


def _failed(exc: BaseException, message: str, code: int, *, internal: bool = False) -> int:
    """Say the error (after its traceback with --debug); the exit status."""
    if _debug["on"]:
        sys.stderr.write(neutral("".join(traceback.format_exception(exc))))
        sys.stderr.flush()
    elif internal:
        message += " (rerun with --debug for the traceback)"
    say_error(message)
    return code


def _invalid(exc: ValidationError) -> str:
    """``invalid MODEL: FIELD: what is wrong; ...`` in one line."""
    parts = [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()]
    return f"invalid {exc.title}: " + "; ".join(parts)


def _os_message(exc: OSError) -> str:
    """``PATH: reason`` (``PATH -> OTHER: reason`` for a rename), or the error's own text."""
    reason = exc.strerror or str(exc)
    if exc.filename is None:
        return reason
    where = str(exc.filename) + (f" -> {exc.filename2}" if exc.filename2 is not None else "")
    return f"{where}: {reason}"
