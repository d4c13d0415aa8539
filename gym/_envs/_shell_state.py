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
    "( builtin set +e +u +o pipefail; builtin shopt -u nocasematch; "
    'builtin set -- "$(if [[ ${PWD-} && $PWD -ef . ]]; then builtin printf \'%s\\n\' "$PWD"; '
    'else builtin pwd -P 2>/dev/null; fi; builtin printf x)"; '
    "if [[ $1 == *$'\\nx' ]]; then builtin printf '%q\\n' \"${1%$'\\nx'}\"; "
    "else builtin printf \"''\\n\"; fi "
    '&& { [[ ${IFS@a} != *x* ]] || builtin printf \'= IFS %s %q\\n\' "${IFS@a}" "$IFS"; } '
    "&& IFS=$' \\t\\n' && builtin compgen -v >/dev/null && builtin set -- $(builtin compgen -e) "
    "&& while (( $# )); do "
    "if [[ $1 == IFS ]]; then :; "
    "elif [[ -R $1 || ${!1@a} == *[aA]* ]]; then builtin printf '? %s\\n' \"$1\"; "
    'else builtin printf \'= %s %s %q\\n\' "$1" "${!1@a}" "${!1}"; fi '
    "|| builtin exit 1; builtin shift; done )"
)
"""Bash text printing the shell's state as lines of data, in a subshell (the shell's own
settings and variables untouched; what its traps or functions print instead is refused
or read as values, never run).

First the directory the shell is in, as ``printf %q`` writes it (``$PWD`` where it names
that directory, else the path the kernel gives, ``pwd -P``; '' when it no longer exists:
before, ``$PWD`` alone, which an ``unset PWD`` or a renamed folder made wrong). Then per
exported variable with a value (those ``compgen -e`` lists) ``= NAME ATTRIBUTES VALUE``
(the value as ``%q`` writes it) or ``? NAME`` (an array or a name reference, whose value
is not read: a reference's subscript would be evaluated; a reference is told before its
attributes are read, for the same reason). It names no variable of its own: the names
are its positional parameters, and ``IFS`` is printed before it is set to split them
(before, an exported ``IFS``, ``__n``, ``__e`` or ``__a`` were read as the capture's own,
and ``nocasematch`` made any name match the list of arrays). A failing builtin ends it
with status 1 (``compgen -v`` tells a disabled ``compgen`` from a shell exporting
nothing, where ``compgen -e`` fails too)."""

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ATTRIBUTES = re.compile(r"[irlut]*x[irlutx]*")
"""Attributes a carried variable may have (``x``: exported, always). Matched up to the
first ``x``, then any: linear, where ``[irlutx]*x[irlutx]*`` backtracked quadratically."""
_SIMPLE = {"a": 7, "b": 8, "e": 27, "E": 27, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11}
_SIMPLE |= {"\\": 92, "'": 39, '"': 34, "?": 63}
_PLAIN = set(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789,._+:@%/-=")
_LAST = frozenset({"HISTFILE"})
"""Given after the others: bash acts on the file it names when others are assigned."""


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
    variables = tuple(_variable(line) for line in lines[1:-1])
    seen: set[str] = set()
    for var in variables:  # a replay unsetting one twice: BASH_XTRACEFD closed its output
        if var.name in seen:
            raise _odd(f"= {var.name} ...", ValueError("a variable printed twice"))
        seen.add(var.name)
    return ShellState(cwd=cwd, variables=variables)


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
    """The bytes a word written by bash's ``printf %q`` stands for (in linear time).

    Its three forms: ``''`` (empty), ``$'...'`` (ANSI-C escapes) or characters each
    escaped by a backslash where bash would read it otherwise (characters of other
    scripts, which bash prints as they are, included).

    Raises:
        ValueError: the word is in none of them.
    """
    if word == "''":
        return b""
    if word.startswith("$'") and word.endswith("'") and len(word) >= 3:
        return _ansi_c(word[2:-1])
    if not _BACKSLASHED.fullmatch(word):
        raise ValueError("not a word printf %q writes")
    return _ESCAPED_CHAR.sub(r"\1", word).encode()


_BACKSLASHED = re.compile(r"(?:\\.|[^\\ \t\n\r\v\f'\"$`;&|<>()\x00-\x1f\x7f])+", re.DOTALL)
"""A word of the third form: each character bash would read otherwise escaped."""
_ESCAPED_CHAR = re.compile(r"\\(.)", re.DOTALL)
_ANSI_C_PART = re.compile(
    r"[^\\']+|\\(?:([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|u([0-9A-Fa-f]{1,4})|U([0-9A-Fa-f]{1,8})"
    r"|c(.)|(.))",
    re.DOTALL,
)
"""One part of the inside of ``$'...'``: a run of plain characters, or one escape."""


def _ansi_c(body: str) -> bytes:
    """The bytes of the inside of ``$'...'``."""
    out, at = bytearray(), 0
    while at < len(body):
        part = _ANSI_C_PART.match(body, at)
        if part is None:
            raise ValueError("a quote or a lone backslash inside $'...'")
        out += _ansi_c_bytes(part)
        at = part.end()
    return bytes(out)


def _ansi_c_bytes(part: re.Match[str]) -> bytes:
    octal, hexed, short, wide, control, simple = part.groups()
    if octal:
        return bytes([int(octal, 8) & 0xFF])
    if hexed:
        return bytes([int(hexed, 16)])
    if point := short or wide:
        if int(point, 16) > 0x10FFFF:
            raise ValueError(f"no character U+{point}")
        return chr(int(point, 16)).encode(errors="surrogatepass")
    if control:
        return bytes([ord(control) & 0x1F])
    if simple is not None:
        if simple not in _SIMPLE:
            raise ValueError(f"an unknown escape \\{simple}")
        return bytes([_SIMPLE[simple]])
    return part.group().encode()


def quote(raw: bytes) -> str:
    """``raw`` as one bash word of ASCII text: ``$'...'`` with octal escapes where needed."""
    if raw and all(b in _PLAIN for b in raw):
        return raw.decode()
    return "$'" + "".join(chr(b) if b in _PLAIN else f"\\{b:03o}" for b in raw) + "'"


def replay_lines(state: ShellState) -> list[str]:
    """Bash lines giving a fresh shell the state's exported variables (not its directory).

    Each variable is unset first (bash's own ``RANDOM``, ``SECONDS``, ``OPTIND`` lose what
    makes them special, and their integer attribute), then, unless the fresh shell still
    holds it integer or read-only (``UID``, ``SHELLOPTS``: only exported), assigned its value
    as a quoted word; its other attributes come after, without a value: ``declare -i N``
    evaluates nothing. ``HISTFILE`` comes last: assigning ``HISTFILESIZE`` truncates the
    file ``HISTFILE`` names.
    """
    lines = []
    for var in sorted(state.variables, key=lambda v: v.name in _LAST):
        name = var.name
        lines.append(
            f"builtin unset -v -- {name} 2>/dev/null; if [[ ${{{name}@a}} == *[ir]* ]]; "
            f"then builtin export -- {name}; else builtin export -- {name}={quote(var.value)}; fi"
        )
        if more := var.attributes.replace("x", ""):
            lines.append(f"builtin declare -{more} -- {name}")
    return lines
