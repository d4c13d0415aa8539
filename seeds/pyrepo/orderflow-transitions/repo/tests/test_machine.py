import pytest

from orderflow import InvalidTransition, Order


def test_happy_path():
    order = Order("A1")
    for event in ("pay", "ship", "deliver", "refund"):
        order.apply(event)
    assert order.state == "refunded"
    assert order.history[0] == ("pay", "pending", "paid")
    assert len(order.history) == 4


def test_cancel_pending():
    order = Order("A2")
    assert order.apply("cancel") == "cancelled"


def test_cannot_ship_unpaid():
    order = Order("A3")
    assert not order.can("ship")
    with pytest.raises(InvalidTransition):
        order.apply("ship")


def test_available_events():
    assert Order("A4").available_events() == ["cancel", "pay"]
