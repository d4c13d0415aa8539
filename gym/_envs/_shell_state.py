"""A shell's directory and exported variables, read from it as data and replayed as data.

A fork asks the parent's shell for its state (`CAPTURE`), and the branch's fresh shell
is given that state by a replay the harness writes (`replay_lines`). Nothing the parent's
shell prints is run: its answer is parsed here (`parse`), each value unquoted to bytes
from the three forms bash's ``printf %q`` writes, and quoted again here. The agent owns
its shell, so it can make the shell report another state (a DEBUG trap, a function named
``builtin``): the branch then starts from those values, but no text of the agent's runs
in the replay. (Before, the shell printed bash source, ``declare -px`` and a ``%q`` line,
and the branch evaluated it: an integer variable ``a[$(cmd)]``, a trap or a function
printing a command of the agent's ran it in every branch, recorded by no step.)

Carried: the working directory, each exported variable's value and its attributes
integer, read-only, lower or upper case and trace, given back after the value, so that
nothing is evaluated. An exported variable without a value is not carried (no program
sees it); an exported array or name reference is not either, and its fork is refused as
the agent's state (`UnreadableState`).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from gym._core._errors import UnreadableState

__all__ = ["CAPTURE", "ShellState", "ShellVariable", "parse", "quote", "replay_lines", "unquote"]

CAPTURE = (
    "( builtin set +e +u +o pipefail; IFS=$' \\t\\n'; "
    "builtin printf '%q\\n' \"$PWD\" && __e=$(builtin compgen -e) "
    "&& __a=$'\\n'$(builtin compgen -A arrayvar)$'\\n' && for __n in $__e; do "
    "if [[ -R $__n || $__a == *$'\\n'$__n$'\\n'* ]]; then builtin printf '? %s\\n' \"$__n\"; "
    'else builtin printf \'= %s %s %q\\n\' "$__n" "${!__n@a}" "${!__n}"; fi '
    "|| builtin exit 1; done )"
)
"""Bash text printing the shell's state as lines of data, in a subshell (the shell's own
settings and variables untouched; what its traps or functions print instead is refused
or read as values, never run): the
directory as ``printf %q`` writes it, then per exported variable with a value (those
``compgen -e`` lists) ``= NAME ATTRIBUTES VALUE`` (the value as ``%q`` writes it) or
``? NAME`` (an array or a name reference, whose value is not read: a reference's
subscript would be evaluated). A failing builtin ends it with status 1."""

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ATTRIBUTES = re.compile(r"[irlutx]*x[irlutx]*")
"""Attributes a carried variable may have (``x``: exported, always)."""
_SIMPLE = {"a": 7, "b": 8, "e": 27, "E": 27, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11}
_SIMPLE |= {"\\": 92, "'": 39, '"': 34, "?": 63}
_PLAIN = set(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789,._+:@%/-=")


class ShellVariable(NamedTuple):
    """One exported variable of a shell."""

    name: str
    attributes: str
    """Its ``declare`` flags (``x`` among them)."""
    value: bytes


class ShellState(NamedTuple):
    """A shell's working directory and exported variables."""

    cwd: bytes
    variables: tuple[ShellVariable, ...]


def parse(text: str) -> ShellState:
    """The state `CAPTURE` printed.

    Raises:
        UnreadableState: a line that is not what `CAPTURE` prints (a shell whose builtins
            the agent replaced), or an exported array or name reference.
    """
    lines = text.split("\n")
    if lines[-1] != "" or len(lines) < 2:
        raise UnreadableState("the agent's shell printed no state: this episode cannot fork")
    try:
        cwd = unquote(lines[0])
    except ValueError as exc:
        raise _odd(lines[0], exc) from None
    return ShellState(cwd=cwd, variables=tuple(_variable(line) for line in lines[1:-1]))


