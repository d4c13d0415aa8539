"""Tables of the run store: runs, episodes, steps and verdicts (full lineage), validations."""

from __future__ import annotations

import time
from typing import Any, Literal

from pydantic import BaseModel
from sqlalchemy import JSON, Column, Text
from sqlmodel import Field, SQLModel

from gym._core._models import Verdict

__all__ = [
    "EpisodeRow",
    "RunOwnerRow",
    "RunRow",
    "RunState",
    "RunStatus",
    "RunStatusRow",
    "StepRow",
    "TrainStepRow",
    "TurnEnd",
    "TurnsRow",
    "ValidationRow",
    "VerdictRow",
]

RunState = Literal["running", "stopped", "finished", "failed", "interrupted"]
"""Where a run stands: ``running`` (its process beats), ``stopped`` (Ctrl-C, a signal),
``finished`` (every planned episode stored), ``failed`` (an error ended it),
``interrupted`` (it says running, but its process stopped beating: killed, or the
machine died). The same command again resumes a run in any state."""


class RunRow(SQLModel, table=True):
    """One benchmark run: a configuration applied to environments and a policy."""

    __tablename__ = "runs"

    id: str = Field(primary_key=True)
    """Content hash of the run configuration; the same command gives the same id."""
    created_at: float
    """Unix time the run was first started."""
    updated_at: float
    """Unix time an episode of the run was last committed."""
    config: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    """The run configuration: environments, policy and its parameters, k, seed, filters."""
    policy: str
    """Policy name (oracle, noop, openai, local...)."""
    boxgym_version: str
    """boxgym version that created the run."""
    label: str = ""
    """Free-form label given by the user."""


class RunStatusRow(SQLModel, table=True):
    """Where a run stands, as the last `gym run` of it wrote (one row per run).

    A table of its own, so stores written before it existed keep working: a
    read-write open creates it, a read-only open of such a store finds no row.
    """

    __tablename__ = "run_status"

    run_id: str = Field(foreign_key="runs.id", primary_key=True)
    """The run."""
    state: str
    """running, stopped, finished or failed (``interrupted`` is read, never written)."""
    planned: int
    """Episodes the last `gym run` of the run planned."""
    detail: str = ""
    """Who or what ended it: ``Ctrl-C``, ``SIGTERM``, ``error: <its first line>``."""
    started_at: float
    """Unix time the last `gym run` of the run started."""
    updated_at: float
    """Unix time of the last heartbeat or change (a running process beats every few s)."""
    ended_at: float | None = None
    """Unix time it stopped, finished or failed; None while it runs."""


class RunOwnerRow(SQLModel, table=True):
    """The process that holds a run now, its lease (one row per run).

    `Store.start_run` claims it, refused while another live process holds the run (its
    heartbeat fresh); heartbeats and the end of the run are taken from the holder only.
    A table of its own, so stores written before it existed keep working.
    """

    __tablename__ = "run_owner"

    run_id: str = Field(foreign_key="runs.id", primary_key=True)
    """The run."""
    owner: str
    """``host:pid:start-time`` of the holding process (its containers' ``boxgym.owner``)."""
    claimed_at: float
    """Unix time it claimed the run."""


