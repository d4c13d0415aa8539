"""ToolAPI's state check: a one-to-one typed projection, compared by type, and a service
that answers every request, even one whose reply it cannot encode."""

from __future__ import annotations

import copy
import datetime
import importlib.util
import json
import math
import socket
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from environments.toolapi._grading import same_value, state_differences

ROOT = Path(__file__).resolve().parents[3]


def _server() -> ModuleType:
    path = ROOT / "images" / "toolapi" / "toolapi" / "server.py"
    spec = importlib.util.spec_from_file_location("toolapi_server_typed", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SERVER = _server()


def wire(value: Any) -> Any:
    """A backend value as the host reads it: projected by the service, sent as JSON."""
    return json.loads(json.dumps(SERVER.plain(value), ensure_ascii=False))


class Account:
    def __init__(self, **attrs: Any) -> None:
        self.__dict__.update(attrs)


def test_bools_are_never_numbers() -> None:
    assert not same_value(wire(True), wire(1))
    assert not same_value(wire(1.0), wire(True))
    assert not same_value(wire(False), wire(0))
    assert not same_value(wire([True, 2]), wire([1, 2]))
    assert state_differences({"C": {"flag": 1}}, {"C": {"flag": True}}) == {
        "C": {"flag": {"agent": 1, "gold": True}}
    }


def test_numbers_compare_by_value_across_int_and_float() -> None:
    # The one deliberate tolerance: JSON has one number type, and an agent's 150 for the
    # gold's 150.0 is often stored as sent (BFCL's == calls them equal too).
    assert same_value(wire(2), wire(2.0))
    assert same_value(wire({"price": 150}), wire({"price": 150.0}))
    assert not same_value(wire(2), wire(2.5))
    assert not same_value(wire(2**53 + 1), wire(float(2**53)))  # exactly, never rounded
    assert not same_value(wire("2"), wire(2))


def test_set_members_and_dict_pairs_match_in_any_order_by_value() -> None:
    # The service sorts members by their JSON text: 1e+20 after 15, 100000000000000000000
    # before it. Python (and BFCL's ==) call these equal.
    assert same_value(wire({10**20, 15}), wire({1e20, 15}))
    assert same_value(wire({10**16: "x", 15: "y"}), wire({1e16: "x", 15: "y"}))
    inner = frozenset({frozenset({10**20, 3}), 7})
    assert same_value(wire(inner), wire(frozenset({frozenset({1e20, 3}), 7})))
    assert same_value(wire([{10**20, 15}]), wire([{1e20, 15}]))
    # still typed and counted: a bool is no number, a repeat no other member
    assert not same_value(wire({True, 2}), wire({1, 2}))
    assert not same_value(wire({10**20, 15}), wire({1e20, 16}))
    assert not same_value(wire({10**16: "x", 15: "y"}), wire({1e16: "y", 15: "x"}))
    two = {"__set__": [{"__class__": "A", "n": 1}, {"__class__": "A", "n": 1}]}
    assert not same_value(
        two, {"__set__": [{"__class__": "A", "n": 1}, {"__class__": "A", "n": 2}]}
    )
    assert not same_value(wire({"__set__": [15, 10**20]}), wire({1e20, 15}))  # a text key


# Each pair: a backend dict (or list) spelled like a tag, and the value the tag stands for.
LOOKALIKES: list[tuple[Any, Any]] = [
    ({"__set__": ["a", "b"]}, {"a", "b"}),
    ({"__tuple__": [1, 2]}, (1, 2)),
    ([1, 2], (1, 2)),
    ({"__dict__": [[1, "a"]]}, {1: "a"}),
    ({"__float__": "inf"}, math.inf),
    ({"__float__": "nan"}, math.nan),
    ({"__int__": hex(10**5000)}, 10**5000),
    ({"__repr__": repr(datetime.date(2024, 1, 2))}, datetime.date(2024, 1, 2)),
    ({"__class__": "Account", "balance": 5}, Account(balance=5)),
]


@pytest.mark.parametrize(("lookalike", "real"), LOOKALIKES, ids=lambda v: type(v).__name__)
def test_a_value_spelled_like_a_tag_is_never_the_tagged_value(lookalike: Any, real: Any) -> None:
    assert wire(lookalike) != wire(real)
    assert not same_value(wire(lookalike), wire(real))
    diff = state_differences({"C": {"x": wire(lookalike)}}, {"C": {"x": wire(real)}})
    assert list(diff["C"]) == ["x"]


def test_escaped_keys_stay_apart_from_each_other_and_from_plain_keys() -> None:
    keys = ["__set__", "___set__", "____set__", "_set", "set", "__"]
    projected = [json.dumps(wire({k: 1}), sort_keys=True) for k in keys]
    assert len(set(projected)) == len(keys)
    assert wire({"_private": 1, "name": 2}) == {"_private": 1, "name": 2}


def test_a_cycle_is_not_a_dict_spelled_like_one() -> None:
    node = Account(name="root")
    node.parent = node
    real = wire(node)
    assert real["parent"] == {"__cycle__": "Account"}
    fake = wire(Account(name="root", parent={"__cycle__": "Account"}))
    assert not same_value(fake, real)


def test_equal_values_are_still_equal_whatever_their_order() -> None:
    value = {
        "b": [1, 2.5, None, "x", True],
        "a": {3, 1, 2},
        "t": (1, "two"),
        "k": {1: "a", "1": "b"},
        "o": Account(items=[{"q": 1}], when=datetime.date(2024, 1, 2)),
        "__odd__": math.inf,
    }
    again = copy.deepcopy(value)
    reordered = dict(reversed(list(again.items())))
    assert same_value(wire(value), wire(reordered))
    assert state_differences({"C": wire(value)}, {"C": wire(reordered)}) == {}


def test_a_missing_attribute_or_class_differs() -> None:
    assert state_differences({"C": {}}, {"C": {"x": None}}) == {
        "C": {"x": {"agent": None, "gold": None}}
    }
    assert state_differences({}, {"C": {"x": 1}}) == {"C": {"agent": None, "gold": {"x": 1}}}


# -- the service answers whatever the state holds ----------------------------------------


def ask(backend: Any, request: dict[str, Any]) -> dict[str, Any]:
    """One request through the service's own reader and writer, over a socket pair."""
    mine, theirs = socket.socketpair()
    with mine, theirs:
        mine.sendall(json.dumps(request).encode() + b"\n")
        SERVER._answer(backend, theirs)
        theirs.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := mine.recv(1 << 16):
            data += chunk
    reply = json.loads(data)
    assert isinstance(reply, dict)
    return reply


def loaded(home: Path, **attrs: Any) -> Any:
    backend = SERVER.Backend(str(home))
    backend.instances = {"Account": Account(**attrs)}
    backend.loaded = True
    return backend


def test_a_state_json_cannot_carry_gets_an_error_reply_and_the_service_goes_on(
    tmp_path: Path,
) -> None:
    backend = loaded(tmp_path, name="\ud800")  # a lone surrogate: no UTF-8 for it
    reply = ask(backend, {"op": "checkpoint"})
    assert reply["ok"] is False and "UnicodeEncodeError" in reply["error"]
    backend.instances["Account"].name = "fine"
    assert ask(backend, {"op": "checkpoint"}) == {
        "ok": True,
        "state": {"Account": {"__class__": "Account", "name": "fine"}},
        "results": [],
    }


def test_an_int_past_pythons_digit_limit_is_tagged_not_fatal(tmp_path: Path) -> None:
    reply = ask(loaded(tmp_path, big=10**5000), {"op": "checkpoint"})
    assert reply["ok"] is True
    assert int(reply["state"]["Account"]["big"]["__int__"], 16) == 10**5000


def test_an_error_whose_text_cannot_be_written_is_named_by_its_type(tmp_path: Path) -> None:
    class Unprintable(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no text")

    class Broken:
        __slots__ = ()  # no attributes: projected by its repr

        def __repr__(self) -> str:
            raise Unprintable()

    reply = ask(loaded(tmp_path, thing=Broken()), {"op": "checkpoint"})
    assert reply == {"ok": False, "error": "Unprintable"}
