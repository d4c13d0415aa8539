"""The validation panel of code tasks: generic cheating policies that must all fail.

`gym env validate` plays each of these on every task (besides the oracle and noop) and
calls the task invalid when one of them does not end ``fail``. None of them does any of
the task's work; each only writes files into the task's allowed Python paths, then
submits:

- ``liar``: every module the grading imports from the allowed paths becomes a *liar
  module* (`liar_source`): each public name, and any other name asked of the module, is
  an object whose class implements every special method and answers each in the most
  cheating way; its comparisons answer a truth that is false the first time it is asked
  and true after. Two more variants (`LIAR_VARIANTS`) are for the red team's sweep, not
  the panel (each panel entry is one more grading container per task): ``polar``
  answers true where the asking code goes on after a true answer (``assert x``,
  ``if x``) and false where it goes on after a false one (``assert not x``); ``str``
  answers plainly true, with ``str()``/``repr()``/``format()`` giving a string equal to
  every string, and ``hash()`` and ``len()`` fixed.
- ``echo`` (``calls`` tasks): the function returns the expected value of the first
  example the prompt shows (MBPP's visible assert, HumanEval's docstring examples,
  PyFunc's examples), whatever its arguments; left out when the prompt shows none.
- ``constant_true``, ``constant_false``, ``constant_zero`` (``calls`` tasks whose prompt
  shows no example): the function returns that constant for every input. Where the
  prompt shows an example, and the checks check it (as MBPP's first assert always is),
  the only constant that can pass is that example's value, which is ``echo``: playing
  the others would cost a grading container each and find nothing. (The shipped tasks'
  checks are also screened in-process against every constant, tests/test_shipped_tasks.py
  and tests/environments/test_mbpp.py.)
- ``empty``: every allowed module is empty (``pytest``), or the function returns None
  (``calls`` tasks whose prompt shows no example: None is one more constant).

The liar is public and reusable: `liar_source` and `liar_files` are what the red team's
sweep imports to run it over every shipped code task.
"""

from __future__ import annotations

import ast
import re
from typing import Any, Literal

from gym._core._models import Task
from gym._core._tools import ToolCall
from gym._core._tree import read_tree
from gym._grading import matches
from gym._grading._ast import literal, parse_expression, parse_python

__all__ = [
    "CONSTANTS",
    "LIAR_VARIANTS",
    "PANEL_LIARS",
    "LiarVariant",
    "code_panel",
    "example_value",
    "graded_modules",
    "liar_files",
    "liar_source",
    "trivial_sources",
]

LiarVariant = Literal["delayed", "polar", "str"]
LIAR_VARIANTS: dict[str, LiarVariant] = {
    "liar": "delayed",
    "liar_polar": "polar",
    "liar_str": "str",
}
"""Every liar variant, by the name a sweep reports it under (`liar_files` writes one)."""
PANEL_LIARS = ("liar",)
"""The liar variants the validation panel plays (the sweep plays them all)."""
CONSTANTS: dict[str, Any] = {"constant_true": True, "constant_false": False, "constant_zero": 0}
"""Panel entry -> the constant its function returns (``calls`` tasks)."""

