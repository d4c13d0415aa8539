"""An in-process publish/subscribe event bus."""

from eventbus.bus import EventBus
from eventbus.subscription import Subscription

__all__ = ["EventBus", "Subscription"]
