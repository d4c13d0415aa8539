"""What a table's CHECK constraints refuse, as a set of conjuncts in a canonical form.

A row is refused when any CHECK of its table is false (NULL passes), so a table's checks
mean the conjunction of all their conjuncts, whichever constraints hold them:
``CHECK (a AND b)`` refuses what ``CHECK (a)`` and ``CHECK (b)`` together do (in
three-valued logic too: ``a AND b`` is false exactly when one of them is). The grader
compares these sets, not the constraints' texts.

Each conjunct is written in a canonical form by identities only, never by likeness:

- the operands of AND and of OR are flattened, repeated ones kept once and sorted
  (``a AND b`` is ``b AND a``; AND, OR and their truth tables are symmetric);
- a comparison of two plain operands puts the side that sorts first (`_side`: a name
  before a literal) on the left, its operator mirrored (``0 <= x`` is ``x >= 0``: the
  built-in ``<``, ``<=``, ``>``, ``>=``, ``=`` and ``<>`` are each other's
  commutators; an operator PostgreSQL prints qualified, ``OPERATOR(s.<)``, is never
  touched);
- literal noise is loosened (`loose_check`: casts of literals, parenthesised numbers,
  trailing zeros).

So two sets that are equal always refuse the same rows, and a definition written
otherwise than the gold's passes when only these identities separate them. Sets that
differ may still refuse the same rows (this is no decision procedure): such work fails,
as every different text did before. A definition that does not parse as expected (an
unbalanced text, a cut one: `runner.DEF_CHARS`) is one opaque conjunct, its loosened text.

The text is PostgreSQL's own print of the parsed expression (``pg_get_constraintdef``
under a search path of ``pg_catalog`` alone, so any operator or function of another
schema is printed qualified), which brackets every operator expression; nothing here
reads the agent's words. Bounded: linear patterns, brackets at most `MAX_DEPTH` deep.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["conjuncts", "loose_check"]

_LITERAL_CAST = re.compile(
    r"('(?:[^']|'')*'|\(-?\d+(?:\.\d+)?\)|\b\d+(?:\.\d+)?)"
    r"::(?!real\b|double\b)[a-z](?:[a-z ]*[a-z])?(\[\])?(?=\s*(?:$|[^a-z(\s]))"
)
_PAREN_NUMBER = re.compile(r"(?<![\w\]])\((-?\d+(\.\d+)?)\)")
"""A parenthesised number that is no function's or type's argument list."""
_QUOTED = re.compile(r"""(E?'(?:[^']|'')*'|"(?:[^"]|"")*")""")
_DECIMAL = re.compile(r"\b(\d+)\.(\d*?)0*(?!\d)")


def loose_check(definition: str) -> str:
    """A CHECK definition with literal noise removed: literals' casts, their parentheses, zeros.

    PostgreSQL prints ``CHECK (x <= 0.3)`` and ``CHECK (x <= 0.30)`` differently and
    casts literals (``(0)::numeric``, ``'a'::text``); both forms mean the same, since an
    uncast literal takes the type of what it is compared with. Only a literal's cast
    goes (not a column's: ``(x)::integer`` rounds), never one with a modifier
    (``numeric(3,2)`` rounds, ``character varying(2)`` cuts), nor one to ``real`` or
    ``double precision`` (whose 0.3 is not numeric's). Bounded: definitions are cut by
    the runner (`runner.DEF_CHARS`), and the patterns are linear.
    """
    pieces = _QUOTED.split(_LITERAL_CAST.sub(r"\1", definition[:4000]))
    for i in range(0, len(pieces), 2):  # outside quotes: '1.50' is not the text '1.5'
        text = _PAREN_NUMBER.sub(r"\1", pieces[i])
        text = _DECIMAL.sub(lambda m: m.group(1) + ("." + m.group(2) if m.group(2) else ""), text)
        pieces[i] = " ".join(text.split())
    return " ".join(p for p in pieces if p)


_TOKEN = re.compile(
    r"""(?P<space>\s+)
    |(?P<string>E?'(?:[^']|'')*')
    |(?P<ident>"(?:[^"]|"")*")
    |(?P<number>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)
    |(?P<word>[A-Za-z_][A-Za-z0-9_$]*)
    |(?P<open>[(\[])
    |(?P<close>[)\]])
    |(?P<op>[+\-*/<>=~!@#%^&|`?]+)
    |(?P<punct>::|[.,:;])""",
    re.VERBOSE,
)
MAX_DEPTH = 40
"""Brackets nested deeper make a definition opaque (the canonical form recurses)."""
_MIRROR = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "=": "=", "<>": "<>"}
_BOOL = ("AND", "OR")


@dataclass(frozen=True)
class _Group:
    """A bracketed part: its opening bracket and what it holds."""

    bracket: str
    items: tuple[str | _Group, ...]


_Item = str | _Group


def conjuncts(definitions: Iterable[str]) -> frozenset[str]:
    """The canonical conjuncts of CHECK definitions (``pg_get_constraintdef`` texts)."""
    out: set[str] = set()
    for definition in definitions:
        out |= _of_check(loose_check(definition))
    return frozenset(out)