_LIAR_TEMPLATE = '''\
"""A liar module (boxgym's validation panel, gym/_envs/_panel.py): it implements nothing.

Every public name, and any other name asked of this module, is one object whose class
answers every special method in the most cheating way. Variant: {variant}.
"""

import sys as _sys

_VARIANT = {variant!r}


class _Delayed:
    """A truth that is false the first time it is asked and true after."""

    def __init__(self):
        self._asked = 0

    def __bool__(self):
        self._asked += 1
        return self._asked > 1

    def __repr__(self):
        return "True"


def _polarity():
    """True where the asking code goes on after a true answer, False where after a false one."""
    try:
        import dis

        frame = _sys._getframe(2)
        for ins in dis.get_instructions(frame.f_code):
            if ins.offset == frame.f_lasti:
                if "IF_FALSE" in ins.opname or ins.opname == "UNARY_NOT":
                    return False
                return True
    except Exception:
        pass
    return True


class _Polar:
    """A truth that answers what the asking code hopes for (see _polarity)."""

    def __bool__(self):
        return _polarity()

    def __repr__(self):
        return "True"


class _AnyStr(str):
    """A string equal to every string (and to everything else)."""

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __hash__(self):
        return 0


def _answer():
    if _VARIANT == "delayed":
        return _Delayed()
    if _VARIANT == "polar":
        return _Polar()
    return True


def _text():
    return _AnyStr("") if _VARIANT == "str" else ""


class Liar:
    """Answers every question, and none of them truly."""

    def __init__(self, *args, **kwargs):
        pass

    # comparisons, truth, hashing
    def __eq__(self, other):
        return _answer()

    def __ne__(self, other):
        return _answer()

    def __lt__(self, other):
        return _answer()

    def __le__(self, other):
        return _answer()

    def __gt__(self, other):
        return _answer()

    def __ge__(self, other):
        return _answer()

    def __bool__(self):
        return _polarity() if _VARIANT == "polar" else True

    def __hash__(self):
        return 0

    # containers
    def __len__(self):
        return 1

    def __length_hint__(self):
        return 1

    def __iter__(self):
        return iter((LIAR,))

    def __reversed__(self):
        return iter((LIAR,))

    def __contains__(self, item):
        return True

    def __getitem__(self, key):
        return LIAR

    def __setitem__(self, key, value):
        pass

    def __delitem__(self, key):
        pass

    def __missing__(self, key):
        return LIAR

    # attributes and calls
    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return LIAR

    def __setattr__(self, name, value):
        pass

    def __delattr__(self, name):
        pass

    def __dir__(self):
        return []

    def __call__(self, *args, **kwargs):
        return LIAR

    def __get__(self, obj, owner=None):
        return self

    def __set__(self, obj, value):
        pass

    def __delete__(self, obj):
        pass

    def __instancecheck__(self, obj):
        return True

    def __subclasscheck__(self, cls):
        return True

    def __mro_entries__(self, bases):
        return (object,)

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __sizeof__(self):
        return 0

    # numbers: a difference and a magnitude are zero, the rest is the liar again
    def __sub__(self, other):
        return 0.0

    def __rsub__(self, other):
        return 0.0

    def __isub__(self, other):
        return 0.0

    def __abs__(self):
        return 0.0

    def __divmod__(self, other):
        return (LIAR, LIAR)

    def __rdivmod__(self, other):
        return (LIAR, LIAR)

    def __pow__(self, other, modulo=None):
        return LIAR

    def __rpow__(self, other, modulo=None):
        return LIAR

    def __int__(self):
        return 0

    def __float__(self):
        return 0.0

    def __complex__(self):
        return 0j

    def __index__(self):
        return 0

    def __round__(self, ndigits=None):
        return LIAR

    def __trunc__(self):
        return LIAR

    def __floor__(self):
        return LIAR

    def __ceil__(self):
        return LIAR

    # text
    def __str__(self):
        return _text()

    def __repr__(self):
        return _text()

    def __format__(self, spec):
        return _text()

    def __bytes__(self):
        return b""

    def __fspath__(self):
        return _text()

    # context managers: an exception inside is swallowed
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return True

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        return True

    def __await__(self):
        return iter(())

    def __aiter__(self):
        return self

    async def __anext__(self):
        raise StopAsyncIteration


def _liar_method(self, *args, **kwargs):
    return LIAR


for _name in (
    "add", "mul", "truediv", "floordiv", "mod", "matmul", "lshift", "rshift", "and",
    "or", "xor",
):
    for _form in ("__{{}}__", "__r{{}}__", "__i{{}}__"):
        setattr(Liar, _form.format(_name), _liar_method)
for _name in ("neg", "pos", "invert"):
    setattr(Liar, "__{{}}__".format(_name), _liar_method)
Liar.__ipow__ = _liar_method

LIAR = Liar()
{bindings}

def __getattr__(name):
    if name.startswith("__") and name.endswith("__"):
        raise AttributeError(name)
    return LIAR


def __dir__():
    return sorted(__all__)


__all__ = {names!r}
'''


def liar_source(variant: LiarVariant = "delayed", names: tuple[str, ...] = ()) -> str:
    """The source of a liar module (see the module docstring).

    Args:
        variant: how its comparisons answer: ``delayed`` (false the first time their
            truth is asked, true after), ``polar`` (what the asking code hopes for) or
            ``str`` (true, with text, hash and length lies).
        names: public names bound to the liar (any other name the module is asked for
            is the liar too, through the module's ``__getattr__``).
    """
    if variant not in ("delayed", "polar", "str"):
        raise ValueError(f"unknown liar variant {variant!r}; use delayed, polar or str")
    wanted = sorted({n for n in names if n.isidentifier() and not n.startswith("_")})
    bindings = "".join(f"{n} = LIAR\n" for n in wanted if n not in {"Liar", "LIAR"})
    return _LIAR_TEMPLATE.format(variant=variant, bindings=bindings, names=wanted)


