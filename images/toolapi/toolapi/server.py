"""The tool-API service: a task's backend classes, their public methods served as tools.

A single-threaded stdlib TCP service on 127.0.0.1, run as its own uid. Each connection
carries one request (a JSON object on one line) and gets one reply (a JSON object on one
line), then closes. Requests:

- ``load``: ``modules`` (file name -> Python source), ``classes`` (``module:Class``, in
  order), ``state`` (class name -> initial state), ``setup`` (the method each instance is
  given its initial state with; BFCL's ``_load_scenario``), ``setup_kwargs`` and
  ``tools`` (the method names that may be called). Once per service: the modules are
  written into the service's private directory and imported, each class is instantiated
  and set up. A method name routes to the last class that has it (as BFCL does).
- ``call``: ``name`` and ``arguments`` (a JSON object): the method runs with keyword
  arguments; its result is kept as text, as BFCL's executor writes it (a str as is, a dict
  as JSON, anything else ``str()``; an exception ``Error during execution: ...``).
- ``checkpoint``: the plain-JSON state of every instance (its public attributes,
  recursively: see `plain`, one-to-one and typed) and the results of the calls since the
  last checkpoint.

Every call runs under a time limit (an endless method is an error result, not a hung
service). Requests are bounded (16 MiB), and so are the state and the results sent back.

Usage: python3 server.py --home DIR [--port 8090]
"""

import argparse
import copy
import datetime
import importlib
import inspect
import json
import math
import os
import signal
import socket
import sys
import traceback

MAX_REQUEST = 16 << 20
MAX_RESULT = 64 << 10
"""Characters of one call's result that are kept (the rest is cut, with a note)."""
MAX_DEPTH = 64
TAG = "__"
"""How the name of each tag of the projection starts (see `plain`)."""
LONG_INT_BITS = 12_000
"""Bits of the longest int written as digits (3,613 of them: Python writes 4,300 at most)."""
CALL_SECONDS = 10.0


class Timeout(Exception):
    """A call ran past its time limit."""


def _alarm(signum, frame):
    raise Timeout(f"the call ran past {CALL_SECONDS:.0f} s")


def plain(value, depth=0, ancestors=frozenset()):
    """A plain JSON projection of a backend value (what the grader compares).

    One-to-one, so that two values the grader calls equal are equal: None, bool, str,
    ints and finite floats are themselves (JSON keeps bool, int and float apart); a list
    is a list; a dict with text keys is an object whose keys that start with ``__`` get
    one more ``_`` (so that no key is read as a tag); every other value is tagged, an
    object with one ``__`` key: a tuple ``{"__tuple__": [...]}``, any other dict
    ``{"__dict__": [[k, v], ...]}`` sorted, a set ``{"__set__": [...]}`` sorted, a float
    that is not finite ``{"__float__": repr}``, an int too long for JSON's text
    ``{"__int__": hex}``, an object its class name (``__class__``) and public attributes,
    a value met again on its own path (a parent link) ``{"__cycle__": name}``, one nested
    past `MAX_DEPTH` ``{"__deep__": name}``, anything else ``{"__repr__": repr}``.
    """
    if value is None or type(value) in (bool, str):
        return value
    if type(value) is int:
        return value if value.bit_length() <= LONG_INT_BITS else {"__int__": hex(value)}
    if type(value) is float:
        return value if math.isfinite(value) else {"__float__": repr(value)}
    if depth > MAX_DEPTH:
        return {"__deep__": type(value).__name__}
    if id(value) in ancestors:
        return {"__cycle__": type(value).__name__}
    inner = ancestors | {id(value)}

    def sub(v):
        return plain(v, depth + 1, inner)

    if isinstance(value, dict):
        if all(type(k) is str for k in value):
            return {_key(k): sub(v) for k, v in value.items()}
        pairs = [[sub(k), sub(v)] for k, v in value.items()]
        return {"__dict__": sorted(pairs, key=lambda p: json.dumps(p, sort_keys=True))}
    if isinstance(value, list):
        return [sub(v) for v in value]
    if isinstance(value, tuple):
        return {"__tuple__": [sub(v) for v in value]}
    if isinstance(value, (set, frozenset)):
        items = [sub(v) for v in value]
        return {"__set__": sorted(items, key=lambda v: json.dumps(v, sort_keys=True))}
    if isinstance(value, (datetime.date, datetime.time, datetime.timedelta)):
        return {"__repr__": repr(value)}
    if hasattr(value, "__dict__") and not inspect.isroutine(value) and not inspect.isclass(value):
        names = _compared(value) if depth else None
        if names is None:
            names = [k for k in vars(value) if not k.startswith("_")]
        attrs = {_key(k): sub(vars(value)[k]) for k in names}
        return {"__class__": type(value).__name__, **attrs}
    return {"__repr__": repr(value)[:4096]}


_PROBES = {}
"""A backend class -> its probe: a subclass recording each attribute read of an object."""


def _compared(value):
    """The attributes of ``value`` its class's ``__eq__`` compares, in order, or None.

    BFCL's checker compares each public attribute of a backend instance with ``==``, so
    an object held in one is equal as its class's ``__eq__`` says: a ``Directory`` by its
    name and contents, never by its ``parent`` (which a move leaves pointing at the old,
    detached folder: projected in full, the same tree read as different; found by a
    red-team helper). The attributes are found by running that ``__eq__`` once on the
    object against itself, through a subclass that records what it reads; None when the
    class keeps ``object``'s, or the probe reads no attribute of the instance.
    """
    cls = type(value)
    if getattr(cls, "__eq__", object.__eq__) is object.__eq__:
        return None
    read = []
    try:
        probe = object.__new__(_probe_class(cls))
        object.__setattr__(probe, "_boxgym_probe_of", (value, read))
        cls.__eq__(probe, probe)
    except Exception:  # an __eq__ it cannot run this way: every public attribute
        return None
    return [n for n in read if n in vars(value)] or None


