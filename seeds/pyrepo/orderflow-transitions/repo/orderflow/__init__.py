"""The life cycle of a shop order."""

from orderflow.machine import InvalidTransition, Order
from orderflow.states import STATES, TRANSITIONS

__all__ = ["STATES", "TRANSITIONS", "InvalidTransition", "Order"]