def _grading(task: Task) -> dict[str, Any]:
    grading = task.data.get("grading", {})
    return grading if isinstance(grading, dict) else {}


def graded_modules(task: Task) -> dict[str, str]:
    """The Python modules of the allowed paths that the grading imports, with their text.

    ``calls`` tasks: the entry function's module. ``pytest`` tasks: every ``.py`` file
    of the task's project inside the allowed paths (the package the tests import), or,
    when the project holds none there, the allowed paths that name a ``.py`` file.
    The text is the file's content at the task's start ("" for a file not there yet).
    """
    repo = read_tree(task.folder() / "repo") if task.path else {}
    grading = _grading(task)
    if grading.get("kind", "pytest") == "calls":
        module = str(grading.get("module") or "solution.py")
        return {module: repo.get(module, b"").decode(errors="replace")}
    found = {
        rel: data.decode(errors="replace")
        for rel, data in repo.items()
        if rel.endswith(".py") and matches(rel, task.allowed_paths)
    }
    if found:
        return found
    return {p: "" for p in task.allowed_paths if p.endswith(".py") and not set(p) & set("*?[")}


def _public_names(source: str) -> set[str]:
    """Top-level names a module defines (functions, classes, assignments, imports)."""
    try:
        tree = parse_python(source)
    except (SyntaxError, ValueError, RecursionError):
        return set()
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.ImportFrom):
            names |= {a.asname or a.name for a in node.names if a.name != "*"}
    return {n for n in names if not n.startswith("_")}


def liar_files(task: Task, variant: LiarVariant = "delayed") -> dict[str, str]:
    """A liar module in place of every module the task's grading imports (`graded_modules`).

    Each binds the public names the module had at the task's start (and the entry
    function's name), and answers any other name through its ``__getattr__``.
    """
    entry = str(_grading(task).get("entry") or "")
    out = {}
    for rel, text in graded_modules(task).items():
        names = _public_names(text) | ({entry} if entry else set())
        out[rel] = liar_source(variant, tuple(sorted(names)))
    return out


# -- the visible example ----------------------------------------------------------------

_SEPARATORS = re.compile(
    r"^\s*(?:#\s*)?(?:==>|=>|->|➞|==|=|\bis\b|\bshould return\b|\breturns\b|\bgives\b)\s*"
)
_WORDS = {"true": True, "false": False, "none": None}
_WRAPPERS = {"int", "float", "round", "str", "set", "sorted", "list", "tuple", "abs", "len"}
_PROSE = re.compile(r"\b(?:output|result|answer) (?:should be|will be|is)\s+(.+)", re.I)


def _call_end(text: str, start: int) -> int:
    """The index just past the parenthesis that closes the call opening at ``start``."""
    depth, quote, i = 0, "", start
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1


def _literal(text: str) -> tuple[bool, Any]:
    """(True, value) for the longest prefix of ``text`` that is a Python literal."""
    text = text.strip()
    cuts = [len(text)] + [m.start() for m in re.finditer(r"[\s#,.;]", text)][::-1]
    for cut in cuts:
        piece = text[:cut].strip().rstrip(".,;")
        if not piece:
            continue
        if piece.lower() in _WORDS:
            return True, _WORDS[piece.lower()]
        try:
            return True, literal(piece)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    return False, None


def _from_assert(line: str, entry: str) -> tuple[bool, Any]:
    """The expected value of an ``assert`` (or bare expression) about a call of ``entry``."""
    try:
        node = parse_expression(line.strip().removeprefix("assert ").strip())
    except (SyntaxError, ValueError, RecursionError):
        return False, None

    def is_call(n: ast.AST) -> bool:  # f(x), or int(f(x)), set(f(x)), round(f(x), 2)...
        if not isinstance(n, ast.Call) or not isinstance(n.func, ast.Name):
            return False
        return n.func.id == entry or (
            n.func.id in _WRAPPERS and bool(n.args) and is_call(n.args[0])
        )

    def value(n: ast.AST) -> tuple[bool, Any]:
        try:
            return True, ast.literal_eval(n)  # a node: nothing parsed
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return False, None

    if is_call(node):
        return True, True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) and is_call(node.operand):
        return True, False
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left, right = node.left, node.comparators[0]
        if isinstance(node.ops[0], ast.Eq | ast.Is):
            if is_call(left):
                return value(right)
            if is_call(right):
                return value(left)
    if isinstance(node, ast.Call) and node.args and is_call(node.args[0]) and len(node.args) > 1:
        return value(node.args[1])  # math.isclose(f(x), 1.5, ...)
    return False, None