def _probe_class(cls):
    probe = _PROBES.get(cls)
    if probe is None:

        class Probe(cls):
            def __getattribute__(self, name):
                target, read = object.__getattribute__(self, "_boxgym_probe_of")
                if name not in read:
                    read.append(name)
                return getattr(target, name)

        probe = _PROBES[cls] = Probe
    return probe


def _key(key):
    """A text key of a backend dict as the projection writes it (never a tag's name)."""
    return "_" + key if key.startswith(TAG) else key


def as_text(result):
    """A call's result as BFCL's executor writes it."""
    if type(result) is str:
        text = result
    elif type(result) is dict:
        try:
            text = json.dumps(result)
        except (TypeError, ValueError):
            text = str(result)
    else:
        text = str(result)
    if len(text) > MAX_RESULT:
        text = text[:MAX_RESULT] + f"... ({len(text) - MAX_RESULT} more characters cut)"
    return text


class Backend:
    """The instances of one episode's backend classes and the results of their calls."""

    def __init__(self, home):
        self.home = home
        self.instances = {}
        self.routes = {}
        self.allowed = None
        self.results = []
        self.loaded = False

    def load(self, request):
        if self.loaded:
            raise ValueError("the backend is already loaded")
        folder = os.path.join(self.home, "backend")
        os.makedirs(folder, mode=0o700, exist_ok=True)
        for name, source in request.get("modules", {}).items():
            if os.sep in name or not name.endswith(".py") or name.startswith("."):
                raise ValueError(f"module file {name!r}: a plain NAME.py is expected")
            with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
                f.write(source)
        sys.path.insert(0, folder)
        state = request.get("state", {})
        setup = request.get("setup") or ""
        kwargs = request.get("setup_kwargs", {})
        for spec in request["classes"]:
            module_name, _, class_name = spec.partition(":")
            instance = getattr(importlib.import_module(module_name), class_name)()
            method = getattr(instance, setup, None) if setup else None
            if callable(method):
                method(copy.deepcopy(state.get(class_name, {})), **kwargs)
            self.instances[class_name] = instance
            for name, _ in inspect.getmembers(instance, predicate=inspect.ismethod):
                if not name.startswith("_"):
                    self.routes[name] = class_name
        tools = request.get("tools")
        self.allowed = None if tools is None else set(tools)
        self.loaded = True
        return {"classes": list(self.instances), "tools": sorted(self.routes)}

    def call(self, request):
        name, arguments = request["name"], request.get("arguments", {})
        if not self.loaded:
            raise ValueError("no backend is loaded")
        if not isinstance(arguments, dict):
            raise ValueError("arguments must be a JSON object")
        owner = self.routes.get(name)
        if owner is None or (self.allowed is not None and name not in self.allowed):
            text = f"Error during execution: name '{name}' is not defined"
        else:
            text = self._run(getattr(self.instances[owner], name), arguments)
        self.results.append(text)
        return {"result": text}

    def _run(self, method, arguments):
        signal.setitimer(signal.ITIMER_REAL, CALL_SECONDS)
        try:
            return as_text(method(**arguments))
        except Exception as exc:  # the backend's own errors are results, as in BFCL
            return as_text(f"Error during execution: {exc}")
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)

    def checkpoint(self, request):
        state = {name: plain(instance) for name, instance in self.instances.items()}
        results, self.results = self.results, []
        return {"state": state, "results": results}


def _read_request(conn):
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(1 << 16)
        if not chunk:
            break
        data += chunk
        if len(data) > MAX_REQUEST:
            raise ValueError(f"the request exceeds {MAX_REQUEST} bytes")
    return json.loads(data.decode("utf-8"))


def _encoded(reply):
    return json.dumps(reply, ensure_ascii=False).encode("utf-8") + b"\n"


def _refusal(exc):
    """An ``{"ok": false}`` reply naming an error, in ASCII whatever its text holds."""
    try:
        text = str(exc) if isinstance(exc, Timeout) else f"{type(exc).__name__}: {exc}"
    except Exception:  # an exception whose text cannot be written
        text = type(exc).__name__
    return json.dumps({"ok": False, "error": text[:MAX_RESULT]}).encode("ascii") + b"\n"


def _answer(backend, conn):
    """Read one request and send its reply, built and encoded under the guard.

    Whatever a request makes of the backend (a state JSON cannot hold, text that is not
    UTF-8), the reply is an ``{"ok": false}`` one and the service goes on.
    """
    try:
        request = _read_request(conn)
        op = request.get("op")
        handler = {"load": backend.load, "call": backend.call, "checkpoint": backend.checkpoint}
        if op not in handler:
            raise ValueError(f"unknown op {op!r}")
        data = _encoded({"ok": True, **handler[op](request)})
    except Exception as exc:
        if not isinstance(exc, Timeout):
            traceback.print_exc()
        data = _refusal(exc)
    conn.sendall(data)


def serve(home, port):
    signal.signal(signal.SIGALRM, _alarm)
    backend = Backend(home)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(16)
        while True:
            conn, _ = listener.accept()
            with conn:
                try:
                    _answer(backend, conn)
                except Exception:  # the reply could not be sent: the next one may be
                    traceback.print_exc()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", required=True)
    parser.add_argument("--port", type=int, default=8090)
    args = parser.parse_args()
    serve(args.home, args.port)


if __name__ == "__main__":
    main()
