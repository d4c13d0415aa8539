"""An order moving through its states."""

from orderflow.states import TRANSITIONS


class InvalidTransition(ValueError):
    """The event is unknown or not allowed in the order's current state."""


class Order:
    """A shop order; `history` lists (event, from_state, to_state) tuples."""

    def __init__(self, order_id, state="pending"):
        self.order_id = order_id
        self.state = state
        self.history = []

    def can(self, event):
        """Whether event is allowed now."""
        return event in TRANSITIONS and self.state in TRANSITIONS[event][0]

    def available_events(self):
        """The events allowed now, sorted."""
        return sorted(e for e in TRANSITIONS if self.can(e))

    def apply(self, event):
        """Apply an event; return the new state. A rejected event changes nothing."""
        if event not in TRANSITIONS:
            raise InvalidTransition(f"unknown event {event!r}")
        allowed, target = TRANSITIONS[event]
        if self.state not in allowed:
            raise InvalidTransition(f"cannot {event} an order that is {self.state}")
        self.history.append((event, self.state, target))
        self.state = target
        return target
