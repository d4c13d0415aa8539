"""The run store (sqlmodel): runs, episodes, steps, verdicts, turns; kept validation results."""

from gym._core._startup import collector_paused

with collector_paused():  # sqlalchemy and sqlmodel: a tenth of their import otherwise
    from gym._store._models import (
        EpisodeRow,
        RunOwnerRow,
        RunRow,
        RunState,
        RunStatus,
        RunStatusRow,
        StepRow,
        TrainStepRow,
        TurnEnd,
        TurnsRow,
        ValidationRow,
        VerdictRow,
    )
    from gym._store._store import (
        HEARTBEAT_S,
        STALE_AFTER_S,
        LeaseLost,
        RunBusy,
        Store,
        calls_of,
        default_url,
    )
    from gym._store._turns import (
        UserTurn,
        message_turns,
        said_by_step,
        step_said,
        user_turns,
    )

__all__ = [
    "HEARTBEAT_S",
    "STALE_AFTER_S",
    "EpisodeRow",
    "LeaseLost",
    "RunBusy",
    "RunOwnerRow",
    "RunRow",
    "RunState",
    "RunStatus",
    "RunStatusRow",
    "StepRow",
    "Store",
    "TrainStepRow",
    "TurnEnd",
    "TurnsRow",
    "UserTurn",
    "ValidationRow",
    "VerdictRow",
    "calls_of",
    "default_url",
    "message_turns",
    "said_by_step",
    "step_said",
    "user_turns",
]
