"""The boundary between the checker and the checked code: one value codec, one message loop.

Standard library only; imported by both sides of a grading: the trusted test process
(the checker, which runs the hidden checks) and the worker (the only process that imports
the code under test). Nothing crosses between them but JSON lines over one socket:

* values of exact types (see ``VALUE_TYPES``) cross as tagged copies;
* any other object stays where it lives and crosses as a numbered handle (``o``: an
  object of the sender, ``p``: an object of the receiver, sent back);
* exceptions cross as their class (a builtin by name, another class as a handle),
  their arguments and their text.

Mutable containers passed to a call are copied in and, when the call changed them,
copied back into the caller's objects when the call returns (``back``).
"""

import _thread
import collections
import os
import select
import sys
import time

MAX_DEPTH = 64
MAX_ITEMS = 100_000
MAX_MESSAGE = 64 << 20
MAX_ANSWER = 8 << 20
"""The largest message the checker reads from the worker (bytes of JSON)."""
MAX_TEST_BYTES = 64 << 20
"""What the checker reads from the worker within one test, all messages together."""
MAX_OUTPUT = 1 << 20
"""What the worker sends of its code's printed output with one message, per stream, in
bytes of the message's JSON (`escaped_size`: up to 12 per character). The worker's own
cap, strictly inside the checker's limits with room for the answer (two streams take at
most a quarter of `MAX_ANSWER`): the worker is the code's process, so the checker does
not rely on it."""
MAX_TEST_OUTPUT = 16 << 20
"""What the worker sends of its code's printed output within one test, both streams, in
bytes of JSON: a quarter of `MAX_TEST_BYTES`, so that a correct solution printing on
every call of a long check is cut, never failed by the checker's bound (the checker
marks a new test on its next message: ``"test": true``)."""
MAX_SESSION_OUTPUT = 32 << 20
"""Characters of the worker's output the checker prints over a grading, per stream: pytest
keeps every test's captured output to the end, so only a bound over the session bounds
the checker's memory."""
MAX_EXPANDED = 16 << 20
"""What one decoded value may stand for: its items and characters, shared parts counted
each time they are reached (`expanded`). The wire keeps aliases, so a few hundred bytes
can stand for gigabytes once a check turns the value into a list or a text."""
MAX_HELD = 20_000
"""Objects of the checker one worker may hold handles to (callbacks, exceptions...)."""
MAX_SAID = 64 << 10
"""What the checker keeps of an exception's text or of each of its text arguments."""
MAX_CLASSES = 10_000
"""Classes of the code the checker mirrors: per worker generation, and kept across them."""
WATCH_AFTER = 0.5
"""Seconds a request may wait before the container's wait for a CPU (`Starving`) is read
from then on: a request's timeout is charged in the grading container's CPU time
(`container_cpu`) and in wall-clock time less what the container's tasks waited, ready to
run, for a CPU, so that a loaded host is not the code's time (a correct solution at half
its limit failed under six busy loops on the host, and at a quarter of a CPU). A quick
request never scans ``/proc``."""
SLICE = 0.25
"""Seconds between two readings of the CPU spent while a wait goes on."""
_CPU_USAGE = (
    ("/sys/fs/cgroup/cpuacct/cpuacct.usage", b"", 1e-9),  # cgroup v1: ns
    ("/sys/fs/cgroup/cpu.stat", b"usage_usec ", 1e-6),  # cgroup v2
)
_cpu = {"pid": None, "fd": None, "key": b"", "unit": 0.0}


def container_cpu():
    """CPU seconds this container's processes have spent so far (None: unknown).

    The kernel's count for the container's cgroup: every process of the grading, the
    code under test's children and threads included. Read through a descriptor opened
    once per process.
    """
    if _cpu["pid"] != os.getpid():
        _cpu.update(pid=os.getpid(), fd=None)
        for path, key, unit in _CPU_USAGE:
            try:
                _cpu.update(fd=os.open(path, os.O_RDONLY | os.O_CLOEXEC), key=key, unit=unit)
                break
            except OSError:
                continue
    if _cpu["fd"] is None:
        return None
    try:
        text = os.pread(_cpu["fd"], 4096, 0)
    except OSError:
        return None
    start = text.find(_cpu["key"]) if _cpu["key"] else 0
    if start < 0:
        return None
    digits = text[start + len(_cpu["key"]) :].split(b"\n", 1)[0].strip()
    return int(digits) * _cpu["unit"] if digits.isdigit() else None


VALUE_TYPES = (
    "None, bool, int, float, complex, str, bytes, bytearray, list, tuple, set, frozenset, "
    "dict, range, slice, Ellipsis, NotImplemented, fractions.Fraction, decimal.Decimal, "
    "datetime.date/datetime/time/timedelta/timezone, pathlib.PurePosixPath/PosixPath, "
    "collections.Counter/OrderedDict/defaultdict/deque, and type objects of builtins and "
    "of these types (by name)"
)
"""What crosses as a value (exact types only; subclasses cross as handles)."""


class NotPrimitive(TypeError):
    """A value of a type that cannot cross the boundary as a value."""


