"""The worker: the only process that imports the code under test (standard library only).

It runs as an unprivileged uid of its own, started by the root runner with one socket
to the checker on file descriptor ``argv[1]``. It answers the checker's requests (import a
module, get an attribute, call, apply an operator) on the objects it holds, and sends
back values, or handles to objects that stay here. Objects of the checker that reach it
(callbacks, sentinels) are `Trusted` stand-ins: calling one, or reading one of its
public attributes, asks the checker.

Everything in this process, this module included, is under the control of the code
under test: nothing it sends is trusted beyond being the code's own answer.
"""

import _thread
import codecs
import collections
import copy
import importlib
import importlib.util
import io
import math
import operator
import os
import sys
import weakref

import boxgym_wire as wire

_BINARY = (
    "add sub mul matmul truediv floordiv mod pow lshift rshift and_ xor or_ "
    "iadd isub imul imatmul itruediv ifloordiv imod ipow ilshift irshift iand ixor ior "
    "eq ne lt le gt ge getitem delitem concat"
).split()
OPERATORS = {name.rstrip("_"): getattr(operator, name) for name in _BINARY}
OPERATORS.update(
    {
        "divmod": divmod,
        "contains": lambda a, b: b in a,
        "setitem": operator.setitem,
        "neg": operator.neg,
        "pos": operator.pos,
        "abs": abs,
        "invert": operator.invert,
        "index": operator.index,
        "int": int,
        "float": float,
        "complex": complex,
        "bool": bool,
        "len": len,
        "hash": hash,
        "str": lambda o: str.__str__(str(o)),
        "repr": lambda o: str.__str__(repr(o)),
        "format": lambda o, spec="": str.__str__(format(o, spec)),
        "iter": iter,
        "next": next,
        "reversed": reversed,
        "round": round,
        "trunc": math.trunc,
        "floor": math.floor,
        "ceil": math.ceil,
        "enter": lambda o: type(o).__enter__(o),
        "exit": lambda o, *a: type(o).__exit__(o, *a),
        "isinstance": isinstance,
        "issubclass": issubclass,
        "dir": lambda o: [str(n) for n in dir(o)],
        "copy": copy.copy,
        "deepcopy": copy.deepcopy,
        "call": lambda f, *a: f(*a),
    }
)


class Trusted:
    """A stand-in for an object of the checker (a callback, a sentinel, a test's object)."""

    __slots__ = ("_bx_ref", "__weakref__")

    def __init__(self, ref):
        object.__setattr__(self, "_bx_ref", ref)

    def _bx_ask(self, op, *args, **kwargs):
        return SIDE.ask(op, self, args, kwargs)

    def __call__(self, *args, **kwargs):
        return self._bx_ask("call", *args, **kwargs)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return SIDE.ask("getattr", self, (name,), {})

    def __iter__(self):
        return self._bx_ask("iter")

    def __next__(self):
        return self._bx_ask("next")

    def __len__(self):
        return self._bx_ask("len")

    def __getitem__(self, key):
        return self._bx_ask("getitem", key)

    def __contains__(self, item):
        return self._bx_ask("contains", item)

    def __bool__(self):
        return self._bx_ask("bool")

    def __repr__(self):
        return self._bx_ask("repr")

    def __str__(self):
        return self._bx_ask("str")

    def __hash__(self):
        return self._bx_ask("hash")

    def __eq__(self, other):
        return self._bx_ask("eq", other)

    def __ne__(self, other):
        return self._bx_ask("ne", other)


