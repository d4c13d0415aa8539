"""What a table's CHECK constraints refuse, as a set of conjuncts in a canonical form.

A row is refused when any CHECK of its table is false or raises an error (NULL passes).
So a table's checks mean one conjunction of all their top-level conjuncts, whichever
constraints hold them and in whatever order: ``CHECK (a AND b)`` refuses exactly the rows
``CHECK (a)`` and ``CHECK (b)`` together do (``a AND b`` is false, or raises, exactly
when one of them is false or raises: a refusal either way). The grader compares these
sets, not the constraints' texts.

First each NOT is pushed inwards where an identity of PostgreSQL's three-valued logic
allows (`_negation`): ``NOT NOT a`` is ``a``, De Morgan's laws, ``NOT (x IS NULL)`` is
``x IS NOT NULL`` for a scalar column, and ``NOT (a < b)`` is ``a >= b`` where neither
side can raise (columns of a totally ordered type, `_SAFE`).

A conjunct on one column is then decided (`_ranges`) where its truth at every value is
known and nothing in it can raise:

- of an integer type or numeric: it compares that column, or a cast of it that keeps
  each value, with numbers PostgreSQL computes exactly (constants, and their casts to an
  integer type or to numeric, rounded as the server rounds), under AND, OR, NOT,
  ``IS [NOT] NULL``, ``IS [NOT] DISTINCT FROM``, ``= ANY`` and ``<> ALL`` of a list;
- of text or varchar under the database's collation (deterministic: equal strings are
  equal bytes): the same, with string constants and ``=`` and ``<>`` only (an order is
  the collation's), so its values are a finite set of strings or all but a finite set.

The decided conjuncts of one column, from all of a table's checks, are taken together
(the values the column takes under all of them) and written one way: whether NULL is
refused, then for numbers the lowest and highest bound and each gap between the
intervals taken, for strings the strings taken or each string left out. ``i > -1``,
``i >= 0.0``, ``NOT (i < 0)`` and ``i IS NULL OR i >= 0`` on an integer column are all
``i >= 0``; on numeric, which holds a value between any two, ``n > -1`` is not ``n >= 0``;
``s IN ('b', 'a')`` is ``s = 'a' OR s = 'b'``; ``i >= 0`` in one check and ``i <= 9`` and
``i >= -5`` in another are ``i >= 0`` and ``i <= 9``. `holds` asks whether a table's
checks refuse every row one check refuses: whether adding it changes their form.

Any other conjunct is written in a canonical form by identities only, never by likeness:

- a comparison of two operands with one of the built-in ``<``, ``<=``, ``>``, ``>=``,
  ``=``, ``<>`` (each other's commutators) puts the side that sorts first (a name
  before a literal, then by text) on the left, its operator mirrored: ``0 <= x`` is
  ``x >= 0``.
  An operator PostgreSQL prints qualified, ``OPERATOR(s.<)``, is never touched;
- a literal compared directly with a column of the table loses what cannot change the
  comparison nor make it raise: a string literal its cast to the column's own type; a
  number compared with a column of a numeric type its brackets (``(0)``), its trailing
  zeros (``0.30`` is ``0.3``) and a cast to the column's type that neither rounds nor
  overflows (``(0)::numeric`` against a ``numeric(3,2)`` column; never
  ``(0.3)::integer``, nor ``(70000)::smallint``, which raises as every row is checked).
  A literal anywhere else (in arithmetic, a call's arguments, against another literal,
  cast to text) keeps every character: ``7 / 2`` is not ``7.0 / 2.0``;
- the operands of an AND or an OR below the top level are flattened in order, and
  sorted (and kept once) only when each of them never raises: a comparison of columns
  of a numeric, boolean, date or timestamp type with each other or with one literal
  (`_SAFE`; text can meet a collation conflict, an array or a record an element type
  with no operator). PostgreSQL evaluates them from the left and stops at the first
  that decides, so ``q = 0 OR 10 / q > 1`` is not ``10 / q > 1 OR q = 0`` (the second
  refuses ``q = 0`` with a division by zero);
- a check's ``x IS NULL OR y IS NULL OR c`` is ``c`` (and splits as ``c`` does) when
  ``c`` is NULL wherever each guarded column is and never raises: AND and OR of
  comparisons of that column itself with a literal or a column of a `_SAFE` type (a
  check passes NULL anyway).

So two sets that are equal refuse the same rows, and a definition written otherwise than
the gold's passes when only the values of one column or these identities separate them.
Sets that differ may still refuse the same rows (beyond one column this is no decision
procedure: two columns compared with a constant, dates, an order of strings, a call):
such work fails, as every different text did before. A definition
that does not parse as expected (an unbalanced text, one cut by the runner:
`runner.DEF_CHARS`, one nested past `MAX_DEPTH`) is one opaque conjunct, its exact text.

The text is PostgreSQL's own print of the parsed expression (``pg_get_constraintdef``
under a search path of ``pg_catalog`` alone, so any operator, function or type of
another schema is printed qualified), which brackets every operator expression; nothing
here reads the agent's words. Linear: one tokenizer pass per definition, and for one
column's numbers one sort per AND or OR (about 3 ms for one of 1000 characters at worst),
each definition's conjuncts cached.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

__all__ = ["MAX_DEPTH", "conjuncts", "holds"]

MAX_DEPTH = 40
"""Brackets nested deeper make a definition opaque (the canonical form recurses)."""

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
_MIRROR = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "=": "=", "<>": "<>"}
_NEGATED = {"<": ">=", ">=": "<", ">": "<=", "<=": ">", "=": "<>", "<>": "="}
_BOOL = ("AND", "OR")
_OPERATOR = re.compile(r"[+\-*/<>=~!@#%^&|`?]+")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
_NAME = re.compile(r'[a-z_][a-z0-9_$]*|"(?:[^"]|"")*"')
_CALLS = frozenset({"ARRAY", "COALESCE", "GREATEST", "LEAST", "NULLIF"})
"""Capital words that are calls when a bracket follows them."""
_MODIFIER = re.compile(r"\([^()]*\)")


@dataclass(frozen=True)
class _Group:
    """A bracketed part: its opening bracket and what it holds."""

    bracket: str
    items: tuple[str | _Group, ...]


_Item = str | _Group


@dataclass(frozen=True)
class _Node:
    """An expression: AND, OR or ATOM, its canonical operands, and whether it never raises."""

    kind: str
    operands: tuple[str, ...]
    safe: bool

    def render(self) -> str:
        if self.kind == "ATOM":
            return self.operands[0]
        return "(" + f" {self.kind} ".join(self.operands) + ")"


def conjuncts(
    definitions: Iterable[str],
    columns: Mapping[str, str] | None = None,
    not_null: frozenset[str] = frozenset(),
) -> frozenset[str]:
    """The canonical conjuncts of one table's CHECK definitions (``pg_get_constraintdef``).

    ``columns``: the table's column names and types (``format_type``), which say when a
    literal's cast is the column's own; without them no cast is dropped. The decided
    conjuncts of one column, from every definition, are taken together: the values the
    column takes under all of them, written once. ``not_null``: the columns declared NOT
    NULL, whose checks never see a NULL: whether they take one is left unwritten (a check
    ``total IS NOT NULL`` on such a column failed correct work: a red-team helper).
    """
    key = tuple(sorted((columns or {}).items()))
    out: set[str] = set()
    decided: dict[tuple[str, bool], list[_Formula]] = {}
    for definition in definitions:
        texts, found = _of_check(definition, key)
        out |= texts
        for one in found:
            decided.setdefault((one.column, one.numbers), []).append(one.formula)
    for (column, numbers), formulas in decided.items():
        joined = formulas[0] if len(formulas) == 1 else _Join("AND", tuple(formulas))
        out.update(_written_values(_Decided(column, numbers, joined), dict(key), not_null))
    return frozenset(out)


def holds(
    definitions: Iterable[str],
    definition: str,
    columns: Mapping[str, str],
    not_null: frozenset[str] = frozenset(),
) -> bool:
    """Whether a table with the checks ``definitions`` refuses every row ``definition`` does.

    Decided on the canonical forms: adding ``definition`` to the others changes nothing.
    """
    held = list(definitions)
    return conjuncts([*held, definition], columns, not_null) == conjuncts(held, columns, not_null)


@dataclass(frozen=True)
class _Decided:
    """A conjunct about one column's values: numbers (`_NUMBERS_READ`) or strings."""

    column: str
    numbers: bool
    formula: _Formula