class Lost(BaseException):
    """The peer ended, closed its end, broke the protocol or ran out of time.

    A BaseException so that ``except Exception`` in checked code cannot swallow it.
    """

    def __init__(self, why, detail):
        super().__init__(f"{why}: {detail}")
        self.why, self.detail = why, detail


# -- JSON text ---------------------------------------------------------------------------


def _not_json(obj):
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


class _Decoding:
    """What json's C scanner reads of its decoder: json.loads's defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float  # NaN, Infinity, -Infinity


def _c_codec():
    """The C scanner and encoder factory of json, if this Python has them as 3.11 has.

    The json package imports re and compiles its patterns: milliseconds in each of a
    grading's processes. The C functions are what json.loads and json.dumps run; checked
    on a sample here, else (another Python) the package is used.
    """
    try:
        import _json

        scan = _json.make_scanner(_Decoding())

        def encoder(sort_keys):  # a fresh one per text: its circularity markers too
            return _json.make_encoder(
                {},
                _not_json,
                _json.encode_basestring_ascii,
                None,
                ":",
                ",",
                sort_keys,
                False,
                True,
            )

        sample = '{"b":[1,2.5,"\\u00e9",null,true,NaN],"a":{}}'
        value, end = scan(sample, 0)
        if end != len(sample) or "".join(encoder(False)(value, 0)) != sample:
            return None, None
        return scan, encoder
    except Exception:
        return None, None


_SCAN, _ENCODER = _c_codec()
_BLANK = " \t\n\r"


def dumps(obj, sort_keys=False):
    """``json.dumps(obj, separators=(",", ":"), sort_keys=sort_keys)``."""
    if _ENCODER is None:
        import json

        return json.dumps(obj, separators=(",", ":"), sort_keys=sort_keys)
    return "".join(_ENCODER(sort_keys)(obj, 0))


def loads(text):
    """``json.loads(text)``: one JSON value between blanks, else ValueError.

    Also ValueError for a value nested past the recursion limit (json: RecursionError).
    """
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", "surrogatepass")
    try:
        if _SCAN is None:
            import json

            return json.loads(text)
        start = len(text) - len(text.lstrip(_BLANK))
        value, end = _SCAN(text, start)
    except StopIteration:
        raise ValueError(f"no JSON value at {start}: {text[start : start + 40]!r}") from None
    except RecursionError:  # the scanner recurses per level: a peer's text, not our crash
        raise ValueError("a JSON value nested deeper than the recursion limit") from None
    if text[end:].strip(_BLANK):
        raise ValueError(f"extra data at {end}: {text[end : end + 40]!r}")
    return value


# -- values ------------------------------------------------------------------------------


class Memo:
    """Mutable containers of one message, numbered, so aliasing and changes survive."""

    def __init__(self, start=0):
        self.ids, self.objs, self.next = {}, {}, start
        self.keep = []  # encoded objects stay alive while their id() is a key

    def add(self, obj, key=None):
        key = self.next if key is None else key
        self.next = max(self.next, key + 1)
        self.ids[id(obj)], self.objs[key] = key, obj
        self.keep.append(obj)
        return key


_MUTABLE = ("list", "dict", "set", "bytearray", "Counter", "OrderedDict", "defaultdict", "deque")
_TYPE_NAMES = (
    "fractions:Fraction",
    "decimal:Decimal",
    "datetime:date",
    "datetime:datetime",
    "datetime:time",
    "datetime:timedelta",
    "datetime:timezone",
    "pathlib:PurePosixPath",
    "pathlib:PosixPath",
    "pathlib:Path",
    "collections:Counter",
    "collections:OrderedDict",
    "collections:defaultdict",
    "collections:deque",
)
_ORIGINAL = {}
"""datetime's own date and datetime classes, once `freeze_clock` has replaced them."""


def _loaded(module, name):
    """``module.name`` if this process has imported ``module``, else None.

    No value of fractions', decimal's, datetime's or pathlib's types can exist in a
    process before their module is imported, so the codec checks types against imported
    modules only: neither side pays for importing them at start (about 20 ms of each
    grading process). A module is imported when a value of it has to be built (decoding,
    projections); the checker's path holds no project folder, and its finder leaves standard
    names alone, so that import is always the standard library's.
    """
    return getattr(sys.modules.get(module), name, None)


def _is(t, name):
    """Whether t is datetime's class ``name`` (the original or a frozen stand-in)."""
    return t is _ORIGINAL.get(name) or t is _loaded("datetime", name)


def type_name(t):
    """``module:qualname`` of a type that crosses by name, else None."""
    import builtins

    if isinstance(t, type) and getattr(builtins, t.__name__, None) is t:
        return "builtins:" + t.__name__
    for name in _TYPE_NAMES:
        mod, _, qual = name.partition(":")
        if _is(t, qual) if mod == "datetime" else t is _loaded(mod, qual):
            return name
    return None


def named_type(name):
    """The type a ``module:qualname`` stands for on this side."""
    import builtins

    mod, _, qual = name.partition(":")
    if mod == "builtins":
        t = getattr(builtins, qual, None)
    elif name in _TYPE_NAMES:
        t = getattr(_std(mod), qual)
    else:
        t = None
    if not isinstance(t, type):
        raise ValueError(f"unknown type {name!r}")
    return t