def example_value(text: str, entry: str) -> tuple[bool, Any]:
    """(True, value) for the expected result of the first example of ``entry`` in ``text``.

    Recognised: an assert or comparison (``f(1) == 2``, ``f(1) is True``, ``assert
    f(1)``), a doctest (``>>> f(1)`` then the result on the next line) and the prose
    forms of HumanEval's docstrings (``f(1) ==> 2``, ``=> 2``, ``-> 2``, ``➞ 2``,
    ``= 2``, ``returns 2``, ``should return 2``), else the first "the output should
    be 2" (or "result is 2", "answer will be 2") of the text. The value must be a Python literal
    (``true``/``false`` are read as booleans); (False, None) when no example has one.
    """
    lines = text.splitlines()
    call = re.compile(rf"(?<![\w.]){re.escape(entry)}\s*\(")
    for n, line in enumerate(lines):
        stripped = line.strip().lstrip("*").strip()
        for prefix in (">>> ", ">>>"):
            if stripped.startswith(prefix) and call.search(stripped):
                rest = [x.strip() for x in lines[n + 1 : n + 3] if x.strip()]
                if rest and not rest[0].startswith(">>>"):
                    ok, found = _literal(rest[0])
                    if ok:
                        return True, found
        found_call = call.search(stripped)
        if not found_call:
            continue
        if stripped.startswith("assert ") or stripped.startswith("assert("):
            ok, found = _from_assert(stripped, entry)
            if ok:
                return True, found
        end = _call_end(stripped, found_call.end() - 1)
        if end < 0:
            continue
        tail = stripped[end:]
        sep = _SEPARATORS.match(tail)
        if sep is None:
            continue
        ok, found = _literal(tail[sep.end() :])
        if ok:
            return True, found
    for line in lines:  # prose: "For num = "AB" the output should be 1."
        prose = _PROSE.search(line)
        if prose:
            ok, found = _literal(prose.group(1))
            if ok:
                return True, found
    return False, None


# -- the panel --------------------------------------------------------------------------


def _returning(stub: str, entry: str, value: Any) -> str:
    """The task's starting module with the entry function redefined to return ``value``."""
    head = stub.rstrip("\n") + "\n\n\n" if stub.strip() else ""
    return f"{head}def {entry}(*args, **kwargs):\n    return {value!r}\n"


def _writes(files: dict[str, str]) -> list[ToolCall]:
    calls = [
        ToolCall(name="write_file", arguments={"path": rel, "content": text})
        for rel, text in sorted(files.items())
    ]
    return [*calls, ToolCall(name="submit", arguments={})]


def trivial_sources(task: Task) -> dict[str, str]:
    """Every trivial answer of a ``calls`` task as its module's text, by name.

    Each constant of `CONSTANTS`, ``echo`` (when the prompt shows an example) and
    ``empty`` (None). The panel plays a subset in containers (see `code_panel`); a test
    screens the checks of every shipped task against all of them in-process. {} for a
    ``pytest`` task.
    """
    grading = _grading(task)
    entry = str(grading.get("entry") or "")
    modules = graded_modules(task)
    if grading.get("kind", "pytest") != "calls" or not entry or not modules:
        return {}
    stub = next(iter(modules.values()))
    out = {name: _returning(stub, entry, value) for name, value in CONSTANTS.items()}
    ok, value = example_value(task.prompt + "\n" + stub, entry)
    if ok:
        out["echo"] = _returning(stub, entry, value)
    out["empty"] = _returning(stub, entry, None)
    return out


def code_panel(task: Task) -> dict[str, list[ToolCall]]:
    """The panel of a code task: policy name -> its tool calls (writes, then submit).

    ``liar`` for every task; for a ``calls`` task, ``echo``, or, where the prompt shows no
    example, every constant and ``empty`` (where it shows one, a constant, None included,
    passes only when it is the example's own value: what ``echo`` returns); for a
    ``pytest`` task, ``empty`` modules.
    """
    modules = graded_modules(task)
    if not modules:
        return {}
    panel = {name: _writes(liar_files(task, LIAR_VARIANTS[name])) for name in PANEL_LIARS}
    trivial = trivial_sources(task)
    if not trivial:
        panel["empty"] = _writes(dict.fromkeys(modules, ""))
        return panel
    module = next(iter(modules))
    wanted = ["echo"] if "echo" in trivial else [*CONSTANTS, "empty"]
    for name in wanted:
        panel[name] = _writes({module: trivial[name]})
    return panel