@functools.lru_cache(maxsize=4096)
def _of_check(
    text: str, key: tuple[tuple[str, str], ...]
) -> tuple[frozenset[str], tuple[_Decided, ...]]:
    """One definition's conjuncts: written, and decided (cached: a grading asks often)."""
    columns = dict(key)
    items = _parse(text)
    if items is None or len(items) != 2 or items[0] != "CHECK" or not isinstance(items[1], _Group):
        return frozenset({text}), ()  # NO INHERIT, a cut text, anything unexpected: opaque
    found = _top(_pushed(items[1].items, columns), columns)
    texts = frozenset(c for c in found if isinstance(c, str))
    return texts, tuple(c for c in found if isinstance(c, _Decided))


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


def _unwrap(items: list[_Item]) -> list[_Item]:
    """Brackets around a whole expression dropped (a row, ``(a, b)``, keeps its own)."""
    while len(items) == 1 and isinstance(items[0], _Group) and items[0].bracket == "(":
        if "," in items[0].items:
            break
        items = list(items[0].items)
    return items


def _pushed(items: Sequence[_Item], columns: Mapping[str, str]) -> list[_Item]:
    """The items with each NOT pushed inwards as far as identities allow, inside first.

    PostgreSQL prints a NOT as ``NOT (...)``, the first of its bracket's two items.
    """
    out = [_pushed_group(item, columns) if isinstance(item, _Group) else item for item in items]
    if len(out) == 2 and out[0] == "NOT" and isinstance(out[1], _Group) and out[1].bracket == "(":
        negated = _negation(list(out[1].items), columns)
        if negated is not None:
            return negated
    return out


def _pushed_group(group: _Group, columns: Mapping[str, str]) -> _Group:
    """A bracketed part with its NOTs pushed, each of a row's or a call's items alone."""
    if "," not in group.items:
        return _Group(group.bracket, tuple(_pushed(group.items, columns)))
    items: list[_Item] = []
    for piece in _split(group.items, ","):
        items += [",", *_pushed(piece, columns)]
    return _Group(group.bracket, tuple(items[1:]))