def _tz(tz):
    datetime = _std("datetime")
    if tz is None:
        return None
    if type(tz) is not datetime.timezone:
        raise NotPrimitive("only fixed-offset time zones cross as values")
    off = tz.utcoffset(None)
    name = tz.tzname(None)
    default = datetime.timezone(off).tzname(None)
    return [off.days, off.seconds, off.microseconds, None if name == default else name]


def _untz(v):
    datetime = _std("datetime")
    if v is None:
        return None
    off = datetime.timedelta(v[0], v[1], v[2])
    return datetime.timezone(off) if v[3] is None else datetime.timezone(off, v[3])


def _encode_scalar(value, t):
    """Tagged JSON of a scalar value, or None when t is not a scalar type."""
    if value is None or t is bool or t is str:
        return {"t": t.__name__, "v": value}
    if t is int:
        return {"t": "int", "v": format(value, "x")}  # hex: no 4300-digit str() limit
    if t is float:
        return {"t": "float", "v": repr(value)}
    if t is complex:
        return {"t": "complex", "v": [repr(value.real), repr(value.imag)]}
    if t is bytes:
        return {"t": "bytes", "v": value.hex()}
    if t is _loaded("fractions", "Fraction"):
        return {
            "t": "Fraction",
            "v": [format(value.numerator, "x"), format(value.denominator, "x")],
        }
    if t is _loaded("decimal", "Decimal"):
        return {"t": "Decimal", "v": str(value)}
    if _is_path(t):
        return {"t": "path", "k": t.__name__, "v": str(value)}
    if t is range:
        return {"t": "range", "v": [format(x, "x") for x in (value.start, value.stop, value.step)]}
    if value is Ellipsis or value is NotImplemented:
        return {"t": "singleton", "v": "Ellipsis" if value is Ellipsis else "NotImplemented"}
    return _encode_time(value, t)


def _encode_time(value, t):
    if _is(t, "datetime"):
        parts = [value.year, value.month, value.day, value.hour, value.minute, value.second]
        return {
            "t": "datetime",
            "v": [*parts, value.microsecond, value.fold],
            "z": _tz(value.tzinfo),
        }
    if _is(t, "date"):
        return {"t": "date", "v": [value.year, value.month, value.day]}
    if t is _loaded("datetime", "time"):
        parts = [value.hour, value.minute, value.second, value.microsecond, value.fold]
        return {"t": "time", "v": parts, "z": _tz(value.tzinfo)}
    if t is _loaded("datetime", "timedelta"):
        return {"t": "timedelta", "v": [value.days, value.seconds, value.microseconds]}
    if t is _loaded("datetime", "timezone"):
        return {"t": "timezone", "v": _tz(value)}
    return None


def _is_path(t):
    return t is _loaded("pathlib", "PurePosixPath") or t is _loaded("pathlib", "PosixPath")


def _items(value, t):
    if t in (dict, collections.Counter, collections.OrderedDict, collections.defaultdict):
        return list(dict.items(value))
    if t is bytearray:
        return None
    return list(value)


def encode(value, side=None, memo=None, depth=0):
    """Encode a value into tagged JSON.

    Without ``side`` only values cross (anything else raises NotPrimitive); with it,
    other objects cross as handles. With ``memo``, mutable containers are numbered.
    """
    if depth > MAX_DEPTH:
        raise NotPrimitive("value nested too deeply")
    t = type(value)
    if memo is not None and t.__name__ in _MUTABLE and id(value) in memo.ids:
        if _container_tag(t) is not None:
            return {"t": "m", "v": memo.ids[id(value)]}
    out = _encode_scalar(value, t)
    if out is not None:
        return out
    tag = _container_tag(t)
    if tag is not None:
        key = memo.add(value) if memo is not None and tag in _MUTABLE else None
        out = encode_contents(value, side, memo, depth)
        if key is not None:
            out["m"] = key
        return out
    if t is slice:
        parts = (value.start, value.stop, value.step)
        return {"t": "slice", "v": [encode(x, side, memo, depth + 1) for x in parts]}
    if isinstance(value, type) and type_name(value) is not None:
        return {"t": "type", "v": type_name(value)}
    if side is None:
        raise NotPrimitive(f"a value of type {t.__module__}.{t.__qualname__} cannot be checked")
    return side.encode_object(value)


def _container_tag(t):
    if t in (list, tuple, set, frozenset, dict, bytearray):
        return t.__name__
    if t in (collections.Counter, collections.OrderedDict, collections.defaultdict):
        return t.__name__
    if t is collections.deque:
        return "deque"
    return None


def encode_contents(value, side=None, memo=None, depth=0):
    """Tagged JSON of a container, its children encoded with the memo's references."""
    t = type(value)
    tag = _container_tag(t)
    if t is bytearray:
        return {"t": tag, "v": bytes(value).hex()}
    items = _items(value, t)
    if len(items) > MAX_ITEMS:
        raise NotPrimitive("collection too large")
    if tag in ("list", "tuple", "set", "frozenset", "deque"):
        out = {"t": tag, "v": [encode(v, side, memo, depth + 1) for v in items]}
        if tag == "deque" and value.maxlen is not None:
            out["n"] = value.maxlen
        return out
    pairs = [[encode(k, side, memo, depth + 1), encode(v, side, memo, depth + 1)] for k, v in items]
    out = {"t": tag, "v": pairs}
    if tag == "defaultdict":
        out["f"] = encode(value.default_factory, side, memo, depth + 1)
    return out