class RunStatus(BaseModel):
    """A run's status, as `gym runs`, `gym report` and the viewer show it."""

    run_id: str
    """The run."""
    state: RunState
    """running, stopped, finished, failed, or interrupted (see `RunState`)."""
    planned: int
    """Episodes planned by the last `gym run` of this run (0: unknown, an older store)."""
    episodes: int
    """Episodes stored."""
    detail: str
    """Who or why: ``Ctrl-C``, ``SIGTERM``, ``error: <one line>``; '' when finished."""
    updated_at: float
    """Last heartbeat or change (Unix time)."""
    ended_at: float | None
    """When it stopped, finished or failed (None while running, or interrupted)."""

    def label(self) -> str:
        """The short form for tables and badges: ``running 9/16``, ``finished 16/16``.

        A run of an older store has no recorded state: ``8 episodes``.
        """
        if not self.planned:
            return f"{self.episodes} episodes"
        return f"{self.state} {self.episodes}/{self.planned}"

    def summary(self) -> str:
        """One line: ``12 of 16 planned; stopped by Ctrl-C at 10:32:05``."""
        if not self.planned:
            n = f"{self.episodes} episode{'' if self.episodes == 1 else 's'}"
            return f"{n}; status not recorded (stored by an older boxgym)"
        done = f"{self.episodes} of {self.planned} planned"
        if self.state == "running":
            return f"{done}; running (last heartbeat {clock(self.updated_at)})"
        if self.state == "interrupted":
            return (
                f"{done}; interrupted: no heartbeat since {clock(self.updated_at)} "
                "(killed?); the same command resumes it"
            )
        when = clock(self.ended_at or self.updated_at)
        if self.state == "stopped":
            return f"{done}; stopped by {self.detail or 'a stop request'} at {when}"
        if self.state == "failed":
            return f"{done}; failed at {when}: {self.detail.removeprefix('error: ')}"
        return f"{done}; finished at {when}"


def clock(t: float) -> str:
    """Local time of day (``10:32:05``), with the date when it is not today."""
    now, then = time.localtime(), time.localtime(t)
    same_day = (now.tm_year, now.tm_yday) == (then.tm_year, then.tm_yday)
    return time.strftime("%H:%M:%S" if same_day else "%Y-%m-%d %H:%M:%S", then)


class EpisodeRow(SQLModel, table=True):
    """One episode, committed atomically with its steps and verdict when it ends."""

    __tablename__ = "episodes"

    id: str = Field(primary_key=True)
    """Hash of run configuration, environment, task, sample index and seed."""
    run_id: str = Field(foreign_key="runs.id", index=True)
    """The run this episode belongs to."""
    env_id: str = Field(index=True)
    """Environment id (``boxgym/Name-vN``)."""
    env_version: int
    """The N of ``-vN``."""
    task_id: str = Field(index=True)
    """Task id."""
    split: str
    """Task split (train or eval)."""
    tags: dict[str, str] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    """Slice tags of the task."""
    sample_index: int
    """Which of the k samples of the task this is."""
    seed: int
    """Reset seed."""
    policy: str
    """Policy name."""
    policy_params: dict[str, Any] = Field(
        default_factory=dict, sa_column=Column(JSON, nullable=False)
    )
    """Policy parameters (model, temperature...)."""
    outcome: str = Field(index=True)
    """pass, fail or infra_error."""
    reward: float | None = None
    """Reward; None for infra_error."""
    end_reason: str = ""
    """submit, a limit, or the infrastructure failure."""
    attempts: int = 1
    """How many times the episode was run (infra errors are retried)."""
    image_digest: str = ""
    """Image the episode ran on."""
    grader_version: str = ""
    """Version of the grader that produced the verdict."""
    hidden_hash: str = ""
    """Content hash of the hidden checks."""
    boxgym_version: str = ""
    """boxgym version that ran the episode."""
    started_at: float = 0.0
    """Unix time the episode began."""
    duration_s: float = 0.0
    """Wall-clock seconds, grading included."""
    n_steps: int = 0
    """Environment steps taken."""
    prompt_tokens: int = 0
    """Prompt tokens used by the policy over the episode."""
    completion_tokens: int = 0
    """Completion tokens produced by the policy."""
    policy_latency_s: float = 0.0
    """Seconds spent waiting for the policy."""
    messages: list[dict[str, Any]] = Field(
        default_factory=list, sa_column=Column(JSON, nullable=False)
    )
    """The conversation in OpenAI chat format."""
    export: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    """The final state handed to the grader, for regrading."""