def _negation(items: list[_Item], columns: Mapping[str, str]) -> list[_Item] | None:
    """``NOT (items)`` without its NOT, by an identity; else None (the NOT stays).

    Identities of PostgreSQL's three-valued logic that keep where an error is raised
    too: ``NOT NOT a`` is ``a``; ``NOT (x IS NULL)`` is ``x IS NOT NULL`` for a column
    of a scalar type (`_SCALAR`: for a row, neither is the other's negation); De
    Morgan's laws, the operands in their order (the same operand decides first); and a
    comparison that never raises (`_never_raises`: columns of one of the `_SAFE` types,
    totally ordered, NaN above every number) is the comparison by its negator: ``NOT
    (a < b)`` is ``a >= b``, and NULL where either is NULL.
    """
    items = _unwrap(items)
    if len(items) == 2 and items[0] == "NOT" and isinstance(items[1], _Group):
        return list(items[1].items) if items[1].bracket == "(" else None
    if len(items) in (3, 4) and items[1] == "IS" and items[-1] == "NULL":
        if _column_type(items[:1], columns) not in _SCALAR:
            return None
        if len(items) == 3:
            return [items[0], "IS", "NOT", "NULL"]
        return [items[0], "IS", "NULL"] if items[2] == "NOT" else None
    for word in _BOOL:
        parts = _split(items, word)
        if len(parts) == 1:
            continue
        if not all(parts) or any(w in items for w in _BOOL if w != word):
            return None
        negated: list[_Item] = []
        for part in parts:
            inner = _negation(part, columns)
            held: list[_Item] = ["NOT", _Group("(", tuple(part))] if inner is None else inner
            negated += ["OR" if word == "AND" else "AND", _Group("(", tuple(held))]
        return negated[1:]
    sides = None if _has_keyword(items) else _sides(items)
    if sides is None or not _never_raises(sides[0], sides[2], columns):
        return None
    return [*sides[0], _NEGATED[sides[1]], *sides[2]]


def _top(items: list[_Item], columns: Mapping[str, str]) -> list[str | _Decided]:
    """The conjuncts of a check's expression: its top-level AND split, at any depth."""
    items = _unwrap(items)
    parts = _split(items, "AND")
    if len(parts) > 1 and all(parts) and "OR" not in items and not _has_keyword(items):
        return [c for part in parts for c in _top(part, columns)]
    ranged = _ranges(items, columns)
    if ranged is not None:
        return [ranged]
    unguarded = _unguarded(items, columns)
    if unguarded is not None:
        return _top(unguarded, columns)
    return [_node(items, columns).render()]


def _unguarded(items: list[_Item], columns: Mapping[str, str]) -> list[_Item] | None:
    """A check's ``x IS NULL OR y IS NULL OR c`` as ``c``, where that refuses the same rows.

    A check refuses a row only where it is false or raises, so a guard changes nothing
    when ``c`` is NULL wherever its column is NULL and never raises: each of its
    comparisons compares that column itself, with a literal or a column
    (`_never_raises`), by a built-in operator, which is NULL when an operand is; AND and
    OR of NULLs are NULL. Where a guard's column is NULL the check passes both ways (the
    other guards are true or false, ``c`` NULL); where no guard's is, ``c`` decides, as
    alone. None where there is no such guard.
    """
    parts = [_unwrap(part) for part in _split(items, "OR")]
    if len(parts) < 2 or not all(parts):
        return None
    guards = [i for i, part in enumerate(parts) if _null_test(part, columns)]
    rest = [part for i, part in enumerate(parts) if i not in guards]
    if not guards or not rest:
        return None
    for i in guards:
        if not all(_strict_in(part, str(parts[i][0]), columns) for part in rest):
            return None
    joined: list[_Item] = [x for part in rest for x in ("OR", _Group("(", tuple(part)))]
    return joined[1:]


def _null_test(items: Sequence[_Item], columns: Mapping[str, str]) -> bool:
    """Whether the items are ``x IS NULL`` for a column ``x`` of the table."""
    return (
        len(items) == 3
        and items[1:] == ["IS", "NULL"]
        and _column_type(items[:1], columns) is not None
    )


def _strict_in(items: list[_Item], name: str, columns: Mapping[str, str]) -> bool:
    """Whether the expression is NULL wherever column ``name`` is NULL, and never raises.

    AND and OR of plain comparisons, each of ``name`` itself with a literal or a column,
    which never raises (`_never_raises`).
    """
    items = _unwrap(items)
    if _has_keyword(items):
        return False
    for word in _BOOL:
        parts = _split(items, word)
        if len(parts) > 1:
            return all(parts) and all(_strict_in(part, name, columns) for part in parts)
    halves = _halves(items, columns)
    if halves is None:
        return False
    left, _, right = halves
    return [name] in (left, right) and _never_raises(left, right, columns)


def _node(items: list[_Item], columns: Mapping[str, str]) -> _Node:
    """An expression below the top level as a `_Node`."""
    items = _unwrap(items)
    if _has_keyword(items):
        return _Node("ATOM", (_plain(items, columns),), False)  # CASE, IS, NOT: its AND its own
    for word in _BOOL:
        parts = _split(items, word)
        if len(parts) == 1:
            continue
        if any(w in items for w in _BOOL if w != word) or not all(parts):
            return _Node("ATOM", (_plain(items, columns),), False)  # mixed: never printed so
        nodes = [_node(part, columns) for part in parts]
        operands = [o for n in nodes for o in (n.operands if n.kind == word else (n.render(),))]
        safe = all(n.safe for n in nodes)
        if safe:  # none raises: the order of evaluation cannot show
            operands = sorted(set(operands))
        if len(operands) == 1:
            return _Node("ATOM", tuple(operands), safe)
        return _Node(word, tuple(operands), safe)
    compared = _comparison(items, columns)
    if compared is not None:
        return compared
    return _Node("ATOM", (_plain(items, columns),), False)


def _split(items: Sequence[_Item], word: str) -> list[list[_Item]]:
    parts: list[list[_Item]] = [[]]
    for item in items:
        if item == word:
            parts.append([])
        else:
            parts[-1].append(item)
    return parts


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


def _has_keyword(items: Sequence[_Item]) -> bool:
    return any(_keyword(items, i) and items[i] not in _BOOL for i in range(len(items)))