class WorkerSide:
    """How objects cross from the worker: its own as handles, the checker's as `Trusted`."""

    def __init__(self):
        self.objs, self.ids, self.next = {}, {}, 1
        self.described = set()
        self.trusted = weakref.WeakValueDictionary()
        self.released = []
        self.conn = None

    # handles

    def encode_object(self, obj):
        if type(obj) is Trusted:
            return {"t": "p", "v": object.__getattribute__(obj, "_bx_ref")}
        ref = (
            getattr(obj, "__dict__", {}).get("_bx_ref") if isinstance(obj, BaseException) else None
        )
        if type(ref) is Trusted:
            return {"t": "p", "v": object.__getattribute__(ref, "_bx_ref")}
        key = self.ids.get(id(obj))
        if key is None:
            key, self.next = self.next, self.next + 1
            self.objs[key], self.ids[id(obj)] = obj, key
        out = {"t": "o", "v": key}
        if isinstance(obj, type):
            if key not in self.described:
                self.described.add(key)
                out["d"] = self.describe(obj)
        else:
            out["c"] = wire.encode(type(obj), self)
        return out

    def describe(self, cls):
        bases = [wire.encode(b, self) for b in cls.__bases__]
        return {
            "name": wire.safe_text(lambda c: str(type.__getattribute__(c, "__name__")), cls),
            "qual": wire.safe_text(lambda c: str(type.__getattribute__(c, "__qualname__")), cls),
            "mod": wire.safe_text(lambda c: str(type.__getattribute__(c, "__module__")), cls),
            "bases": bases,
            "exc": issubclass(cls, BaseException),
        }

    def decode_object(self, enc):
        if enc["t"] == "p":
            return self.objs[enc["v"]]
        ref = enc["v"]
        proxy = self.trusted.get(ref)
        if proxy is None:
            if ref in self.released:
                self.released.remove(ref)
            proxy = Trusted(ref)
            self.trusted[ref] = proxy
            weakref.finalize(proxy, self.released.append, ref)
        return proxy

    def decode_exception(self, enc):
        obj = wire.decode(enc["obj"], self) if enc.get("obj") else None
        if isinstance(obj, BaseException):
            return obj  # one of ours, raised again by the checker
        try:
            cls = wire.decode(enc["cls"], self)
        except (ValueError, KeyError):
            cls = None
        if not (isinstance(cls, type) and issubclass(cls, BaseException)):
            cls = wire.named_type(enc.get("base") or "builtins:Exception")
        try:
            exc = cls(*wire.decode(enc["args"], self))
        except Exception:
            exc = cls(enc.get("str", ""))
        if isinstance(obj, Trusted):
            exc.__dict__["_bx_ref"] = obj  # raised back to the checker, it is the same object
        return exc

    # requests to the checker

    def ask(self, op, target, args, kwargs):
        memo = wire.Memo()
        fields = {
            "obj": wire.encode(target, self, memo),
            "args": [wire.encode(a, self, memo) for a in args],
            "kwargs": {k: wire.encode(v, self, memo) for k, v in kwargs.items()},
        }
        return self.conn.request(op, fields, memo)

    def incoming(self, msg):
        if msg.get("test") is True:
            BUDGET.renew()
        for key in msg.get("rel") or ():
            obj = self.objs.pop(key, None)
            if obj is not None:
                self.ids.pop(id(obj), None)
                self.described.discard(key)

    def outgoing(self):
        extra = {}
        out, err = OUT.take(), ERR.take()
        if out or err:
            extra["out"] = [out, err]
        if self.released:
            extra["rel"], self.released = self.released, []
        return extra


class Budget:
    """What the worker may still send of its code's output in the current test (bytes)."""

    def __init__(self):
        self.left = wire.MAX_TEST_OUTPUT
        self.streams = []
        self.lock = _thread.RLock()  # the code's threads print at once: one count

    def renew(self):
        """A new test began (the checker said so): its output may be sent again."""
        with self.lock:
            self.left = wire.MAX_TEST_OUTPUT
            for stream in self.streams:
                stream.spent = False


_TRUNCATED = "\n[boxgym: output truncated]\n"
_NEWLINES = (None, "", "\n", "\r", "\r\n")


