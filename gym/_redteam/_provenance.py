"""Fail-to-infra rows of code grading: the code under test tries to become our fault.

An ``infra_error`` is excluded from every rate and gives no training signal, so a code
that cannot pass has one more thing to try: make its grading look broken. Each row
here attacks one path by which the grader reads or keeps what the judged process
produced (every parse of its answers, every resource it shares with the grader, every
control request it answers), and holds only when the episode ends ``fail``: a fault
the code caused is the code's, never ours (docs/security.md, "Provenance").

The hostile module binds the task's entry function, and answers any other name through
its module ``__getattr__``, so the same row runs in every code environment (``calls``
and ``pytest`` grading); values and names are drawn per run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gym._core._models import Task
from gym._core._tools import ToolCall
from gym._redteam._containment import TASKS
from gym._redteam._core import Names, register
from gym._redteam._episode import Expect, ScriptAttack, write

__all__: list[str] = []

CODE = ("boxgym/PyFunc-v0", "boxgym/HumanEval-v0", "boxgym/PyRepo-v0")
FAIL = Expect()

_MODULE = '''"""A hostile module: it answers nothing right and tries to look like a grader fault."""
import os
import sys


def {fn}(*args, **kwargs):
{at_call}


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return {fn}


{entry} = {fn}
{at_import}
'''


def _module_path(task: Task) -> str:
    grading = task.data.get("grading", {})
    if grading.get("kind", "pytest") == "calls":
        return str(grading.get("module", "solution.py"))
    return "wordstats/core.py" if task.id == "wordstats-top-n" else "solution.py"


def _indent(code: str) -> str:
    return "\n".join("    " + line for line in code.splitlines()) or "    pass"


Action = Callable[[Names], str]


def _hostile(
    at_import: Action | None = None, at_call: Action | None = None, path: str | None = None
) -> Any:
    def script(names: Names, task: Task, env: Any) -> list[ToolCall]:
        entry = str(task.data.get("grading", {}).get("entry") or names.ident())
        source = _MODULE.format(
            fn=names.ident(),
            entry=entry,
            at_call=_indent(at_call(names) if at_call else "return None"),
            at_import=at_import(names) if at_import else "",
        )
        return [write(path or _module_path(task), source)]

    return script


def _surrogates(names: Names) -> str:
    """Python source of a str with lone surrogates (the file itself stays ASCII)."""
    chars = "".join(f"\\ud{names.rng.randrange(0x800, 0xFFF):03x}" for _ in range(5))
    return f'"{names.ident()} {chars}"'


def _raise_surrogates(names: Names) -> str:
    cls = names.ident()
    return (
        f"{cls} = type({names.ident()!r}, (Exception,), {{}})\n"
        f"raise {cls}({_surrogates(names)} * {names.rng.randrange(50, 500)})"
    )


def _print_surrogates(names: Names) -> str:
    text = _surrogates(names)
    return f"print({text} * 2000)\nprint({text}, file=sys.stderr)\nreturn {text}"


def _ping_raises(names: Names) -> str:
    return (
        "worker = sys.modules.get('boxgym_worker')\n"
        "def _refuse(*a, **k):\n"
        f"    raise ValueError({_surrogates(names)})\n"
        "if worker is not None:\n"
        "    for op in ('ping', 'plain', 'getattr'):\n"
        "        worker.OPS[op] = _refuse"
    )


def _huge_answer(names: Names) -> str:
    mib = names.rng.randrange(40, 64)
    return f"return {names.ident()!r} * ({mib} << 20)"


def _raw_flood(names: Names) -> str:
    """Write one line of millions of tiny items straight to the judge's channel."""
    n = names.rng.randrange(20_000_000, 22_000_000)
    head = '{"a": 1, "ok": {"t": "list", "v": ['
    return (
        f"line = {head!r} + '{{}},' * {n} + '{{}}]}}}}\\n'\n"
        "data = line.encode()\n"
        "for fd in range(3, 64):\n"
        "    try:\n"
        "        os.set_blocking(fd, True)\n"
        "        view = memoryview(data)\n"
        "        while view:\n"
        "            view = view[os.write(fd, view):]\n"
        "    except OSError:\n"
        "        pass\n"
        "return None"
    )


def _output_cap_lifted(names: Names) -> str:
    """Lift its own process's output cap and answer with an int subclass.

    About 8 MB of output then rides with every answer, and each check costs two
    answers (the call, then the int's plain value).
    """
    cls = names.ident()
    return (
        "chunk = chr(122) * 3_900_000\n"
        "for stream in (sys.stdout, sys.stderr):\n"
        "    try:\n"
        "        stream.take = lambda: chunk\n"
        "    except Exception:\n"
        "        pass\n"
        f"class {cls}(int):\n"
        "    pass\n"
        f"return {cls}(0)"
    )


def _take_tmp(names: Names) -> str:
    """Take every name under /tmp it can guess, fill /tmp, then end the process."""
    return (
        "home = os.environ.get('HOME', '')\n"
        "base = os.path.dirname(home) or '/tmp'\n"
        "stem = os.path.basename(home).rstrip('0123456789')\n"
        "for i in range(200):\n"
        "    for name in (stem + str(i), f'boxgym-home-{i}', f'boxgym-checker-{i}'):\n"
        "        try:\n"
        "            os.mkdir(os.path.join(base, name), 0o700)\n"
        "        except OSError:\n"
        "            pass\n"
        f"with open(os.path.join(base, {names.ident()!r}), 'wb') as fh:\n"
        "    try:\n"
        "        while True:\n"
        "            fh.write(b'x' * (1 << 20))\n"
        "    except OSError:\n"
        "        pass\n"
        "os._exit(0)"
    )


def _row(name: str, script: Any, note: str) -> ScriptAttack:
    return ScriptAttack(name=name, envs=CODE, tasks=TASKS, script=script, expect=FAIL, note=note)


register(
    ScriptAttack(
        name="provenance.output_cap_lifted_across_tests",
        envs=("boxgym/PyRepo-v0",),
        tasks={"*": "calc-precedence"},  # forty-odd hidden tests: 700 MB of output kept
        script=_hostile(at_call=_output_cap_lifted, path="arith/evaluate.py"),
        expect=FAIL,
        note="every answer with about 8 MB of output, which pytest keeps for the whole session",
    ),
    _row(
        "provenance.import_error_with_lone_surrogates",
        _hostile(at_import=_raise_surrogates),
        "an exception at import whose message holds lone surrogates",
    ),
    _row(
        "provenance.printed_lone_surrogates",
        _hostile(at_call=_print_surrogates),
        "output and an answer holding lone surrogates",
    ),
    _row(
        "provenance.control_requests_refused",
        _hostile(at_import=_ping_raises, at_call=lambda names: "return 0"),
        "the worker answers the judge's liveness ping (and projections) with an exception",
    ),
    _row(
        "provenance.answer_over_the_size_limit",
        _hostile(at_call=_huge_answer),
        "one answer of tens of MiB",
    ),
    _row(
        "provenance.channel_flooded_with_tiny_items",
        _hostile(at_call=_raw_flood),
        "millions of tiny JSON items written straight to the judge's channel",
    ),
    _row(
        "provenance.shared_tmp_taken_and_filled",
        _hostile(at_call=_take_tmp),
        "every guessable name in /tmp taken, /tmp filled, then the process ends",
    ),
)
