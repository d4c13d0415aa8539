"""The bounds of what one ``/ws`` message may ask (openenv-free: `gym.serve` exports them)."""

from __future__ import annotations

__all__ = ["MAX_CALLS", "MAX_FRAME"]

MAX_CALLS = 64
"""The most calls one step makes (``calls``): a step's work and its answer (one output
per call) stay bounded, as an episode's step budget bounds the calls that can run."""
MAX_FRAME = 16 << 20
"""The most bytes of one ``/ws`` frame (uvicorn's ``ws_max_size``): a larger one closes
that connection with code 1009 (message too big) and a reason; other sessions go on."""