class Capture(io.TextIOBase):
    """Standard output or error of the code under test, sent with the next message.

    It behaves as the process's own stream redirected to a file would for what code
    commonly does with one: ``encoding``, ``errors``, ``reconfigure`` (honoured when
    text is written), ``buffer``, ``isatty`` (False) and ``fileno`` (the process's own
    descriptor 1 or 2, /dev/null: what a subprocess or `faulthandler` writes there is
    discarded). What it keeps is bounded in bytes of the message (`wire.escaped_size`):
    `wire.MAX_OUTPUT` per message and, shared by both streams, `wire.MAX_TEST_OUTPUT`
    per test, each cut marked once.
    """

    def __init__(self, name, fd, errors, budget):
        self.name, self.fd, self.budget = name, fd, budget
        self.parts, self.size = [], 0
        self.full = self.spent = False  # cut in this message / in this test
        self.lock = budget.lock
        self._encoding, self._errors, self._newline = "utf-8", errors, None
        self.line_buffering = self.write_through = False
        self.buffer = _Bytes(self)
        budget.streams.append(self)

    @property
    def encoding(self):
        return self._encoding

    @property
    def errors(self):
        return self._errors

    @property
    def mode(self):
        return "w"

    def writable(self):
        return True

    def fileno(self):
        return self.fd

    def isatty(self):
        return False

    def detach(self):
        """The byte stream under it (``io.TextIOWrapper(sys.stdout.detach(), ...)``)."""
        return self.buffer

    def reconfigure(
        self, *, encoding=None, errors=None, newline=..., line_buffering=None, write_through=None
    ):
        """As ``io.TextIOWrapper.reconfigure``: checked the same way, honoured when writing."""
        if encoding is not None:
            codecs.lookup(encoding)  # LookupError, TypeError: as a real stream raises
            errors = "strict" if errors is None else errors
        if errors is not None:
            codecs.lookup_error(errors)
        if newline is not ... and newline not in _NEWLINES:
            raise ValueError(f"illegal newline value: {newline!r}")
        self.flush()
        with self.lock:
            if encoding is not None:
                self._encoding = encoding
            if errors is not None:
                self._errors = errors
            if newline is not ...:
                self._newline = newline
            if line_buffering is not None:
                self.line_buffering = bool(line_buffering)
            if write_through is not None:
                self.write_through = bool(write_through)

    def _as_written(self, text):
        """The text a real stream would have written: newlines, encoding and errors."""
        if self._newline in ("\r", "\r\n"):
            text = text.replace("\n", self._newline)
        if not text.isascii():  # ASCII comes back as it was from any encoding of a stream
            data = text.encode(self._encoding, self._errors)
            text = data.decode(self._encoding, "replace")
        return text

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if self.closed:
            raise ValueError("I/O operation on closed file.")
        with self.lock:
            if text and not (self.full or self.spent):
                self._keep(text)
        return len(text)

    def _keep(self, text):
        by_message, by_test = wire.MAX_OUTPUT - self.size, self.budget.left
        room = max(0, min(by_message, by_test))
        head = text[:room]  # each character takes a byte at least
        piece = self._as_written(head)
        size, whole = wire.escaped_size(piece), len(head) == len(text)
        if size > room:
            piece, whole = wire.cut_to_size(piece, room), False
            size = wire.escaped_size(piece)
        if piece:
            self.parts.append(piece)
            self.size += size
            self.budget.left -= size
        if not whole or self.size >= wire.MAX_OUTPUT or self.budget.left <= 0:
            self.parts.append(_TRUNCATED)
            self.spent = by_test <= by_message
            self.full = not self.spent

    def take(self):
        with self.lock:
            text, self.parts, self.size, self.full = "".join(self.parts), [], 0, False
        return text


class _Bytes(io.BufferedIOBase):
    """``sys.stdout.buffer``: bytes written are decoded as UTF-8 into the text stream."""

    def __init__(self, text):
        self.text = text
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def writable(self):
        return True

    def fileno(self):
        return self.text.fd

    def isatty(self):
        return False

    def write(self, data):
        data = bytes(memoryview(data))
        self.text.write(self.decoder.decode(data))
        return len(data)


# -- the checker's requests ---------------------------------------------------------------


def _target(msg):
    return SIDE.objs[msg["obj"]["v"]]


def op_import(conn, msg, memo):
    """Import a module by name (or load a file as that module); returns (module, package)."""
    name, path = str(msg["name"]), msg.get("path")
    if path:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
    else:
        module = importlib.import_module(name)
    return (module, hasattr(module, "__path__"))


def op_getattr(conn, msg, memo):
    return getattr(_target(msg), str(msg["name"]))


def op_setattr(conn, msg, memo):
    args, _ = wire.arguments(msg, SIDE, memo)
    setattr(_target(msg), str(msg["name"]), args[0])


def op_delattr(conn, msg, memo):
    delattr(_target(msg), str(msg["name"]))


def op_call(conn, msg, memo):
    args, kwargs = wire.arguments(msg, SIDE, memo)
    return _target(msg)(*args, **kwargs)


def op_op(conn, msg, memo):
    args, kwargs = wire.arguments(msg, SIDE, memo)
    return OPERATORS[str(msg["name"])](*args, **kwargs)


class NoPlain(TypeError):
    """The object has no plain projection (it extends no value type)."""


def op_plain(conn, msg, memo):
    """The plain projection of an object: the value it extends, copied, its items too.

    The copies are made with the value type's own methods (``str.__str__``, ``list``'s
    iteration...), never the subclass's, so that a ``str`` enum projects to its text.
    """
    return project(_target(msg))


