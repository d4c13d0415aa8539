"""Attacks on the tool-API family, through the task's typed tools and ``submit`` only.

The agent has no shell: each call is a request to the backend service in its container,
and only the task's tools may be called. Two invariants, each checked by a class row over
every task of ToolAPI-v0 and over a fixed sample of BFCL's (names and values drawn per
run):

- ``toolapi.undeclared_calls[...]``: nothing but the task's tools runs. Calls of the
  backend's other public methods (of the task's classes and the others), of ``_``-prefixed
  and dunder names, of the service's own requests (``load``, ``checkpoint``, ``call``), of
  names that only look like a tool, and of a tool with arguments it does not declare are
  refused, at the host or by the service: the first user turn's checkpoint shows that no
  method ran (its results are the service's refusals, if any), and the episode fails.
- ``toolapi.fail_to_infra[...]``: whatever the calls do to the service, the episode is
  the agent's: arguments of the wrong JSON type for every tool, odd text, extreme numbers,
  strings as large as a call may hold, a computation that outlasts the call's time limit
  (BFCL's ``power``). It must end ``fail``: never ``infra_error``, never ``pass``.

And ``toolapi.integral_floats[BFCL-MultiTurn-v0]``: the oracle's work with every integer
argument written as an integral float (``12446.0``, an integer to JSON) passes (on
BFCL's sample; ToolAPI-v0's tools take no integer).

And one row of the grader's own: ``toolapi.lookalike_state[...]``: a final state that
differs from the gold state by one value only, a lookalike that Python's ``==`` calls
equal (a bool for 1 or 0, a number for a bool) or a backend dict spelled like one of
the service's tags (a set, an object, a tuple...: what the service projects such a dict
to), never passes, while the gold state itself does. Every lookalike of every gold
state of every task of ToolAPI-v0 and of a sample of BFCL's (fixed and drawn), graded
on the host: no agent can build most of them through its tools, a service with a
projection that is not one-to-one, or a grader that compares by ``==``, could.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import gym.images
from environments.shell.attacks import ClassRow
from environments.toolapi._grading import ToolAPIState
from gym import EpisodeResult, Task, ToolCall, make
from gym.authoring import env_of, parse_python
from gym.redteam import Attack, Context, Expect, Finding, Names, register

__all__: list[str] = []

TOOLAPI = "boxgym/ToolAPI-v0"
BFCL = "boxgym/BFCL-MultiTurn-v0"
BFCL_SAMPLE = ("BFCL/multi_turn_base_0", "BFCL/multi_turn_base_112")
"""GorillaFileSystem and TwitterAPI (the class's ``cp`` is not among the task's tools),
TradingBot and MathAPI (``power`` computes big integers)."""
SERVICE_OPS = ("load", "checkpoint", "call")
PRIVATE = ("__init__", "__class__", "__dict__", "__setattr__", "__getattribute__", "__reduce__")
REFUSED_BY_SERVICE = "Error during execution: name '"
HUGE = 7 << 20
"""Characters of the largest string argument sent (a call holds 8 MiB at most)."""
LONG = {"power": {"base": 7, "exponent": 15_000_000}}
"""Calls that keep the service busy past the call's time limit (5 s here), in C, where no
signal stops them (about 10 s on one core), and end before a checkpoint gives up (60 s)."""
ODD_TEXT = (
    "\x00\x01\x1b[2J",
    "\u202e\u2066\ufeff\u200b",
    "\U0010fffd\U0001f600" * 50,
    "e\u0301" * 100,
    '"}\n{"op": "load", "modules": {}}',
    "\\u0000 NaN Infinity",
)


def _name(schema: dict[str, Any]) -> str:
    return str(schema.get("function", schema).get("name", ""))


def _params(schema: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    params = schema.get("function", schema).get("parameters", {})
    return dict(params.get("properties", {})), list(params.get("required", []))


def _type(prop: dict[str, Any]) -> str:
    kind = prop.get("type", "string")
    return str(kind[0] if isinstance(kind, list) and kind else kind)


def _valid(prop: dict[str, Any]) -> Any:
    if prop.get("enum"):
        return prop["enum"][0]
    kinds = {"number": 1.0, "integer": 1, "boolean": True, "array": [], "object": {}}
    return kinds.get(_type(prop), "x")


def _wrong(prop: dict[str, Any]) -> Any:
    kinds = {"string": 12345, "number": "1", "integer": 1.5, "boolean": "true", "array": {}}
    return kinds.get(_type(prop), ["x"])


def _with(schema: dict[str, Any], names: Names, kinds: set[str], value: Any) -> ToolCall:
    """A call of a tool: its parameters of ``kinds`` get ``value(names, kind)``.

    Its other parameters get a valid value of their type.
    """
    props, _ = _params(schema)
    args = {p: value(names, _type(s)) if _type(s) in kinds else _valid(s) for p, s in props.items()}
    return ToolCall(name=_name(schema), arguments=args)


def _having(task: Task, kinds: set[str]) -> list[dict[str, Any]]:
    return [t for t in task.tools if any(_type(p) in kinds for p in _params(t)[0].values())]


# -- undeclared calls ---------------------------------------------------------------------


def _methods(modules: dict[str, str]) -> dict[str, dict[str, list[str]]]:
    """The public methods of each class of the backend (``module:Class``), with parameters.

    Read from the sources' syntax trees: nothing of the backend runs on the host.
    """
    found: dict[str, dict[str, list[str]]] = {}
    for file, source in modules.items():
        for node in ast.walk(parse_python(source)):
            if isinstance(node, ast.ClassDef):
                found[f"{file.removesuffix('.py')}:{node.name}"] = {
                    item.name: [a.arg for a in item.args.args[1:]]
                    for item in node.body
                    if isinstance(item, ast.FunctionDef) and not item.name.startswith("_")
                }
    return found


def _undeclared(names: Names, task: Task, env: Any) -> list[ToolCall]:
    """Every kind of name that is not a tool of the task, then ``submit``.

    The public methods of the task's own classes that it does not declare come first,
    then some of the other classes' (drawn), the service's requests, ``_`` and dunder
    names, look-alikes of a tool, and a tool with arguments it does not declare.
    """
    declared = {_name(t) for t in task.tools} | {"submit"}
    by_class = _methods(env.backend_modules())
    loaded = set(task.data.get("backend", {}).get("classes", []))
    params = {m: p for methods in by_class.values() for m, p in methods.items()}
    own = sorted({m for c in loaded for m in by_class.get(c, {})} - declared)
    rest = sorted(set(params) - declared - set(own))
    picked = [*own, *names.rng.sample(rest, min(6, len(rest)))]
    tool = names.rng.choice(sorted(declared - {"submit"}))
    looks = [tool.upper(), tool + " ", "\uff41" + tool[1:], tool.replace("_", "-"), names.ident()]
    calls = [ToolCall(name=m, arguments={a: names.ident() for a in params[m]}) for m in picked]
    calls += [ToolCall(name=op, arguments={}) for op in SERVICE_OPS if op not in declared]
    calls += [ToolCall(name=n, arguments={}) for n in (*PRIVATE, "_load_scenario", "_" + tool)]
    calls += [ToolCall(name=n, arguments={}) for n in looks if n not in declared]
    needing = [t for t in task.tools if _params(t)[1]]
    if needing:  # a real tool, with arguments it does not declare and none it needs
        extra = {"self": 1, "__class__": "x", names.ident(): 1}
        calls.append(ToolCall(name=_name(names.rng.choice(needing)), arguments=extra))
    names.notes["undeclared"] = str(len(calls))
    return [*calls, ToolCall(name="submit", arguments={})]


def _nothing_ran(ctx: Context, names: Names, result: EpisodeResult, policy: Any) -> Finding:
    """Each undeclared call was refused, and the first turn's checkpoint ran no method."""
    steps = _calls(result)  # a call refused at the host is a step without a call
    sent = int(names.notes.get("undeclared", "0"))
    first = steps[:sent]
    answered = [s.call.name for s in first if s.call and not s.observation.startswith("Error")]
    turns = (result.export or {}).get("turns") or [{}]
    results = turns[0].get("results", [])
    ran = [r for r in results if not str(r).startswith(REFUSED_BY_SERVICE)]
    seen = (
        f"{len(first)} undeclared calls: {len(first) - len(results)} refused at the host, "
        f"{len(results) - len(ran)} by the service"
    )
    if answered or ran or len(first) != sent:
        return Finding(f"{seen}; answered: {answered[:5]}, ran: {ran[:2]}", False)
    return Finding(seen + "; no method ran", True)