def _variable(line: str) -> ShellVariable:
    kind, _, rest = line.partition(" ")
    if kind == "?":
        raise UnreadableState(
            f"the exported array or name reference {rest[:64]!r} cannot be carried to a "
            "branch: this episode cannot fork"
        )
    name, _, rest = rest.partition(" ")
    attributes, _, word = rest.partition(" ")
    if kind != "=" or not (_NAME.fullmatch(name) and _ATTRIBUTES.fullmatch(attributes)):
        raise _odd(line, ValueError("not a variable, its attributes and its value"))
    try:
        return ShellVariable(name, attributes, unquote(word))
    except ValueError as exc:
        raise _odd(line, exc) from None


def _odd(line: str, exc: ValueError) -> UnreadableState:
    return UnreadableState(
        f"the agent's shell printed {line[:80]!r} for its state ({exc}): its builtins are "
        "not bash's, this episode cannot fork"
    )


def unquote(word: str) -> bytes:
    """The bytes a word written by bash's ``printf %q`` stands for.

    Its three forms: ``''`` (empty), ``$'...'`` (ANSI-C escapes) or characters each
    escaped by a backslash where bash would read it otherwise.

    Raises:
        ValueError: the word is in none of them.
    """
    if word == "''":
        return b""
    if word.startswith("$'") and word.endswith("'") and len(word) >= 3:
        return _ansi_c(word[2:-1])
    out, escaped = bytearray(), False
    for char in word:
        if escaped:
            out += char.encode()
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in " \t\n'\"$`;&|<>()" or not char.isprintable():
            raise ValueError(f"an unquoted {char!r}")
        else:
            out += char.encode()
    if escaped or not word:
        raise ValueError("a word ending in a backslash, or none")
    return bytes(out)


def _ansi_c(body: str) -> bytes:
    """The bytes of the inside of ``$'...'``."""
    out, i = bytearray(), 0
    while i < len(body):
        char = body[i]
        if char == "'":
            raise ValueError("a quote inside $'...'")
        if char != "\\":
            out += char.encode()
            i += 1
            continue
        code, i = _escape(body, i + 1)
        out += code
    return bytes(out)


def _escape(body: str, i: int) -> tuple[bytes, int]:
    """One escape of ``$'...'`` starting after its backslash: (its bytes, where it ends)."""
    if i >= len(body):
        raise ValueError("a backslash at the end of $'...'")
    char = body[i]
    if char in _SIMPLE:
        return bytes([_SIMPLE[char]]), i + 1
    if octal := re.match(r"[0-7]{1,3}", body[i:]):
        return bytes([int(octal.group(), 8) & 0xFF]), i + len(octal.group())
    if char == "x" and (hexed := re.match(r"[0-9A-Fa-f]{1,2}", body[i + 1 :])):
        return bytes([int(hexed.group(), 16)]), i + 1 + len(hexed.group())
    if char in "uU" and (hexed := re.match(r"[0-9A-Fa-f]{1,8}", body[i + 1 :])):
        width = 4 if char == "u" else 8
        point = hexed.group()[:width]
        return chr(int(point, 16)).encode(errors="surrogatepass"), i + 1 + len(point)
    if char == "c" and i + 1 < len(body):
        return bytes([ord(body[i + 1]) & 0x1F]), i + 2
    raise ValueError(f"an unknown escape \\{char}")


def quote(raw: bytes) -> str:
    """``raw`` as one bash word of ASCII text: ``$'...'`` with octal escapes where needed."""
    if raw and all(b in _PLAIN for b in raw):
        return raw.decode()
    return "$'" + "".join(chr(b) if b in _PLAIN else f"\\{b:03o}" for b in raw) + "'"


def replay_lines(state: ShellState) -> list[str]:
    """Bash lines giving a fresh shell the state's exported variables (not its directory).

    Each value is assigned as a quoted word, then the variable's other attributes given
    without a value: ``declare -i N`` evaluates nothing.
    """
    lines = []
    for var in state.variables:
        lines.append(f"builtin export -- {var.name}={quote(var.value)}")
        if more := var.attributes.replace("x", ""):
            lines.append(f"builtin declare -{more} -- {var.name}")
    return lines