def project(obj, depth=0):
    if wire.is_plain(obj):
        return obj
    if depth > wire.MAX_DEPTH:
        raise NoPlain("a value nested too deeply")
    base = _value_base(type(obj))
    if base is None:
        raise NoPlain(f"a {type(obj).__qualname__} extends no value type")
    copy = _COPIES[wire.type_name(base)](base, obj)
    if base in (list, tuple, set, frozenset, collections.deque):
        items = [project(x, depth + 1) for x in base.__iter__(copy)]
        return collections.deque(items, copy.maxlen) if base is collections.deque else base(items)
    if isinstance(copy, dict):
        pairs = [(project(k, depth + 1), project(v, depth + 1)) for k, v in dict.items(copy)]
        dict.clear(copy)
        for k, v in pairs:
            dict.__setitem__(copy, k, v)
    return copy


def _value_base(t):
    for c in t.__mro__:
        if wire.type_name(c) in wire.VALUE_BASES:
            return c
    return None


def _dict_copy(base, obj):
    out = (
        collections.defaultdict(obj.default_factory) if base is collections.defaultdict else base()
    )
    for k, v in dict.items(obj):
        dict.__setitem__(out, k, v)
    return out


def _time_copy(base, obj):
    return base(*base.__reduce__(obj)[1])


_COPIES = {
    "builtins:int": lambda b, o: int.__int__(o),
    "builtins:float": lambda b, o: float.__float__(o),
    "builtins:complex": lambda b, o: complex.__complex__(o),
    "builtins:str": lambda b, o: str.__str__(o),
    "builtins:bytes": lambda b, o: bytes.__bytes__(o),
    "builtins:bytearray": lambda b, o: bytearray(memoryview(o)),
    "builtins:list": lambda b, o: list(list.__iter__(o)),
    "builtins:tuple": lambda b, o: tuple(tuple.__iter__(o)),
    "builtins:set": lambda b, o: set(set.__iter__(o)),
    "builtins:frozenset": lambda b, o: frozenset(frozenset.__iter__(o)),
    "builtins:dict": _dict_copy,
    "collections:Counter": _dict_copy,
    "collections:OrderedDict": lambda b, o: b(collections.OrderedDict.items(o)),
    "collections:defaultdict": _dict_copy,
    "collections:deque": lambda b, o: b(b.__iter__(o), b.maxlen.__get__(o)),
    "fractions:Fraction": lambda b, o: b(int(b.numerator.fget(o)), int(b.denominator.fget(o))),
    "decimal:Decimal": lambda b, o: b(b.__str__(o)),
    "datetime:date": _time_copy,
    "datetime:datetime": _time_copy,
    "datetime:time": _time_copy,
    "datetime:timedelta": _time_copy,
    "pathlib:PurePosixPath": lambda b, o: b(b.__str__(o)),
    "pathlib:PosixPath": lambda b, o: b(b.__str__(o)),
    "pathlib:Path": lambda b, o: b(b.__str__(o)),
}


OPS = {
    "import": op_import,
    "getattr": op_getattr,
    "setattr": op_setattr,
    "delattr": op_delattr,
    "call": op_call,
    "op": op_op,
    "plain": op_plain,
    "ping": lambda conn, msg, memo: None,
}

SIDE = WorkerSide()
BUDGET = Budget()
OUT = Capture("<stdout>", 1, "surrogateescape", BUDGET)
ERR = Capture("<stderr>", 2, "backslashreplace", BUDGET)  # a C.UTF-8 Python's own errors
THREAD_STACK = 4 << 20
"""The stack of a thread the code starts (8 MiB by default, the main thread's stays):
`RLIMIT_AS` counts each whole stack, and the code may start as many threads as its
process limit allows (`RLIMIT_NPROC` 96)."""


def main(fd):
    """Serve the checker on socket ``fd`` until it closes (then exit)."""
    settings = wire.loads(os.environ.get("BOXGYM_WORKER") or "{}")
    sock = wire.Descriptor(fd)
    if settings.get("frozen_time"):
        wire.freeze_clock(settings["frozen_time"])
    sys.stdout, sys.stderr = OUT, ERR
    sys.stdin = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")  # empty, as /dev/null
    _thread.stack_size(THREAD_STACK)
    sys.path[:0] = settings.get("python_paths", [])
    conn = wire.Connection(sock, SIDE, OPS)
    SIDE.conn = conn
    conn.extra, conn.on_message = SIDE.outgoing, SIDE.incoming
    try:
        conn.serve_forever()
    except wire.Lost:
        pass
    os._exit(0)