def _calls(result: EpisodeResult) -> list[Any]:
    """The steps of every call but ``submit`` (one refused at the host has no ``call``)."""
    return [s for s in result.steps if not (s.call is not None and s.call.name == "submit")]


# -- calls that hang or break the service -------------------------------------------------


def _odd(names: Names, kind: str) -> str:
    return names.rng.choice(ODD_TEXT) + names.ident()


def _extreme(names: Names, kind: str) -> Any:
    """A float at the edges of its range, or a negative or zero integer.

    Never a large integer: BFCL's ``power`` and its precisions would compute for minutes
    (`LONG` is the one computation sent on purpose, of a known length).
    """
    if kind == "integer":
        return names.rng.choice([0, -1, -(2**31)])
    return names.rng.choice([1e308, -1e308, 5e-324, -0.0])


def _breakers(names: Names, task: Task, env: Any) -> list[ToolCall]:
    """Calls that may break the service, then ``submit``.

    Wrong JSON types for every tool, odd text, extreme numbers, a string as large as a
    call may hold, and a long computation when the task has such a tool.
    """
    rng = names.rng
    wrong = [
        ToolCall(name=_name(t), arguments={p: _wrong(s) for p, s in _params(t)[0].items()})
        for t in task.tools
        if _params(t)[0]
    ][:20]
    texts = _having(task, {"string"})
    numbers = _having(task, {"number", "integer"})
    calls = [*wrong]
    calls += [_with(t, names, {"string"}, _odd) for t in rng.sample(texts, min(3, len(texts)))]
    for t in rng.sample(numbers, min(3, len(numbers))):
        calls.append(_with(t, names, {"number", "integer"}, _extreme))
    if texts:
        big = rng.choice(texts)
        count = sum(_type(p) == "string" for p in _params(big)[0].values())
        huge = lambda n, kind: n.ident() + "x" * (HUGE // count)  # noqa: E731
        calls.append(_with(big, names, {"string"}, huge))
    declared = {_name(t) for t in task.tools}
    calls += [ToolCall(name=n, arguments=a) for n, a in LONG.items() if n in declared]
    return [*calls, ToolCall(name="submit", arguments={})]


def _tally(ctx: Context, names: Names, result: EpisodeResult, policy: Any) -> Finding:
    """What became of the calls (a note on the row; the expectation decides)."""
    obs = [s.observation for s in _calls(result)]
    host = sum(o.startswith("Error: invalid arguments") for o in obs)
    down = sum(o.startswith("Error: the backend did not answer") for o in obs)
    error = str((result.export or {}).get("error", ""))[:120]
    text = f"{len(obs)} calls: {host} refused at the host, {down} unanswered"
    return Finding(text + (f"; state unread: {error}" if error else ""), True)


# -- correct work, spelled otherwise -------------------------------------------------------


def _integral_floats(names: Names, task: Task, env: Any) -> list[ToolCall]:
    """The oracle's calls, every int given to an ``integer`` parameter written as a float.

    JSON takes ``12446.0`` for the integer 12446: correct work, which must pass (a tool
    that got the float and echoed it failed 57 of BFCL's tasks on their results).
    """
    kinds = {_name(t): {k: _type(p) for k, p in _params(t)[0].items()} for t in task.tools}
    calls = []
    for call in env.unwrapped.oracle_calls(task):
        declared = kinds.get(call.name, {})
        args = {
            k: float(v) if type(v) is int and declared.get(k) == "integer" else v
            for k, v in call.arguments.items()
        }
        calls.append(ToolCall(name=call.name, arguments=args))
    return calls


def _floats_sent(ctx: Context, names: Names, result: EpisodeResult, policy: Any) -> Finding:
    """How many integers went as floats (a note: the expectation decides)."""
    sent = [
        v for s in result.steps if s.call for v in s.call.arguments.values() if type(v) is float
    ]
    return Finding(f"{len(sent)} arguments sent as floats", True)


# -- lookalike states -----------------------------------------------------------------------

LOOKALIKE_CAP = 400
"""Lookalikes graded per task at most (drawn when a task has more)."""


@functools.lru_cache(maxsize=4)
def _service(image: str) -> ModuleType:
    """The service's module of an image (its `plain` projection), read on the host."""
    path = gym.images.image_dir(image) / "toolapi" / "server.py"
    spec = importlib.util.spec_from_file_location(f"_{image}_service", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tag(value: dict[str, Any]) -> bool:
    """Whether a projected dict is one of the service's tags (an ``__x`` key, unescaped)."""
    return any(k.startswith("__") and not k.startswith("___") for k in value)


def _lookalikes(value: Any, plain: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """(path, kind, lookalike) for every value inside a projected state that has one."""
    if type(value) is bool:
        yield path, "bool as int", int(value)
        yield path, "bool as float", float(value)
    elif type(value) in (int, float) and value in (0, 1):
        yield path, "number as bool", bool(value)
    elif type(value) is dict:
        if _tag(value):
            yield path, "dict spelled as a tag", plain(value)
        for key, item in value.items():
            yield from _lookalikes(item, plain, (*path, key))
    elif type(value) is list:
        for i, item in enumerate(value):
            yield from _lookalikes(item, plain, (*path, i))


def _replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    """A copy of a JSON value with the value at ``path`` replaced (copied along the path)."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    if type(value) is dict:
        return {**value, head: _replaced(value[head], rest, new)}
    return [_replaced(v, rest, new) if i == head else v for i, v in enumerate(value)]


@dataclass
class LookalikeState(Attack):
    """``toolapi.lookalike_state[...]``: gold states with one value swapped for a lookalike.

    Graded on the host by the environment's own `grade`, against its gold replay: the
    gold state must pass, each lookalike must not.

    Attributes:
        env_id: the environment.
        pool: the tasks it always runs on (every task of the environment when empty).
        draws: how many other tasks are drawn each run.
    """

    env_id: str = TOOLAPI
    pool: tuple[str, ...] = ()
    draws: int = 0

    def __post_init__(self) -> None:
        self.name = f"toolapi.lookalike_state[{self.env_id.split('/')[-1]}]"
        self.envs = (self.env_id,)
        where = f"on {len(self.pool)} tasks and {self.draws} drawn" if self.pool else ""
        self.expected = (
            f"fail; every lookalike of each gold state, gold passes; {where or 'on every task'}"
        )

    def run(self, ctx: Context, env_id: str) -> Finding:
        """Grade each task's lookalikes; holds when the gold passes and none of them does."""
        env = make(env_id, run=ctx.label, **ctx.env_kwargs)
        try:
            inner: Any = env_of(env)
            ids = [t.id for t in inner.tasks]
            rng = ctx.names().rng
            picked = list(self.pool) if self.pool else ids
            rest = sorted(set(ids) - set(picked))
            picked += rng.sample(rest, min(self.draws, len(rest)))
            seen, broke = [], []
            for task_id in picked:
                text, held = self._one(inner, inner.task_by_id(task_id), rng)
                seen.append(f"{task_id}: {text}")
                if not held:
                    broke.append(task_id)
        finally:
            env.close()
        text = " | ".join(seen)
        return Finding(f"broken on {', '.join(broke)}: {text}" if broke else text, not broke)

    def _one(self, inner: Any, task: Task, rng: Any) -> tuple[str, bool]:
        gold_calls = inner.gold(task)
        gold = inner._gold_checkpoints(task, gold_calls)
        plain = _service(inner.image).plain
        if inner.grade(task, ToolAPIState(turns=gold), []).outcome != "pass":
            return "the gold state itself does not pass", False
        found = [
            (turn, *each)
            for turn, checkpoint in enumerate(gold)
            if gold_calls.turns[turn]
            for each in _lookalikes(checkpoint.state, plain)
        ]
        if not found:
            return "no lookalike in the gold states", False
        tried = rng.sample(found, LOOKALIKE_CAP) if len(found) > LOOKALIKE_CAP else found
        passed = []
        for turn, path, kind, new in tried:
            state = _replaced(gold[turn].state, path, new)
            turns = list(gold)
            turns[turn] = gold[turn].model_copy(update={"state": state})
            if inner.grade(task, ToolAPIState(turns=turns), []).outcome == "pass":
                passed.append(f"turn {turn + 1} {'/'.join(map(str, path))}: {kind}")
        kinds = sorted({k for _, _, k, _ in tried})
        text = f"gold passes; {len(tried)} of {len(found)} lookalikes graded ({', '.join(kinds)})"
        if passed:
            return f"{text}; {len(passed)} passed: {passed[:3]}", False
        return text + ", none passed", True


PASSED = Expect(outcomes=frozenset({"pass"}), no_flags=True)
"""Correct work: it passes, with no flag."""


def _rows() -> list[Attack]:
    def every(name: str, env: str, script: Any, observer: Any, **kw: Any) -> ClassRow:
        kw.setdefault("tasks", {"*": "notebook/add-then-list"})
        kw.setdefault("expect", Expect())
        return ClassRow(
            name=f"toolapi.{name}[{env.split('/')[-1]}]",
            envs=(env,),
            script=script,
            observers=(observer,),
            **kw,
        )

    quick = {"exec_timeout": 5.0}
    sample: dict[str, Any] = {"pool": BFCL_SAMPLE, "tasks": {"*": BFCL_SAMPLE[0]}}
    return [
        every("undeclared_calls", TOOLAPI, _undeclared, _nothing_ran),
        every("undeclared_calls", BFCL, _undeclared, _nothing_ran, **sample),
        every("fail_to_infra", TOOLAPI, _breakers, _tally, env_kwargs=quick),
        every("fail_to_infra", BFCL, _breakers, _tally, env_kwargs=quick, **sample),
        every("integral_floats", BFCL, _integral_floats, _floats_sent, expect=PASSED, **sample),
        LookalikeState(TOOLAPI),
        LookalikeState(BFCL, pool=BFCL_SAMPLE, draws=8),
    ]


register(*_rows())