def expanded(*values):
    """Items and characters the values stand for, shared parts counted every time.

    Linear in what was decoded (each container is walked once, its total remembered); a
    container met again on its own path counts one (``repr`` prints it as ``[...]``).

    Raises:
        Lost: more than `MAX_EXPANDED` (``oversize``: the code's resource limit).
    """
    totals = {}

    def walk(value, path):
        t = type(value)
        if t is str or t is bytes or t is bytearray:
            return 1 + len(value)
        if t is int:
            return 1 + value.bit_length() // 3
        if t is range:
            return 1 + max(0, (value.stop - value.start) // (value.step or 1))
        if t is slice:
            return 1 + sum(walk(x, path) for x in (value.start, value.stop, value.step))
        tag = _container_tag(t)
        if tag is None:
            return 1
        key = id(value)
        if key in totals:
            return totals[key]
        if key in path:
            return 1
        path.add(key)
        total = 1
        pairs = dict.items(value) if tag in _DICTS else ((x, None) for x in value)
        for k, v in pairs:
            total += walk(k, path) + (0 if v is None else walk(v, path))
            if total > MAX_EXPANDED:
                raise Lost("oversize", f"a value standing for more than {MAX_EXPANDED} items")
        path.discard(key)
        totals[key] = total
        return total

    total = sum(walk(v, set()) for v in values)
    if total > MAX_EXPANDED:
        raise Lost("oversize", f"a value standing for more than {MAX_EXPANDED} items")
    return total


MAX_FRACTION_DIGITS = 20_000
"""Hex digits of a Fraction's numerator or denominator: building one reduces it by their
gcd, quadratic in their size (minutes for megabytes, in C, past any timer)."""


def _fraction(numerator, denominator):
    if len(numerator) > MAX_FRACTION_DIGITS or len(denominator) > MAX_FRACTION_DIGITS:
        raise Lost("oversize", f"a Fraction over {MAX_FRACTION_DIGITS} hex digits")
    return _std("fractions").Fraction(int(numerator, 16), int(denominator, 16))


def _std(name):
    """A standard-library module, imported on first use (see `_loaded`)."""
    module = sys.modules.get(name)
    return module if module is not None else __import__(name)


_SCALAR_DECODERS = {
    "NoneType": lambda o: None,
    "bool": lambda o: bool(o["v"]),
    "str": lambda o: str(o["v"]),
    "int": lambda o: int(o["v"], 16),
    "float": lambda o: float(o["v"]),
    "complex": lambda o: complex(float(o["v"][0]), float(o["v"][1])),
    "bytes": lambda o: bytes.fromhex(o["v"]),
    "Fraction": lambda o: _fraction(*o["v"]),
    "Decimal": lambda o: _std("decimal").Decimal(o["v"]),
    "path": lambda o: getattr(
        _std("pathlib"), {"PosixPath": "PosixPath"}.get(o["k"], "PurePosixPath")
    )(o["v"]),
    "range": lambda o: range(*(int(x, 16) for x in o["v"])),
    "singleton": lambda o: {"Ellipsis": Ellipsis, "NotImplemented": NotImplemented}[o["v"]],
    "date": lambda o: _std("datetime").date(*o["v"]),
    "datetime": lambda o: _std("datetime").datetime(
        *o["v"][:7], tzinfo=_untz(o["z"]), fold=o["v"][7]
    ),
    "time": lambda o: _std("datetime").time(*o["v"][:4], tzinfo=_untz(o["z"]), fold=o["v"][4]),
    "timedelta": lambda o: _std("datetime").timedelta(*o["v"]),
    "timezone": lambda o: _untz(o["v"]),
    "type": lambda o: named_type(o["v"]),
}


def decode(obj, side=None, memo=None, depth=0):
    """Decode tagged JSON back into values (and, with a side, handles)."""
    if depth > MAX_DEPTH or not isinstance(obj, dict):
        raise ValueError("malformed value")
    t = obj.get("t")
    if t in _SCALAR_DECODERS:
        return _SCALAR_DECODERS[t](obj)
    if t == "m" and memo is not None:
        return memo.objs[obj["v"]]
    if t == "slice":
        return slice(*(decode(x, side, memo, depth + 1) for x in obj["v"]))
    if t in ("o", "p") and side is not None:
        return side.decode_object(obj)
    if t in _CONTAINERS:
        return _CONTAINERS[t](obj, side, memo, depth)
    raise ValueError(f"unknown tag {t!r}")


def _new_container(obj, side, memo, depth):
    """An empty container of the tagged type (registered before its children: cycles)."""
    t = obj["t"]
    if t == "defaultdict":
        return collections.defaultdict(decode(obj["f"], side, memo, depth + 1))
    if t == "deque":
        return collections.deque(maxlen=obj.get("n"))
    return {"list": list, "dict": dict, "set": set, "Counter": collections.Counter}.get(
        t, collections.OrderedDict
    )()


def fill(container, obj, side=None, memo=None, depth=0):
    """Replace a container's contents, in place, with the tagged contents ``obj``."""
    if type(container) is bytearray:
        return _replace(container, bytes.fromhex(obj["v"]))
    if obj["t"] in ("list", "set", "deque"):
        return _replace(container, [decode(x, side, memo, depth + 1) for x in obj["v"]])
    pairs = [
        (decode(k, side, memo, depth + 1), decode(v, side, memo, depth + 1)) for k, v in obj["v"]
    ]
    return _replace(container, pairs)


def _replace(container, items):
    """Replace a container's contents, in place: its values, or a dict's (key, value) pairs."""
    t = type(container)
    if t is bytearray:
        container[:] = items
    elif t is list:
        list.__setitem__(container, slice(None), items)
    elif isinstance(container, dict):
        container.clear()
        for k, v in items:
            container[k] = v
    else:
        container.clear()
        (container.update if t is set else container.extend)(items)
    return container


def _contents(container):
    """A shallow copy of a container's contents, as `_replace` takes them back."""
    return list(dict.items(container)) if isinstance(container, dict) else list(container)


def _decode_mutable(obj, side, memo, depth):
    if obj["t"] == "bytearray":
        value = bytearray()
    else:
        value = _new_container(obj, side, memo, depth)
    if memo is not None and "m" in obj:
        memo.add(value, obj["m"])
    return fill(value, obj, side, memo, depth)


def _decode_immutable(obj, side, memo, depth):
    items = [decode(x, side, memo, depth + 1) for x in obj["v"]]
    return tuple(items) if obj["t"] == "tuple" else frozenset(items)


_CONTAINERS = {name: _decode_mutable for name in _MUTABLE}
_CONTAINERS.update(tuple=_decode_immutable, frozenset=_decode_immutable)


# -- plain values (what a check may be decided on) --------------------------------------

VALUE_BASES = frozenset(
    [
        "builtins:" + n
        for n in "int float complex str bytes bytearray list tuple set frozenset dict".split()
    ]
    + [n for n in _TYPE_NAMES if n != "datetime:timezone"]
)
"""Types whose subclasses have a plain projection: the copy of the value they extend."""


def is_plain(value, depth=0, path=None, done=None):
    """Whether a value is made of exact value types only (no handle, no other object).

    Containers are walked to the end (``MAX_DEPTH`` levels); a container that holds
    itself is plain when everything else in it is. A container found plain is not
    walked again (``done``, by id, while the value holds it): a value can share its
    parts (the wire keeps aliases), and walking each path again would take time
    exponential in its depth.
    """
    t = type(value)
    if depth > MAX_DEPTH:
        return False
    if t is slice:
        return all(
            is_plain(x, depth + 1, path, done) for x in (value.start, value.stop, value.step)
        )
    if isinstance(value, type):
        return type_name(value) is not None
    tag = _container_tag(t)
    if tag is None:
        return _is_scalar(value, t)
    path = set() if path is None else path
    done = set() if done is None else done
    if id(value) in path or id(value) in done:
        return True
    path.add(id(value))
    try:
        if tag == "bytearray":
            plain = True
        elif tag == "defaultdict" and not is_plain(value.default_factory, depth + 1, path, done):
            plain = False
        else:
            pairs = dict.items(value) if tag in _DICTS else ((x, None) for x in value)
            plain = all(
                is_plain(k, depth + 1, path, done) and is_plain(v, depth + 1, path, done)
                for k, v in pairs
            )
    finally:
        path.discard(id(value))
    if plain:
        done.add(id(value))
    return plain


_DICTS = ("dict", "Counter", "OrderedDict", "defaultdict")
_SCALARS = (type(None), bool, int, float, complex, str, bytes, range)


def _is_scalar(value, t):
    """Whether a value of exact type t crosses as a scalar (what `_encode_scalar` takes)."""
    if t in _SCALARS or value is Ellipsis or value is NotImplemented:
        return True
    if t is _loaded("fractions", "Fraction") or t is _loaded("decimal", "Decimal"):
        return True
    if _is_path(t) or t is _loaded("datetime", "timedelta"):
        return True
    if _is(t, "datetime") or t is _loaded("datetime", "time"):
        return _fixed_zone(value.tzinfo)
    return _is(t, "date") or (t is _loaded("datetime", "timezone"))


def _fixed_zone(tz):
    return tz is None or type(tz) is _std("datetime").timezone


# -- exceptions ---------------------------------------------------------------------------


def clean_text(text):
    """``text`` with any lone surrogate replaced: it encodes as UTF-8 wherever it goes."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def escaped_size(text):
    """Bytes ``text`` takes in a message: its JSON string (ASCII, escaped), less quotes."""
    return len(dumps(text)) - 2


def cut_to_size(text, size):
    """The longest prefix of ``text`` whose `escaped_size` is at most ``size``.

    Each character takes 1 to 12 bytes, so the prefix is found by bisection in
    O(n log n) escaping of at most ``size`` characters.
    """
    text = text[:size]
    low, high = 0, len(text)
    while low < high:
        mid = (low + high + 1) // 2
        if escaped_size(text[:mid]) <= size:
            low = mid
        else:
            high = mid - 1
    return text[:low]


def safe_text(fn, obj, limit=2000):
    try:
        text = fn(obj)
        return text[:limit] if type(text) is str else "<not a str>"
    except BaseException:  # a __str__ or __repr__ that raises or exits
        return "<unprintable>"


def _exception_args(exc):
    args = list(BaseException.__getattribute__(exc, "args"))
    if isinstance(exc, OSError) and type(exc).__module__ == "builtins" and exc.filename is not None:
        args = [exc.errno, exc.strerror, exc.filename]  # the file name is not in args
        if exc.filename2 is not None:
            args += [None, exc.filename2]
    return args


def encode_exception(exc, side):
    """An exception as its class, arguments, text and (where it lives) its object."""
    try:
        args = encode(_exception_args(exc), side)
    except (NotPrimitive, ValueError, RecursionError):
        args = encode([safe_text(str, exc)])
    out = {"cls": encode(type(exc), side), "args": args, "str": safe_text(str, exc)}
    out["base"] = next(
        type_name(c) for c in type(exc).__mro__ if (type_name(c) or "").startswith("builtins:")
    )
    try:
        out["obj"] = encode(exc, side) if side is not None else None
    except NotPrimitive:
        out["obj"] = None
    if isinstance(exc, SystemExit):
        try:
            out["code"] = encode(exc.code)
        except NotPrimitive:
            out["code"] = encode(1)
    return out


# -- the message loop --------------------------------------------------------------------


def starved():
    """Seconds this container's tasks have waited, ready to run, for a CPU (None: unknown).

    The sum of every thread's ``run_delay`` (``/proc/PID/task/TID/schedstat``): the
    host's other work, a stall of the container's quota. The tasks that ended are not
    counted, so the sum can go down; only its growth is read, and never more of it
    than the time that passed.
    """
    total, seen = 0, False
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return None
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat", "rb") as fh:
                    total += int(fh.read().split()[1])
            except (OSError, ValueError, IndexError):
                continue
            seen = True
    return total * 1e-9 if seen else None


class Starving:
    """Wall-clock time that counts: less what the container waited for a CPU meanwhile.

    Read from the moment it is asked to `watch` (a wait past `WATCH_AFTER`), so that a
    quick request never scans ``/proc``.
    """

    def __init__(self):
        self.last, self.excluded = None, 0.0

    def watch(self, now):
        """Exclude from ``now`` on the time the container's tasks waited for a CPU.

        Reads ``/proc`` at most once a `SLICE` of ``now``: callers may ask on every
        message they wait for.
        """
        if self.last is not None and now - self.last[0] < SLICE:
            return
        starved_now = starved()
        if self.last is not None and starved_now is not None:
            then, starved_then = self.last
            grown = max(0.0, starved_now - starved_then)
            self.excluded += min(grown, now - then)
        self.last = None if starved_now is None else (now, starved_now)


class Connection:
    """One end of the checker-worker socket: JSON lines, requests nest both ways.

    ``ops`` maps a request's ``op`` to a function of (connection, message, memo) that
    returns the result value; ``side`` encodes and decodes objects. ``timeout`` bounds
    what the peer may take of a request, across the nested requests it serves (None:
    wait forever): the container's CPU spent while this side waited, and the waiting
    less the container's wait for a CPU (`_wait`). A peer that keeps asking never holds a request
    much longer, and the time this side spends serving it is not the peer's.

    Threads share it one request at a time (a request holds it to its answer, its nested
    requests included) and one message at a time: the code under test may call back
    from threads of its own, a hidden test call the code from its own.
    """

    def __init__(self, sock, side, ops, timeout=None, limit=MAX_MESSAGE):
        sock.setblocking(False)
        self.lock = _thread.RLock()
        self.sock, self.side, self.ops, self.timeout = sock, side, ops, timeout
        self.limit = limit  # the largest message read
        self.budget = None  # bytes left to read until `reset_budget` (None: no bound)
        self.buf = bytearray()
        self.seq = 0
        self.depth = 0
        self.waited = None  # seconds waited for the peer in the outermost request under way
        self.charged = None  # CPU seconds the container spent meanwhile (`container_cpu`)
        self.starving = None  # what of the waiting was the container's wait for a CPU
        self.extra = None  # a function returning fields added to every message sent
        self.on_message = None  # a function called with every message received

    def reset_budget(self, total):
        """Allow ``total`` more bytes to be read (a new test starts); None: no bound."""
        self.budget = total

    # framing

    def send(self, msg):
        with self.lock:
            self._send(msg)

    def _send(self, msg):
        if self.extra is not None:
            msg.update(self.extra())
        data = dumps(msg).encode() + b"\n"
        view = memoryview(data)
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        while view:
            try:
                view = view[self.sock.send(view[: 1 << 20]) :]
                continue
            except BlockingIOError:
                pass
            except OSError as exc:
                raise Lost("ended", f"the channel closed ({exc.strerror})") from None
            self._wait([], [self.sock], deadline, "the peer stopped reading")

    def _wait(self, rlist, wlist, deadline, why):
        """Wait for the socket; past the request's budget, `Lost` ("timeout").

        Within a request the budget is ``timeout`` seconds twice over: of the container's
        CPU spent while this side waited (what burns is charged), and of the waiting
        less the time the container's tasks waited, ready to run, for a CPU (what waits
        on nothing is charged; the host's load is not). Without a CPU count (unknown
        cgroup), the waiting itself is charged, as wall-clock time.
        """
        wait = None if deadline is None else deadline - time.monotonic()
        cpu = container_cpu() if self.waited is not None else None
        if self.waited is not None:
            why = "no answer to the request in time"
            if self.charged >= self.timeout:
                unit = "s" if cpu is None else "s of CPU"
                raise Lost("timeout", f"{why} ({self.timeout:g}{unit})")
            if cpu is not None and self.waited >= WATCH_AFTER:  # slow: is it the host?
                self.starving.watch(self.waited)
            left = self.timeout - (self.waited - self.starving.excluded)
            if cpu is None:  # no CPU count: the waiting is charged
                left = min(left, self.timeout - self.charged)
            wait = left  # the request's budget bounds each of its waits
        if wait is not None and wait <= 0:
            raise Lost("timeout", f"{why} ({self.timeout:g}s)")
        start = time.monotonic()
        select.select(rlist, wlist, [], wait if cpu is None else min(wait, SLICE))
        if self.waited is not None:
            waited, after = time.monotonic() - start, container_cpu()
            self.waited += waited
            self.charged += waited if cpu is None or after is None else max(0.0, after - cpu)

    def recv(self):
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        while b"\n" not in self.buf:
            if len(self.buf) > self.limit:
                raise Lost("oversize", f"a message over {self.limit >> 20} MiB")
            try:
                chunk = self.sock.recv(1 << 20)
            except BlockingIOError:
                self._wait([self.sock], [], deadline, "no answer in time")
                continue
            except OSError as exc:
                raise Lost("ended", f"the channel closed ({exc.strerror})") from None
            if not chunk:
                raise Lost("ended", "the peer closed the channel")
            self._spend(len(chunk))
            self.buf += chunk
        line, _, rest = bytes(self.buf).partition(b"\n")
        self.buf = bytearray(rest)
        if len(line) > self.limit:
            raise Lost("oversize", f"a message over {self.limit >> 20} MiB")
        try:
            msg = loads(line)
        except (ValueError, MemoryError):
            raise Lost("protocol", f"a malformed message: {line[:80]!r}") from None
        if not isinstance(msg, dict):
            raise Lost("protocol", f"a message that is not an object: {line[:80]!r}")
        if self.on_message is not None:
            try:
                self.on_message(msg)
            except Exception as exc:  # fields the peer filled wrongly: its breach, not ours
                raise Lost("protocol", f"a malformed message ({type(exc).__name__})") from None
        return msg

    def _spend(self, n):
        if self.budget is None:
            return
        self.budget -= n
        if self.budget < 0:
            raise Lost("oversize", "more than the answers of one test may hold")

    # requests

    def request(self, op, fields=None, memo=None):
        """Send a request and wait for its answer, serving the peer's nested requests.

        With a ``timeout``, the answer must come before the peer has taken that much of
        the outermost request (`_wait`), whatever the peer asks meanwhile.
        """
        with self.lock:
            return self._request(op, fields, memo)

    def _request(self, op, fields, memo):
        self.seq += 1
        seq = self.seq
        outer, charged, starving = self.waited, self.charged, self.starving
        if self.timeout is not None and outer is None:
            self.waited, self.charged, self.starving = 0.0, 0.0, Starving()
        try:
            self.send({"q": seq, "op": op, **(fields or {})})
            while True:
                msg = self.recv()
                if "q" in msg:
                    self.serve(msg)
                elif msg.get("a") == seq:
                    return self._answer(msg, memo)
                else:
                    raise Lost("protocol", f"an answer to no question: {str(msg)[:80]}")
        finally:
            self.waited, self.charged, self.starving = outer, charged, starving

    def _bounded(self, *values):
        """`expanded`, on the checker's side only (``side.bounded``).

        What the checker sends the worker is its own, never refused there.
        """
        if getattr(self.side, "bounded", False):
            expanded(*values)

    def _answer(self, msg, memo):
        try:
            back = [
                (memo.objs[key], state)
                for key, state in msg.get("back") or ()
                if memo is not None and key in memo.objs
            ]
            bounded = getattr(self.side, "bounded", False)
            kept = [(mine, _contents(mine)) for mine, _ in back] if bounded else []
            filled = [fill(mine, state, self.side, memo) for mine, state in back]
            try:
                if "err" in msg:
                    exc = self.side.decode_exception(msg["err"])
                    self._bounded(exc.args, *filled)
                else:
                    value = decode(msg["ok"], self.side, memo)
                    self._bounded(value, *filled)
                    return value
            except Lost:
                for mine, contents in kept:  # a container of ours never keeps such a state
                    _replace(mine, contents)
                raise
        except Exception as exc:  # whatever the peer's answer makes decoding raise
            raise Lost("protocol", f"a malformed answer ({type(exc).__name__})") from None
        raise exc

    def serve(self, msg):
        """Answer one request of the peer (any exception becomes an error answer)."""
        seq, op = msg.get("q"), msg.get("op")
        fn = self.ops.get(op) if type(op) is str else None
        if fn is None or self.depth >= 200:  # refused: nothing of this process handed over
            refusal = RuntimeError(f"request {str(op)[:80]!r} refused")
            self.send({"a": seq, "err": encode_exception(refusal, None)})
            return
        memo = Memo()
        reply = {"a": seq}
        self.depth += 1
        try:
            result = fn(self, msg, memo)
            reply["back"] = changed(memo, self.side)  # before the result: it may refer to them
            reply["ok"] = encode(result, self.side, memo)
        except Lost:
            raise
        except BaseException as exc:  # the answer to this request is this exception
            reply.pop("ok", None)
            reply["back"] = changed(memo, self.side)
            reply["err"] = encode_exception(exc, self.side)
        finally:
            self.depth -= 1
        if not reply["back"]:
            del reply["back"]
        self.send(reply)

    def serve_forever(self):
        while True:
            with self.lock:  # not while serving: the code's threads may ask meanwhile
                msg = self.recv()
            if "q" not in msg:
                raise Lost("protocol", "an answer while idle")
            self.serve(msg)


def arguments(msg, side, memo):
    """Decode a request's ``args`` and ``kwargs``, remembering the containers' states.

    On the checker's side (``side.bounded``) they are the worker's: bounded by `expanded`.
    """
    args = [decode(x, side, memo) for x in msg.get("args", ())]
    kwargs = {str(k): decode(v, side, memo) for k, v in (msg.get("kwargs") or {}).items()}
    if getattr(side, "bounded", False):
        expanded(args, kwargs)
    memo.before = {key: _state(obj, side, memo) for key, obj in memo.objs.items()}
    return args, kwargs


def _state(obj, side, memo):
    try:
        return dumps(encode_contents(obj, side, memo), sort_keys=True)
    except (NotPrimitive, RecursionError):
        return None


def changed(memo, side):
    """[key, new contents] for each container of a request that the call changed."""
    before = getattr(memo, "before", None)
    out = []
    for key, old in (before or {}).items():
        try:
            now = _state(memo.objs[key], side, memo)
        except Exception:  # an object that cannot be described: its changes stay there
            continue
        if now is not None and now != old:
            out.append([key, loads(now)])
    return out


class Descriptor:
    """A connected socket as its bare descriptor: what `Connection` uses of a socket.

    The worker's end of the channel: the socket module's import (its enums) cost each
    worker about 7 ms of CPU, and the worker needs nothing of it but reads and writes.
    """

    def __init__(self, fd):
        self.fd = fd

    def fileno(self):
        return self.fd

    def setblocking(self, flag):
        os.set_blocking(self.fd, flag)

    def send(self, data):
        return os.write(self.fd, data)

    def recv(self, size):
        return os.read(self.fd, size)

    def close(self):
        os.close(self.fd)


def send_fd(sock, data, fd):
    """``socket.send_fds(sock, [data], [fd])`` on a bare ``_socket`` socket."""
    import _socket

    raw = fd.to_bytes(4, sys.byteorder, signed=True)
    sock.sendmsg([data], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, raw)])


def recv_fd(sock, size):
    """``socket.recv_fds(sock, size, 1)`` on a bare ``_socket`` socket: (data, fds)."""
    import _socket

    data, ancdata, _, _ = sock.recvmsg(size, _socket.CMSG_LEN(4))
    for level, kind, raw in ancdata:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS and len(raw) >= 4:
            return data, [int.from_bytes(raw[:4], sys.byteorder, signed=True)]
    return data, []


# -- a frozen clock for tasks that need one ---------------------------------------------


def freeze_clock(epoch):
    """Make time.time() and datetime's now/today/utcnow return one fixed instant.

    Called before any checked code is imported, so that a later ``from datetime import
    datetime`` gets the frozen class. Monotonic clocks stay real.
    """
    import datetime

    fixed = float(epoch)
    if not _ORIGINAL:  # called once; the originals, whatever happens to the module
        _ORIGINAL.update(date=datetime.date, datetime=datetime.datetime)
    time.time = lambda: fixed
    time.time_ns = lambda: int(fixed * 1_000_000_000)

    class FrozenDateTime(datetime.datetime):
        @classmethod
        def now(cls, tz=None):
            return cls.fromtimestamp(fixed, tz)

        @classmethod
        def utcnow(cls):
            return cls.fromtimestamp(fixed, datetime.UTC).replace(tzinfo=None)

        @classmethod
        def today(cls):
            return cls.fromtimestamp(fixed)

    class FrozenDate(datetime.date):
        @classmethod
        def today(cls):
            return cls.fromtimestamp(fixed)

    FrozenDateTime.__name__ = FrozenDateTime.__qualname__ = "datetime"
    FrozenDate.__name__ = FrozenDate.__qualname__ = "date"
    FrozenDateTime.__module__ = FrozenDate.__module__ = "datetime"
    datetime.datetime, datetime.date = FrozenDateTime, FrozenDate


def environment(extra=None):
    """The scrubbed environment every process of the grading gets."""
    env = {
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TZ": "UTC",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "BOXGYM_RUNNER_DIR": os.path.dirname(os.path.abspath(__file__)),
    }
    env.update(extra or {})
    return env
