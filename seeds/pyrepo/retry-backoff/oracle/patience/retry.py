"""Calling a function until it succeeds."""

import time

from patience.policy import delays


def retry(func, *, attempts=3, base=0.1, factor=2.0, max_delay=5.0, retry_on=(Exception,),
          sleep=time.sleep):
    """Call func() up to `attempts` times, sleeping between failures; return its result.

    Only exceptions matching `retry_on` are retried; after the last attempt its
    exception is raised again.
    """
    if attempts < 1:
        raise ValueError("attempts must be at least 1")
    waits = delays(base, factor, max_delay, attempts)
    for attempt in range(attempts):
        try:
            return func()
        except retry_on:
            if attempt == attempts - 1:
                raise
            sleep(waits[attempt])
    raise AssertionError("unreachable")
