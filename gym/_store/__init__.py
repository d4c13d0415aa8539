"""The run store (sqlmodel): runs, episodes, steps and verdicts with their lineage."""

from gym._startup import collector_paused

with collector_paused():  # sqlalchemy and sqlmodel: a tenth of their import otherwise
    from gym._store._models import EpisodeRow, RunRow, StepRow, TrainStepRow, VerdictRow
    from gym._store._store import Store, calls_of, default_url

__all__ = [
    "EpisodeRow",
    "RunRow",
    "StepRow",
    "Store",
    "TrainStepRow",
    "VerdictRow",
    "calls_of",
    "default_url",
]