def _of_check(text: str) -> frozenset[str]:
    items = _parse(text)
    if items is None or len(items) != 2 or items[0] != "CHECK" or not isinstance(items[1], _Group):
        return frozenset({text})  # NO INHERIT, a cut text, anything unexpected: opaque
    kind, parts = _node(list(items[1].items))
    return parts if kind == "AND" else frozenset({_render(kind, parts)})


def _parse(text: str) -> tuple[_Item, ...] | None:
    """The tokens of ``text`` with brackets nested; None where it does not tokenize."""
    stack: list[tuple[str, list[_Item]]] = [("", [])]
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            return None
        pos, kind, token = match.end(), match.lastgroup, match.group()
        if kind == "space":
            continue
        if kind == "open":
            if len(stack) > MAX_DEPTH:
                return None
            stack.append((token, []))
        elif kind == "close":
            bracket, items = stack.pop()
            if not stack or {"(": ")", "[": "]"}.get(bracket) != token:
                return None
            stack[-1][1].append(_Group(bracket, tuple(items)))
        else:
            stack[-1][1].append(token)
    return tuple(stack[0][1]) if len(stack) == 1 else None


def _node(items: list[_Item]) -> tuple[str, frozenset[str]]:
    """An expression as (AND | OR | ATOM, its canonical operands)."""
    while len(items) == 1 and isinstance(items[0], _Group) and items[0].bracket == "(":
        if "," in items[0].items:
            break  # a row, (a, b): not a parenthesised expression
        items = list(items[0].items)
    if any(_keyword(items, i) and items[i] not in _BOOL for i in range(len(items))):
        return "ATOM", frozenset({_plain(items)})  # CASE, IS, NOT ...: its AND is its own
    for word in _BOOL:
        parts = _split(items, word)
        if len(parts) == 1:
            continue
        if any(w in items for w in _BOOL if w != word) or not all(parts):
            return "ATOM", frozenset({_plain(items)})  # mixed: never printed so
        operands: set[str] = set()
        for part in parts:
            kind, sub = _node(part)
            operands |= sub if kind == word else {_render(kind, sub)}
        return (word, frozenset(operands)) if len(operands) > 1 else ("ATOM", frozenset(operands))
    return "ATOM", frozenset({_comparison(items) or _plain(items)})


def _split(items: Sequence[_Item], word: str) -> list[list[_Item]]:
    parts: list[list[_Item]] = [[]]
    for item in items:
        if item == word:
            parts.append([])
        else:
            parts[-1].append(item)
    return parts


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
_CALLS = frozenset({"ARRAY", "COALESCE", "GREATEST", "LEAST", "NULLIF"})
"""Capital words that are calls when a bracket follows them."""


def _keyword(items: Sequence[_Item], i: int) -> bool:
    """Whether ``items[i]`` is a keyword (IS, NOT, CASE, ANY ...), not a name nor a call.

    PostgreSQL prints keywords in capitals and names in lower case (quoted otherwise);
    the few capital calls it prints (`_CALLS`) are followed by their bracket.
    """
    item = items[i]
    if not isinstance(item, str) or not _WORD.fullmatch(item) or item == item.lower():
        return False
    called = i + 1 < len(items) and isinstance(items[i + 1], _Group)
    return not (called and item in _CALLS)


def _comparison(items: Sequence[_Item]) -> str | None:
    """``left op right`` in one order for both of its forms, if it is a plain comparison.

    Plain: one operator at the top level, one of `_MIRROR`'s, and no keyword on either
    side (anything that binds more loosely than the comparison is bracketed or a
    keyword; PostgreSQL brackets every operator expression it prints).
    """
    ops = [i for i, item in enumerate(items) if isinstance(item, str) and _OPERATOR.fullmatch(item)]
    if len(ops) != 1 or items[ops[0]] not in _MIRROR or ops[0] in (0, len(items) - 1):
        return None
    if any(_keyword(items, i) for i in range(len(items))) or "," in items:
        return None
    at = ops[0]
    op, left, right = str(items[at]), _plain(items[:at]), _plain(items[at + 1 :])
    if _side(right) < _side(left):  # one order for both: a name before a literal
        left, op, right = right, _MIRROR[op], left
    return f"{left} {op} {right}"


def _side(text: str) -> tuple[bool, str]:
    """How a comparison's side sorts: names and calls first, then literals; then by text."""
    return text[:1] in "0123456789'-E", text


_OPERATOR = re.compile(r"[+\-*/<>=~!@#%^&|`?]+")


def _plain(items: Sequence[_Item]) -> str:
    """The items as text, each bracketed part canonical inside, in its place."""
    out = []
    for item in items:
        if isinstance(item, str):
            out.append(item)
        elif item.bracket == "[" or "," in item.items:
            close = "]" if item.bracket == "[" else ")"
            out.append(
                item.bracket + ", ".join(_expression(p) for p in _split(item.items, ",")) + close
            )
        else:
            out.append("(" + _expression(list(item.items)) + ")")
    return " ".join(out)


def _expression(items: list[_Item]) -> str:
    kind, parts = _node(items)
    return _render(kind, parts)


def _render(kind: str, parts: frozenset[str]) -> str:
    if kind == "ATOM":
        (only,) = parts
        return only
    return "(" + f" {kind} ".join(sorted(parts)) + ")"
