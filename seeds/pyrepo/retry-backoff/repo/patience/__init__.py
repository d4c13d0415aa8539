"""Retrying flaky calls with exponential backoff."""

from patience.decorator import retrying
from patience.policy import delays
from patience.retry import retry

__all__ = ["delays", "retry", "retrying"]
