"""The decorator form of retry."""

import functools
import time

from patience.retry import retry


def retrying(*, attempts=3, base=0.1, factor=2.0, max_delay=5.0, retry_on=(Exception,),
             sleep=time.sleep):
    """Decorate a function so that each call is retried like `retry` does."""

    def wrap(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            return retry(
                lambda: func(*args, **kwargs),
                attempts=attempts,
                base=base,
                factor=factor,
                max_delay=max_delay,
                retry_on=retry_on,
                sleep=sleep,
            )

        return wrapper

    return wrap