def _comparison(items: Sequence[_Item], columns: Mapping[str, str]) -> _Node | None:
    """A plain comparison in one order for both of its forms, its literals loosened.

    Plain: one operator at the top level, one of `_MIRROR`'s, and no keyword on either
    side (anything that binds more loosely than the comparison is bracketed or a
    keyword; PostgreSQL brackets every operator expression it prints). Safe (it never
    raises) when each side is a single name or literal.
    """
    halves = _halves(items, columns)
    if halves is None:
        return None
    left, op, right = halves
    a, b = _plain(left, columns), _plain(right, columns)
    if (_literal(right), b) < (_literal(left), a):  # one order for both: names first
        a, op, b = b, _MIRROR[op], a
    return _Node("ATOM", (f"{a} {op} {b}",), _never_raises(left, right, columns))


def _halves(
    items: Sequence[_Item], columns: Mapping[str, str]
) -> tuple[list[_Item], str, list[_Item]] | None:
    """A plain comparison's sides, its literals loosened, and its operator; else None.

    Its callers pass items with no keyword left (AND, OR and the rest).
    """
    sides = _sides(items)
    if sides is None:
        return None
    left, op, right = sides
    return _loosened(left, right, columns), op, _loosened(right, left, columns)


def _sides(items: Sequence[_Item]) -> tuple[list[_Item], str, list[_Item]] | None:
    """A plain comparison's two sides and its operator (one of `_MIRROR`'s); else None."""
    ops = [i for i, item in enumerate(items) if isinstance(item, str) and _OPERATOR.fullmatch(item)]
    if len(ops) != 1 or items[ops[0]] not in _MIRROR or ops[0] in (0, len(items) - 1):
        return None
    if "," in items:
        return None
    at = ops[0]
    return list(items[:at]), str(items[at]), list(items[at + 1 :])


def _never_raises(left: list[_Item], right: list[_Item], columns: Mapping[str, str]) -> bool:
    """A comparison of columns of `_SAFE` types with each other or with a single literal."""
    kinds = [_column_type(side, columns) for side in (left, right)]
    if not any(kinds) or not all(k is None or k in _SAFE for k in kinds):
        return False
    return all(len(side) == 1 and isinstance(side[0], str) for side in (left, right))


def _literal(side: Sequence[_Item]) -> bool:
    """Whether a comparison's side starts with a literal (a number, a string, ``(0)``)."""
    first = side[0]
    if isinstance(first, _Group):
        return len(first.items) == 1 and _literal(first.items)
    return first[:1] in "0123456789'-" or first.startswith("E'")


def _loosened(side: list[_Item], other: list[_Item], columns: Mapping[str, str]) -> list[_Item]:
    """``side`` with its literal's noise dropped, when ``other`` is a column of the table.

    Only what cannot change the comparison nor make it raise: a string literal's cast to
    the column's own type (the parser turns both forms into one constant as the check is
    made; for a numeric type, a string holding a number is that number: ``'-1'::integer``
    is -1), and for a column of a numeric type (`_NUMBERS`) a number's brackets, its
    trailing zeros and a cast that neither rounds nor overflows (`_keeps_value`).
    """
    column = _column_type(other, columns)
    if column is None:
        return side
    literal, cast = side[:1], side[1:]
    if literal and isinstance(literal[0], _Group) and len(literal[0].items) == 1:
        literal = list(literal[0].items)  # (0)::numeric: the brackets of a cast number
    if len(literal) != 1 or not isinstance(literal[0], str):
        return side
    value = literal[0]
    if value.startswith("'"):
        if not cast or _cast_type(cast) != column:
            return side
        number = re.fullmatch(r"'(-?)(\d+(\.\d*)?)'", value)
        if number is None or column not in _NUMBERS:
            return [value]
        return [number.group(1) + _digits(number.group(2))]  # '-1'::integer: one constant
    if not re.fullmatch(r"\d+(\.\d*)?", value) or column not in _NUMBERS:
        return side
    if cast and not (_cast_type(cast) == column and _keeps_value(value, column)):
        return side
    return [_digits(value)]


def _digits(number: str) -> str:
    """A decimal without its trailing zeros (``0.30`` is ``0.3``, ``5.0`` is ``5``)."""
    return number.rstrip("0").rstrip(".") or "0" if "." in number else number


_NUMBERS = {"smallint": 2**15, "integer": 2**31, "bigint": 2**63, "numeric": None}
"""Column types whose numbers are loosened: the integer types with their bound, numeric."""
_SAFE = frozenset(
    {
        *_NUMBERS,
        "real",
        "double precision",
        "boolean",
        "date",
        "timestamp without time zone",
        "timestamp with time zone",
    }
)
"""Column types whose comparisons with each other or with a literal never raise (no
collation to conflict, no element operator looked up at run time)."""
_TEXT_TYPES = frozenset({"text", "character varying"})
"""Column types whose values are strings compared as text (``varchar`` has no operator of
its own); a column with a collation of its own is typed ``text COLLATE ...`` here."""
_SCALAR = _SAFE | _TEXT_TYPES
"""Column types whose ``IS NULL`` is the negation of their ``IS NOT NULL`` (not a row's)."""


def _keeps_value(number: str, kind: str) -> bool:
    """Whether casting the number to ``kind`` keeps its value (no rounding, no overflow)."""
    bound = _NUMBERS[kind]
    if bound is None:
        return True  # numeric without a modifier holds any number as written
    return "." not in number and int(number) < bound


