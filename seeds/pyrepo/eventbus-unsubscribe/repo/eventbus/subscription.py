"""A handle on one subscription."""

from dataclasses import dataclass, field


@dataclass(eq=False)
class Subscription:
    """What `EventBus.subscribe` returns; pass it to `unsubscribe` to cancel."""

    topic: str
    handler: object
    priority: int = 0
    once: bool = False
    seq: int = 0
    active: bool = field(default=True)
    calls: int = 0

    def sort_key(self):
        """Higher priority first, then older subscriptions first."""
        return (-self.priority, self.seq)

    def matches(self, topic):
        return self.topic == "*" or self.topic == topic
