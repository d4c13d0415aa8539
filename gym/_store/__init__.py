"""The run store (sqlmodel): runs, episodes, steps, verdicts; kept validation results."""

from gym._core._startup import collector_paused

with collector_paused():  # sqlalchemy and sqlmodel: a tenth of their import otherwise
    from gym._store._models import (
        EpisodeRow,
        RunRow,
        RunState,
        RunStatus,
        RunStatusRow,
        StepRow,
        TrainStepRow,
        ValidationRow,
        VerdictRow,
    )
    from gym._store._store import HEARTBEAT_S, STALE_AFTER_S, Store, calls_of, default_url

__all__ = [
    "HEARTBEAT_S",
    "STALE_AFTER_S",
    "EpisodeRow",
    "RunRow",
    "RunState",
    "RunStatus",
    "RunStatusRow",
    "StepRow",
    "Store",
    "TrainStepRow",
    "ValidationRow",
    "VerdictRow",
    "calls_of",
    "default_url",
]