class StepRow(SQLModel, table=True):
    """One step: the assistant turn and what the environment did with it."""

    __tablename__ = "steps"

    id: int | None = Field(default=None, primary_key=True)
    """Row id."""
    episode_id: str = Field(foreign_key="episodes.id", index=True)
    """The episode."""
    index: int
    """Position in the episode, from 0."""
    tool: str = ""
    """Tool called ('' when the turn held no valid call)."""
    arguments: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    """Arguments of the call."""
    observation: str = Field(default="", sa_column=Column(Text, nullable=False))
    """What the environment answered."""
    error: str = ""
    """Why the action was rejected, if it was."""
    exit_code: int | None = None
    """Exit code of a command the tool ran."""
    timed_out: bool = False
    """The command ran out of time."""
    env_duration_s: float = 0.0
    """Seconds the environment took."""
    policy_latency_s: float = 0.0
    """Seconds the policy took to produce this turn."""
    retries: int = 0
    """Failed policy requests before this turn."""
    prompt_token_ids: list[int] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    """Prompt token ids (token-in/token-out training)."""
    completion_token_ids: list[int] | None = Field(
        default=None, sa_column=Column(JSON, nullable=True)
    )
    """Sampled token ids."""
    logprobs: list[float] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    """Log-probabilities of the sampled tokens."""


class TurnEnd(BaseModel):
    """A step that ended a user turn: the final tool, called on any turn."""

    step: int
    """The step's index."""
    turn: int
    """The user turn it ended (0 is the task prompt's)."""
    user: str | None = None
    """The user's next message, which opened turn ``turn + 1``; None after the last turn."""


class TurnsRow(SQLModel, table=True):
    """An episode's tools and user turns, written with the episode (one row per episode).

    The tool schemas it offered, the user turn of each step and the steps that ended a
    turn, and a simulated user's recorded transcript. A table of its own, so stores
    written before it existed keep working: a read-write open creates it, and an episode
    without a row reads back as one user turn with no recorded tools (`TurnsRow.empty`).
    """

    __tablename__ = "episode_turns"

    episode_id: str = Field(foreign_key="episodes.id", primary_key=True)
    """The episode."""
    tools: list[dict[str, Any]] = Field(
        default_factory=list, sa_column=Column(JSON, nullable=False)
    )
    """The tool schemas the episode offered, in OpenAI function format (reset's
    ``info["tools"]``)."""
    step_turns: list[int] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    """The user turn of each step, by step index."""
    step_assistant: list[int] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    """For each step, which assistant message made it (the policy's turn, from 0): several
    steps share one when its message made parallel calls."""
    ends: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    """The steps that ended a user turn, in order (`TurnEnd` as JSON)."""
    user_transcript: list[dict[str, Any]] = Field(
        default_factory=list, sa_column=Column(JSON, nullable=False)
    )
    """A simulated user's recorded transcript (its messages with their turn index and its
    policy's raw turns); empty for scripted turns."""

    @classmethod
    def empty(cls, episode_id: str) -> TurnsRow:
        """What an episode stored without a row reads as: one turn, no recorded tools."""
        return cls(episode_id=episode_id)

    def turn_ends(self) -> list[TurnEnd]:
        """The steps that ended a user turn, in order."""
        return [TurnEnd.model_validate(end) for end in self.ends]

    def turn_of(self, step: int) -> int:
        """The user turn of a step (0 when none was recorded)."""
        return self.step_turns[step] if 0 <= step < len(self.step_turns) else 0