def _column_type(side: Sequence[_Item], columns: Mapping[str, str]) -> str | None:
    """The type (modifiers dropped) of a side that is one column of the table, else None."""
    if len(side) != 1 or not isinstance(side[0], str) or not _NAME.fullmatch(side[0]):
        return None
    name = side[0][1:-1].replace('""', '"') if side[0].startswith('"') else side[0]
    column = columns.get(name)
    return None if column is None else " ".join(_MODIFIER.sub("", column).split())


def _cast_type(cast: Sequence[_Item]) -> str | None:
    """The type of ``::type words``, without a modifier or an array bracket; else None."""
    if len(cast) < 2 or cast[0] != "::":
        return None
    words = cast[1:]
    if not all(isinstance(w, str) and re.fullmatch(r"[a-z_][a-z0-9_]*", w) for w in words):
        return None
    return " ".join(str(w) for w in words)


def _plain(items: Sequence[_Item], columns: Mapping[str, str]) -> str:
    """The items as text, each bracketed part canonical inside, in its place."""
    out = []
    for item in items:
        if isinstance(item, str):
            out.append(item)
        elif item.bracket == "[" or "," in item.items:
            close = "]" if item.bracket == "[" else ")"
            pieces = (_node(p, columns).render() for p in _split(item.items, ","))
            out.append(item.bracket + ", ".join(pieces) + close)
        else:
            out.append("(" + _node(list(item.items), columns).render() + ")")
    return " ".join(out)


# One column's numbers: a decision procedure ------------------------------------------

_INTEGER_RANGE = {
    "smallint": (-(2**15), 2**15 - 1),
    "integer": (-(2**31), 2**31 - 1),
    "bigint": (-(2**63), 2**63 - 1),
}
"""The integer types and the values they hold."""
_NUMBER_TEXT = {
    "integer": re.compile(r"-?\d+"),
    "numeric": re.compile(r"-?\d+(\.\d+)?"),
}
"""A number as PostgreSQL prints a constant of an integer type or of numeric (no NaN,
no Infinity, no exponent: anything else is not read)."""


@dataclass(frozen=True)
class _Join:
    """AND or OR of parts."""

    word: str
    parts: tuple[_Formula, ...]


@dataclass(frozen=True)
class _Not:
    part: _Formula


_Constant = Fraction | str
"""A number's value, or a string constant as PostgreSQL prints it (one print per string)."""


@dataclass(frozen=True)
class _Compare:
    """The column, a built-in comparison operator, a constant."""

    op: str
    value: _Constant


@dataclass(frozen=True)
class _Distinct:
    """``IS DISTINCT FROM`` a constant: true where the column is NULL."""

    value: _Constant


@dataclass(frozen=True)
class _Among:
    """``= ANY`` (``equal``) or ``<> ALL`` of a list of constants."""

    values: frozenset[_Constant]
    equal: bool


@dataclass(frozen=True)
class _IsNull:
    """``IS NULL`` (``null``) or ``IS NOT NULL``."""

    null: bool


_Formula = _Join | _Not | _Compare | _Distinct | _Among | _IsNull
"""A check about one column's values."""


def _ranges(items: list[_Item], columns: Mapping[str, str]) -> _Decided | None:
    """A check on one column of numbers or of text, as the values it takes; else None.

    Numbers: where every comparison in it is of one column of an integer type or numeric
    (itself, or cast to a type that holds each of its values exactly) with a number
    computed exactly (a constant, or a cast of one that neither fails nor leaves
    PostgreSQL's rounding unknown), joined by AND, OR and NOT, with ``IS [NOT] NULL`` of
    the column, ``IS DISTINCT FROM`` a number and ``= ANY`` / ``<> ALL`` of a list of
    such numbers: nothing in it can raise, and its truth at each value is known exactly.
    The non-NULL values it takes are then a union of intervals (`_values`), of numeric's
    values or of the integers of the column's type; whether it passes NULL follows from
    three-valued logic. Both are written in one canonical form (`_written`), so two
    checks that take the same values get the same conjuncts.

    Text: the same, of one column of text or varchar under the database's collation
    (deterministic: two strings are equal only when their bytes are), compared only by
    ``=`` and ``<>`` with string constants (`_text_value`); its values are then a finite
    set of strings or all strings but a finite set (`_written_strings`).
    """
    for numbers, read in ((True, _NUMBERS_READ), (False, _TEXT_READ)):
        parsed = _formula(items, columns, read)
        if parsed is not None:
            return _Decided(parsed[0], numbers, parsed[1])
    return None


def _written_values(
    decided: _Decided, columns: Mapping[str, str], not_null: frozenset[str] = frozenset()
) -> list[str]:
    """The canonical conjuncts of the values a column takes (`_written`, `_written_strings`)."""
    name, formula = decided.column, decided.formula
    plain = name[1:-1].replace('""', '"') if name.startswith('"') else name
    values, passes_null = _values(formula), _passes_null(formula) or plain in not_null
    if not decided.numbers:
        return _written_strings(name, values, passes_null)
    bounds = _INTEGER_RANGE.get(str(_column_type([name], columns)))
    spans = _dense_spans(values) if bounds is None else _integer_spans(values, bounds)
    return _written(name, spans, passes_null, bounds)


@dataclass(frozen=True)
class _Reader:
    """How a check of one column is read: its column, its constants, its operators."""

    column: Callable[[Sequence[_Item], Mapping[str, str]], str | None]
    value: Callable[[Sequence[_Item]], _Constant | None]
    array: Callable[[_Item], list[list[_Item]] | None]
    operators: frozenset[str]


