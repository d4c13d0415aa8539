"""Backoff schedules."""


def delays(base, factor, max_delay, attempts):
    """The waits between `attempts` attempts: base * factor**i, capped at max_delay."""
    return [min(base * factor**i, max_delay) for i in range(attempts - 1)]