class VerdictRow(SQLModel, table=True):
    """A verdict of an episode; regrading adds a new row and marks it current."""

    __tablename__ = "verdicts"

    id: int | None = Field(default=None, primary_key=True)
    """Row id."""
    episode_id: str = Field(foreign_key="episodes.id", index=True)
    """The episode."""
    current: bool = True
    """Whether this is the verdict reports use."""
    created_at: float
    """Unix time of grading."""
    outcome: str
    """pass, fail or infra_error."""
    reward: float | None = None
    """Reward (None for infra_error)."""
    verified: bool = False
    """Passed with no flags."""
    reason: str = ""
    """Why the outcome is what it is."""
    components: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    """Named scored parts."""
    flags: list[dict[str, Any]] = Field(
        default_factory=list, sa_column=Column(JSON, nullable=False)
    )
    """Forbidden side effects and tamper signals."""
    grader: str = ""
    """Grader name."""
    grader_version: str = ""
    """Grader version."""
    hidden_hash: str = ""
    """Hidden checks' content hash."""
    image_digest: str = ""
    """Image digest."""

    @classmethod
    def of(cls, episode_id: str, verdict: Verdict) -> VerdictRow:
        """The row of a verdict."""
        data = verdict.model_dump(mode="json")
        return cls(
            episode_id=episode_id,
            created_at=time.time(),
            outcome=verdict.outcome,
            reward=verdict.reward,
            verified=verdict.verified,
            reason=verdict.reason,
            components=data["components"],
            flags=data["flags"],
            grader=verdict.grader,
            grader_version=verdict.grader_version,
            hidden_hash=verdict.hidden_hash,
            image_digest=verdict.image_digest,
        )


class TrainStepRow(SQLModel, table=True):
    """One step of a training run (``gym train``): what its episodes scored, what it learnt.

    A step collects episodes from one policy version (a run of its own, ``run_id``),
    then updates the policy; its row is written once the update is done (or once the
    reward-hacking watch stopped the training before it).
    """

    __tablename__ = "train_steps"

    id: int | None = Field(default=None, primary_key=True)
    """Row id."""
    train_id: str = Field(index=True)
    """Content hash of the training configuration."""
    step: int
    """Step number from 0; its episodes came from policy version ``step``."""
    run_id: str = Field(foreign_key="runs.id")
    """The run holding the step's episodes."""
    created_at: float
    """Unix time the row was written."""
    episodes: int = 0
    """Episodes collected (infra errors included)."""
    infra_errors: int = 0
    """Episodes that ended in infra_error (left out of the update)."""
    mean_reward: float = 0.0
    """Mean training reward of the graded episodes."""
    hidden_pass_rate: float = 0.0
    """Share of graded episodes whose hidden checks passed (the held-out monitor)."""
    flag_rates: dict[str, float] = Field(
        default_factory=dict, sa_column=Column(JSON, nullable=False)
    )
    """Flag name -> share of graded episodes that carry it."""
    kl: float = 0.0
    """KL to the reference model (0 when no reference is used)."""
    update_kl: float = 0.0
    """Approximate KL of the updated policy from the one that sampled (k3, sampled tokens)."""
    clip_fraction: float = 0.0
    """Sampled tokens whose ratio was clipped (last update of the step)."""
    zero_variance_fraction: float = 0.0
    """Groups dropped for equal rewards over all groups."""
    loss: float = 0.0
    """Loss of the last update of the step."""
    tokens: int = 0
    """Tokens the policy sampled in the step."""
    tokens_per_s: float = 0.0
    """Sampled tokens over the step's wall-clock seconds (collection and update)."""
    collect_s: float = 0.0
    """Seconds spent collecting episodes."""
    update_s: float = 0.0
    """Seconds spent updating the policy."""
    stopped: str = ""
    """Why training stopped at this step (before its update), or ''."""
    checkpoint: str = ""
    """Folder of the checkpoint saved after the step's update ('' when none)."""


class ValidationRow(SQLModel, table=True):
    """One task's validation result (`gym env validate`), kept so that a rerun resumes.

    A cache beside the runs: a result is found only under the fingerprint of what it
    depends on, so a change of any of that validates the task again. A table of its own:
    a store written before it existed gains it on its next read-write open.
    """

    __tablename__ = "validations"

    env_id: str = Field(primary_key=True)
    """The environment."""
    task_id: str = Field(primary_key=True)
    """The task."""
    fingerprint: str = Field(primary_key=True)
    """A hash of what the result depends on: the task's files, boxgym's and the family's
    code, the image's build context and the number of repeats."""
    ok: bool
    """Whether the task passed every check."""
    result: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    """The whole result (`gym.runs.TaskCheck`) as JSON."""
    finished_at: float
    """Unix time the result was kept."""
