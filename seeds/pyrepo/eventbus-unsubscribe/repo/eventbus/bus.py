"""The bus: subscribe handlers to topics and publish events to them."""

import itertools

from eventbus.subscription import Subscription


class EventBus:
    """Deliver each published event to the handlers subscribed to its topic."""

    def __init__(self):
        self._subs = []
        self._seq = itertools.count()

    def subscribe(self, topic, handler, *, priority=0, once=False):
        """Call handler(topic, payload) for every event on topic ('*': all topics)."""
        sub = Subscription(topic, handler, priority, once, next(self._seq))
        self._subs.append(sub)
        self._subs.sort(key=Subscription.sort_key)
        return sub

    def unsubscribe(self, sub):
        """Cancel a subscription (cancelling twice is harmless)."""
        if sub.active:
            sub.active = False
            self._subs.remove(sub)

    def subscriptions(self, topic=None):
        """Active subscriptions (of one topic, '*' included), in call order."""
        return [s for s in self._subs if topic is None or s.matches(topic)]

    def publish(self, topic, payload=None):
        """Call the handlers of topic in order; return their results."""
        results = []
        for sub in self._subs:
            if not sub.matches(topic):
                continue
            sub.calls += 1
            if sub.once:
                self.unsubscribe(sub)
            results.append(sub.handler(topic, payload))
        return results