def _formula(
    items: list[_Item], columns: Mapping[str, str], read: _Reader
) -> tuple[str, _Formula] | None:
    """The check as a `_Formula` of one column's values, with that column; else None."""
    items = _unwrap(items)
    for word in _BOOL:
        parts = _split(items, word)
        if len(parts) > 1:
            if not all(parts) or any(w in items for w in _BOOL if w != word):
                return None
            found = [_formula(part, columns, read) for part in parts]
            names = {f[0] for f in found if f is not None}
            if None in found or len(names) != 1:
                return None
            return names.pop(), _Join(word, tuple(f[1] for f in found if f is not None))
    if items[:1] == ["NOT"]:
        inner = _formula(items[1:], columns, read) if len(items) > 1 else None
        return None if inner is None else (inner[0], _Not(inner[1]))
    if len(items) in (3, 4) and items[1] == "IS" and items[-1] == "NULL":
        if len(items) == 4 and items[2] != "NOT":
            return None
        name = read.column(items[:1], columns)
        return None if name is None else (name, _IsNull(len(items) == 3))
    if len(items) > 4 and items[1:4] == ["IS", "DISTINCT", "FROM"]:
        name, value = read.column(items[:1], columns), read.value(items[4:])
        return None if name is None or value is None else (name, _Distinct(value))
    listed = _listed(items, columns, read)
    return listed if listed is not None else _compared(items, columns, read)


def _listed(
    items: list[_Item], columns: Mapping[str, str], read: _Reader
) -> tuple[str, _Formula] | None:
    """``x = ANY (ARRAY[...])`` or ``x <> ALL (ARRAY[...])`` of constants; else None."""
    if len(items) < 4 or (items[-3], items[-2]) not in (("=", "ANY"), ("<>", "ALL")):
        return None
    name, elements = read.column(items[:-3], columns), read.array(items[-1])
    if name is None or not elements:
        return None
    values = [read.value(part) for part in elements]
    if any(v is None for v in values):
        return None
    return name, _Among(frozenset(v for v in values if v is not None), items[-3] == "=")


def _numbers_array(group: _Item) -> list[list[_Item]] | None:
    """The elements of ``(ARRAY[...])``; else None."""
    if not isinstance(group, _Group) or group.bracket != "(":
        return None
    array = group.items
    if len(array) != 2 or array[0] != "ARRAY" or not isinstance(array[1], _Group):
        return None
    return _split(array[1].items, ",") if array[1].bracket == "[" else None


def _compared(
    items: list[_Item], columns: Mapping[str, str], read: _Reader
) -> tuple[str, _Formula] | None:
    """A built-in comparison of the column with a constant, the column on the left; else None."""
    sides = _sides(items)
    if sides is None or sides[1] not in read.operators:
        return None
    left, op, right = sides
    name, value = read.column(left, columns), read.value(right)
    if name is None or value is None:
        name, value, op = read.column(right, columns), read.value(left), _MIRROR[op]
    if name is None or value is None:
        return None
    return name, _Compare(op, value)


def _number_column(side: Sequence[_Item], columns: Mapping[str, str]) -> str | None:
    """The column's name as printed, where the side is one of an integer type or numeric.

    The column itself, or cast to a type that holds each of its values exactly; else None.
    """
    if len(side) == 1:
        kind = _column_type(side, columns)
        return str(side[0]) if kind in _INTEGER_RANGE or kind == "numeric" else None
    if len(side) < 3 or not isinstance(side[0], _Group) or side[0].bracket != "(":
        return None
    inner = list(side[0].items)
    source, target = _column_type(inner, columns), _cast_type(side[1:])
    if source is None or target is None:
        return None
    if source in _INTEGER_RANGE and target in _INTEGER_RANGE:
        exact = _INTEGER_RANGE[target][1] >= _INTEGER_RANGE[source][1]
    else:
        exact = target == "numeric" and (source in _INTEGER_RANGE or source == "numeric")
    return str(inner[0]) if exact else None


def _value(items: Sequence[_Item]) -> Fraction | None:
    """A number PostgreSQL computes exactly and without error, as a fraction; else None.

    A constant (``5``, ``0.30``, ``'-1'::integer``), a bracketed one, or one cast to an
    integer type (rounded half away from zero, within the type's range) or to numeric
    (with a modifier: rounded half away from zero to its scale, within its precision).
    """
    if len(items) == 1:
        item = items[0]
        if isinstance(item, _Group):
            return _value(item.items) if item.bracket == "(" else None
        return Fraction(item) if _NUMBER_TEXT["numeric"].fullmatch(item) else None
    casts = [i for i, item in enumerate(items) if item == "::"]
    if not casts:
        return None
    base, target = items[: casts[-1]], items[casts[-1] :]
    modified = isinstance(target[-1], _Group)
    kind = _cast_type(target[:-1] if modified else target)
    modifier = _modifier(target[-1]) if modified else None
    if kind not in _INTEGER_RANGE and kind != "numeric":
        return None
    if len(base) == 1 and isinstance(base[0], str) and base[0].startswith("'"):
        text = base[0][1:-1]
        pattern = _NUMBER_TEXT["numeric" if kind == "numeric" else "integer"]
        value = Fraction(text) if pattern.fullmatch(text) else None
    else:
        value = _value(base)
    return None if value is None else _cast(value, str(kind), modifier)


def _modifier(group: _Item) -> tuple[int, int]:
    """A cast's modifier ``(p, s)`` as (p, s), ``(p)`` as (p, 0); (0, 0) where not read."""
    parts = _split(group.items, ",") if isinstance(group, _Group) else []
    numbers = [int(str(p[0])) for p in parts if len(p) == 1 and str(p[0]).isdigit()]
    if not 1 <= len(numbers) == len(parts) <= 2:
        return (0, 0)
    precision, scale = numbers[0], numbers[-1] if len(numbers) == 2 else 0
    return (precision, scale) if scale <= precision else (0, 0)


