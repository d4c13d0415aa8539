from eventbus import EventBus


def test_self_unsubscribe_does_not_skip_next():
    bus = EventBus()
    subs = {}

    def first(topic, payload):
        bus.unsubscribe(subs["first"])
        return "first"

    subs["first"] = bus.subscribe("e", first)
    bus.subscribe("e", lambda t, p: "second")
    bus.subscribe("e", lambda t, p: "third")
    assert bus.publish("e") == ["first", "second", "third"]
    assert bus.publish("e") == ["second", "third"]


def test_once_does_not_skip_next():
    bus = EventBus()
    bus.subscribe("e", lambda t, p: "once", once=True, priority=1)
    bus.subscribe("*", lambda t, p: "all")
    bus.subscribe("e", lambda t, p: "last")
    assert bus.publish("e") == ["once", "all", "last"]
    assert bus.publish("e") == ["all", "last"]


def test_subscribe_during_publish_waits_for_next_event():
    bus = EventBus()
    added = []

    def adder(topic, payload):
        if not added:
            added.append(bus.subscribe("e", lambda t, p: "late", priority=-1))
        return "adder"

    bus.subscribe("e", adder, priority=10)
    assert bus.publish("e") == ["adder"]
    assert bus.publish("e") == ["adder", "late"]


def test_cancelled_by_earlier_handler_is_not_called():
    bus = EventBus()
    victim = {}

    def killer(topic, payload):
        bus.unsubscribe(victim["sub"])
        return "killer"

    bus.subscribe("e", killer, priority=1)
    victim["sub"] = bus.subscribe("e", lambda t, p: "victim")
    bus.subscribe("e", lambda t, p: "survivor")
    assert bus.publish("e") == ["killer", "survivor"]
    assert victim["sub"].calls == 0


def test_calls_counted():
    bus = EventBus()
    subs = []

    def grab(topic, payload):
        for s in list(subs):
            bus.unsubscribe(s)
        return payload

    subs.append(bus.subscribe("x", grab))
    subs.append(bus.subscribe("x", grab))
    assert bus.publish("x", 7) == [7]
    assert [s.calls for s in subs] == [1, 0]
    assert bus.subscriptions("x") == []
