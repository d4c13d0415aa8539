"""States and the events that move an order between them."""

STATES = ("pending", "paid", "shipped", "delivered", "refunded", "cancelled")

# event -> (states it may happen in, state it leads to)
TRANSITIONS = {
    "pay": ({"pending"}, "paid"),
    "ship": ({"paid"}, "shipped"),
    "deliver": ({"shipped"}, "delivered"),
    "refund": ({"delivered"}, "refunded"),
    "cancel": ({"pending", "paid"}, "cancelled"),
}