def _cast(value: Fraction, kind: str, modifier: tuple[int, int] | None) -> Fraction | None:
    """``value`` cast to ``kind``: None where that fails or is not computed here."""
    if kind in _INTEGER_RANGE:
        low, high = _INTEGER_RANGE[kind]
        rounded = _rounded(value, 0)
        return rounded if modifier is None and low <= rounded <= high else None
    if modifier is None:
        return value
    precision, scale = modifier
    if precision < 1:
        return None
    rounded = _rounded(value, scale)
    return rounded if abs(rounded) < Fraction(10) ** (precision - scale) else None


def _rounded(value: Fraction, scale: int) -> Fraction:
    """``value`` to ``scale`` decimals, half away from zero (PostgreSQL's numeric round)."""
    shifted = abs(value) * 10**scale
    whole = (shifted.numerator * 2 + shifted.denominator) // (2 * shifted.denominator)
    return Fraction(whole if value >= 0 else -whole, 10**scale)


_Cut = tuple[int, _Constant, int]
"""A place between values: (0, _, _) below all, (2, _, _) above all (NaN and the
infinities of numeric are there, beyond every number), (1, v, 0) just below the
constant v and (1, v, 1) just above it. Cuts sort in the order of the places (strings
in the order of their prints: only their equality means anything)."""
_LOW: _Cut = (0, Fraction(0), 0)
_HIGH: _Cut = (2, Fraction(0), 0)
_Values = list[tuple[_Cut, _Cut]]
"""The values between each pair of cuts: disjoint, in order, none empty, none touching."""


def _values(formula: _Formula) -> _Values:
    """The non-NULL values the formula is true at.

    There no comparison is NULL: two-valued logic, so NOT is the complement, AND the
    intersection, OR the union. Each part is a few intervals, combined by one sort per
    AND or OR: about n log n for n numbers, however they are nested (`MAX_DEPTH` bounds
    the nesting).
    """
    match formula:
        case _Compare(op=op, value=value):
            return _compared_values(op, value)
        case _Distinct(value=value):
            return _compared_values("<>", value)
        case _Among(values=values, equal=equal):
            points = _union([[((1, v, 0), (1, v, 1))] for v in values])
            return points if equal else _complement(points)
        case _IsNull(null=null):
            return [] if null else [(_LOW, _HIGH)]
        case _Not(part=part):
            return _complement(_values(part))
        case _Join(word="OR", parts=parts):
            return _union([_values(part) for part in parts])
        case _Join(parts=parts):
            return _complement(_union([_complement(_values(part)) for part in parts]))
    raise AssertionError(formula)  # pragma: no cover - every kind is matched above


def _compared_values(op: str, value: _Constant) -> _Values:
    below: _Cut = (1, value, 0)
    above: _Cut = (1, value, 1)
    return {
        "<": [(_LOW, below)],
        "<=": [(_LOW, above)],
        ">": [(above, _HIGH)],
        ">=": [(below, _HIGH)],
        "=": [(below, above)],
        "<>": [(_LOW, below), (above, _HIGH)],
    }[op]


def _union(parts: list[_Values]) -> _Values:
    out: _Values = []
    for start, end in sorted(span for part in parts for span in part):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def _complement(values: _Values) -> _Values:
    out: _Values = []
    at = _LOW
    for start, end in values:
        if at < start:
            out.append((at, start))
        at = end
    return [*out, (at, _HIGH)] if at < _HIGH else out


def _passes_null(formula: _Formula) -> bool:
    """Whether the formula is true or NULL where the column is NULL (three-valued logic)."""

    def truth(f: _Formula) -> bool | None:
        match f:
            case _IsNull(null=null):
                return null
            case _Distinct():
                return True
            case _Not(part=part):
                inner = truth(part)
                return None if inner is None else not inner
            case _Join(word=word, parts=parts):
                truths = [truth(part) for part in parts]
                decided = word == "OR"  # OR is true with one true part, AND false with one false
                if decided in truths:
                    return decided
                return None if None in truths else not decided
        return None  # a comparison with NULL, a list's too

    return truth(formula) is not False


_Span = tuple[Fraction | None, bool, Fraction | None, bool]
"""An interval of values taken: low, low taken, high, high taken (None: no bound)."""


def _dense_spans(values: _Values) -> list[_Span]:
    """The intervals of numeric values taken.

    Numeric is dense here: between two numbers some value is, so equal sets of fractions
    are equal sets of any column's values.
    """
    return [
        (
            None if start == _LOW else _number(start),
            start[2] == 0,
            None if end == _HIGH else _number(end),
            end[2] == 1,
        )
        for start, end in values
    ]


def _number(cut: _Cut) -> Fraction:
    """The number at a cut of a check of numbers (`_NUMBERS_READ` reads only numbers)."""
    value = cut[1]
    assert isinstance(value, Fraction)  # noqa: S101 - _value makes only fractions
    return value


def _integer_spans(values: _Values, bounds: tuple[int, int]) -> list[_Span]:
    """The maximal closed ranges of integers within ``bounds`` taken."""
    low, high = bounds
    ranges: list[tuple[int, int]] = []
    for start, end in values:
        first = low if start == _LOW else max(low, _first_integer(start))
        last = high if end == _HIGH else min(high, _last_integer(end))
        if first > last:
            continue
        if ranges and ranges[-1][1] + 1 >= first:
            ranges[-1] = (ranges[-1][0], max(ranges[-1][1], last))
        else:
            ranges.append((first, last))
    return [
        (None if a == low else Fraction(a), True, None if b == high else Fraction(b), True)
        for a, b in ranges
    ]


