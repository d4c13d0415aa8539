import pytest

from orderflow import InvalidTransition, Order


def shipped():
    order = Order("B1")
    order.apply("pay")
    order.apply("ship")
    return order


def test_cannot_cancel_shipped():
    order = shipped()
    assert not order.can("cancel")
    with pytest.raises(InvalidTransition):
        order.apply("cancel")
    assert order.state == "shipped"


def test_cannot_cancel_delivered_or_refunded():
    order = shipped()
    order.apply("deliver")
    with pytest.raises(InvalidTransition):
        order.apply("cancel")
    order.apply("refund")
    with pytest.raises(InvalidTransition):
        order.apply("cancel")


def test_available_events_after_shipping():
    assert shipped().available_events() == ["deliver"]
    paid = Order("B2")
    paid.apply("pay")
    assert paid.available_events() == ["cancel", "ship"]


def test_rejected_event_leaves_history():
    order = Order("B3")
    order.apply("pay")
    before = list(order.history)
    with pytest.raises(InvalidTransition):
        order.apply("deliver")
    with pytest.raises(InvalidTransition):
        order.apply("teleport")
    assert order.history == before == [("pay", "pending", "paid")]
    assert order.state == "paid"


def test_history_after_mixed_events():
    order = Order("B4")
    for event in ("ship", "pay", "pay", "cancel", "pay"):
        try:
            order.apply(event)
        except InvalidTransition:
            pass
    assert order.history == [("pay", "pending", "paid"), ("cancel", "paid", "cancelled")]
