"""Calling a function until it succeeds."""

import time

from patience.policy import delays


def retry(func, *, attempts=3, base=0.1, factor=2.0, max_delay=5.0, retry_on=(Exception,),
          sleep=time.sleep):
    """Call func() up to `attempts` times, sleeping between failures; return its result."""
    if attempts < 1:
        raise ValueError("attempts must be at least 1")
    waits = delays(base, factor, max_delay, attempts) + [base]
    for attempt in range(attempts):
        try:
            return func()
        except Exception as exc:
            last = exc
            sleep(waits[attempt])
    raise RuntimeError(f"gave up after {attempts} attempts") from last
