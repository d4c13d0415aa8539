"""Backoff schedules."""


def delays(base, factor, max_delay, attempts):
    """The waits between `attempts` attempts: base * factor**i, capped at max_delay."""
    return [base * factor ** (i + 1) for i in range(attempts - 1)]
