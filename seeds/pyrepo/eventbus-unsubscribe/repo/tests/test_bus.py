from eventbus import EventBus


def test_order_by_priority_then_age():
    bus = EventBus()
    bus.subscribe("a", lambda t, p: "low")
    bus.subscribe("a", lambda t, p: "high", priority=5)
    bus.subscribe("a", lambda t, p: "low2")
    assert bus.publish("a") == ["high", "low", "low2"]


def test_wildcard_and_payload():
    bus = EventBus()
    bus.subscribe("*", lambda t, p: f"any:{t}:{p}")
    bus.subscribe("b", lambda t, p: p * 2)
    assert bus.publish("b", 21) == ["any:b:21", 42]
    assert bus.publish("c", 1) == ["any:c:1"]


def test_once_from_outside():
    bus = EventBus()
    bus.subscribe("a", lambda t, p: 1, once=True)
    assert bus.publish("a") == [1]
    assert bus.publish("a") == []


def test_unsubscribe():
    bus = EventBus()
    sub = bus.subscribe("a", lambda t, p: 1)
    bus.unsubscribe(sub)
    bus.unsubscribe(sub)
    assert bus.publish("a") == []
    assert bus.subscriptions() == []