def _first_integer(cut: _Cut) -> int:
    """The least integer above a cut."""
    value, side = _number(cut), cut[2]
    return int(value) + side if value.denominator == 1 else math.ceil(value)


def _last_integer(cut: _Cut) -> int:
    """The greatest integer below a cut."""
    value, side = _number(cut), cut[2]
    return int(value) - 1 + side if value.denominator == 1 else math.floor(value)


def _written(
    name: str, spans: list[_Span], passes_null: bool, bounds: tuple[int, int] | None
) -> list[str]:
    """The canonical conjuncts of a set of values (one set, one writing).

    NULL refused, the lowest and the highest bound, and each gap between two intervals.
    """
    out = [] if passes_null else [f"{name} IS NOT NULL"]
    if not spans:
        return [*out, f"{name} IS NULL"]
    first, last = spans[0], spans[-1]
    if first[0] is not None:
        out.append(f"{name} {'>=' if first[1] else '>'} {_decimal(first[0])}")
    if last[2] is not None:
        out.append(f"{name} {'<=' if last[3] else '<'} {_decimal(last[2])}")
    for before, after in zip(spans, spans[1:], strict=False):
        gap_low, gap_high = before[2], after[0]
        assert gap_low is not None and gap_high is not None  # noqa: S101 - between spans
        if bounds is not None:  # integers: the gap's own first and last
            gap_low, gap_high = gap_low + 1, gap_high - 1
            low_in = high_in = True
        else:
            low_in, high_in = not before[3], not after[1]
        if gap_low == gap_high:
            out.append(f"{name} <> {_decimal(gap_low)}")
        else:
            above = f"{name} {'>=' if low_in else '>'} {_decimal(gap_low)}"
            below = f"{name} {'<=' if high_in else '<'} {_decimal(gap_high)}"
            out.append(f"NOT ({above} AND {below})")
    return out


def _decimal(value: Fraction) -> str:
    """A decimal fraction as its shortest text (``0.3``, ``-5``, ``1000``), exactly."""
    places = 0
    while (value * 10**places).denominator != 1:
        places += 1
    digits = str(abs(value * 10**places).numerator).rjust(places + 1, "0")
    text = digits[: len(digits) - places] + ("." + digits[-places:] if places else "")
    return ("-" if value < 0 else "") + text


_NUMBERS_READ = _Reader(_number_column, _value, _numbers_array, frozenset(_MIRROR))
"""A check of one column's numbers: every built-in comparison."""


# One column's strings ----------------------------------------------------------------

_STRING = re.compile(r"E?'(?:[^']|'')*'")


def _text_column(side: Sequence[_Item], columns: Mapping[str, str]) -> str | None:
    """The column's name where the side is one of text or varchar, or one cast to text.

    Only under the database's collation, which is deterministic: equal strings are equal
    bytes, so each string constant's print stands for one value.
    """
    if len(side) == 1:
        return str(side[0]) if _column_type(side, columns) in _TEXT_TYPES else None
    if len(side) != 3 or not isinstance(side[0], _Group) or side[0].bracket != "(":
        return None
    inner = list(side[0].items)
    if _column_type(inner, columns) not in _TEXT_TYPES or _cast_type(side[1:]) != "text":
        return None
    return str(inner[0])


def _text_value(items: Sequence[_Item]) -> str | None:
    """A string constant typed text or varchar, as printed (``'a'::text``); else None."""
    if len(items) < 3 or not isinstance(items[0], str) or not _STRING.fullmatch(items[0]):
        return None
    return items[0] if _cast_type(items[1:]) in _TEXT_TYPES else None


def _text_array(group: _Item) -> list[list[_Item]] | None:
    """The elements of ``(ARRAY[...])`` or of ``((ARRAY[...])::text[])``; else None."""
    if isinstance(group, _Group) and group.bracket == "(" and len(group.items) == 4:
        array, cast, kind, brackets = group.items
        typed = cast == "::" and kind == "text" and brackets == _Group("[", ())
        return _numbers_array(array) if typed else None
    return _numbers_array(group)


_TEXT_READ = _Reader(_text_column, _text_value, _text_array, frozenset({"=", "<>"}))
"""A check of one column's strings: equality alone (an order would be the collation's)."""


def _written_strings(name: str, values: _Values, passes_null: bool) -> list[str]:
    """The canonical conjuncts of a set of strings, finite or all but finitely many.

    NULL refused; then the strings taken (``x = 'a'``, ``x = ANY (ARRAY['a', 'b'])``,
    sorted), or each string not taken (``x <> 'a'``). ``=`` and ``<>`` make no other
    set: finite and cofinite sets are closed under AND, OR and NOT.
    """
    out = [] if passes_null else [f"{name} IS NOT NULL"]
    taken, left = _points(values), _points(_complement(values))
    if taken is not None:
        if not taken:
            return [*out, f"{name} IS NULL"]
        if len(taken) == 1:
            return [*out, f"{name} = {taken[0]}"]
        return [*out, f"{name} = ANY (ARRAY[{', '.join(taken)}])"]
    assert left is not None  # noqa: S101 - closed under AND, OR and NOT
    return [*out, *(f"{name} <> {value}" for value in left)]


def _points(values: _Values) -> list[str] | None:
    """The strings of a set made of single values, in order; None if it holds more."""
    out = []
    for start, end in values:
        if start[0] != 1 or end != (1, start[1], 1) or start[2] != 0:
            return None
        out.append(str(start[1]))
    return out
