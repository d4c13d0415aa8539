"""Truncated step-level sampling for GRPO (``gym train grpo --sampling step``).

Full-trajectory sampling gives every turn of an episode the same advantage: the
episode's reward against its task's G episodes. Step-level sampling assigns credit per
step instead:

1. **Sample a trajectory** (the parent): an episode of the task from a reset, as in
   trajectory mode (``group_size`` parents per task).
2. **Fork at the branching turns** (`StepConfig.branch_steps`: ``auto``, every turn of
   the parent, or the listed turn indices; a turn the parent never reaches is not
   forked): just before the parent's turn t, `ContainerEnv.fork` (``training=True``:
   held-out tasks refused) gives K branches in the parent's state; each continues with
   the policy, sampled with a seed of its own, to its own end and verdict. The parent
   goes on unchanged. A fork the parent's own state refuses (`ExportTooLarge`) gives K
   failed branches (`UNFORKABLE`); one that fails outside the sandbox is left out.
3. **Signals**: an episode's signal is its outcome reward (the training reward, as in
   trajectory mode: None for infra_error, 0 when flagged); a branch's adds
   ``step_reward_weight`` times its dense step reward (`StepReward`, when one is given
   and it says something: None adds nothing; a flagged or infra_error branch gets none).
4. **Credit** (`StepConfig.credit`), one sample per trained turn (the prompt it saw,
   token-in, and its completion: the loss mask is 1 on that turn's tokens only):
   - ``tree`` (the default): every turn of a parent and every turn of a branch from its
     branching turn on, each with the sum of its step term (the value of the state after
     it minus that before it, each the mean signal of the rollouts through it) and its
     outcome term (the value after it minus the task's mean): `gym.train._credit`;
   - ``branch``: the K branches of one fork are a group, advantages group-relative over
     their signals (``grpo``, ``dr_grpo``, ``rloo``; zero-variance groups dropped), and
     only each branch's branching turn trains; the parents and the branches' later turns
     do not.

The step's monitor (mean reward, hidden pass rate, flag rates: what the watch reads) is
that of the parents: fresh episodes of the policy from a reset, as in trajectory mode.

Branches are stored in the step's run as full episodes (their steps include the
parent's prefix), each with a lineage row (parent episode id, fork step, branch index:
`Store.lineage`); the parent is committed after its branches, so a resumed run skips a
tree once its parent is stored.
"""

from __future__ import annotations

import hashlib
import logging
import time
import zlib
from collections.abc import Callable, Hashable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from typing import TYPE_CHECKING, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_serializer,
    field_validator,
    model_validator,
)

from gym._core._errors import (
    ConfigError,
    ExportTooLarge,
    GymError,
    HeldOutError,
    InfraError,
    PolicyError,
)
from gym._core._models import Flag, Task, Verdict
from gym._core._version import __version__
from gym._envs._env import env_of
from gym._envs._registry import make, tasks_of
from gym._envs._splits import refuse_held_out
from gym._policy import Policy, Turn
from gym._run._executor import Job
from gym._run._rollout import EpisodeResult, _loop, failed, run_episode
from gym._run._runner import RunConfig, _rows, _run_row, check_sandboxes, plan
from gym._store import StepRow, Store
from gym._store._lineage import LineageRow
from gym.train._credit import TreeCredit, tree_credit
from gym.train._episodes import GroupSamples, refuse_held_out_episodes
from gym.train._grpo_collect import (
    Collected,
    RewardSource,
    ScoredEpisode,
    _step_seed,
    read_collected,
)
from gym.train._rewards import AdvantageKind, Advantages, advantages
from gym.train._samples import Sample, episode_samples

if TYPE_CHECKING:
    from gym._envs._env import ContainerEnv

__all__ = [
    "Branch",
    "StepCollected",
    "StepConfig",
    "StepReward",
    "UNFORKABLE",
    "collect_steps",
    "parse_branch_steps",
    "read_step_collected",
    "step_samples",
    "tree_signals",
]

_log = logging.getLogger("gym.train")

UNFORKABLE = "unforkable_state"
"""The gating flag of a branch its parent's state refused (`ExportTooLarge`: more files or
exported variables than a fork copies). The agent's doing, so its outcome: each of the K
branches is a ``fail`` with reward 0 and no turn of its own, never left out."""

StepReward = Callable[[Task, list[dict[str, Any]], int], float | None]
"""A dense reward for one step: (the task, the conversation up to and including the
step (its assistant message and the tool messages answering it), the step's index: the
index of its assistant message among the conversation's, 0-based, which is the step's
index in the trajectory when each turn makes one call) -> a reward in [0, 1], or None
when it has nothing to say (then the outcome reward stands alone)."""


class StepConfig(BaseModel):
    """The settings of step-level sampling (``GrpoConfig.step_sampling``)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    branches: int = Field(default=4, ge=2)
    """K: branches per fork (a group: at least two)."""
    branch_steps: Literal["auto"] | list[int] = "auto"
    """The parent's turns to fork before (0-based): ``auto`` for every turn it takes."""
    step_reward: StepReward | None = None
    """A dense step reward (`StepReward`); part of the training id by its qualified name."""
    step_reward_weight: float = Field(default=0.0, ge=0)
    """A branch's signal = its outcome reward + this x its step reward; below 1, so that
    a step reward (in [0, 1]) never lifts a fail (reward 0) to a full pass (reward 1)."""
    credit: Literal["tree", "branch"] = "tree"
    """What trains (`step_samples`): ``tree``, the parents' turns and the branches' own
    turns (from the branching turn on), each credited from the values of the states
    around it (`gym.train._credit`); ``branch``, each branch's branching turn alone,
    against its fork's K branches."""
    branches_per_parent: int | None = Field(default=None, ge=2)
    """Exactly this many branches per parent (a multiple of K), so that a step makes as
    many episodes whatever the parents' lengths: K before each branching turn while they
    last, and all those left before the parent's last turn (one fork, a bigger group).
    None: K before each branching turn the parent reaches (1 + K x turns episodes)."""

    @model_validator(mode="after")
    def _whole_forks(self) -> StepConfig:
        budget = self.branches_per_parent
        if budget is not None and budget % self.branches:
            raise ValueError(f"branches_per_parent ({budget}) must be a multiple of K")
        return self

    @field_validator("step_reward_weight")
    @classmethod
    def _below_one(cls, value: float) -> float:
        if value >= 1:
            raise ValueError(
                f"step_reward_weight must be below 1 (got {value}): a fail's signal is 0 + "
                "weight x its step reward, and at 1 or more a failing branch the judge scores "
                "high would rank with or above a passing one (a judge never turns a fail into "
                "a pass)"
            )
        return value

    @field_validator("branch_steps")
    @classmethod
    def _turns(cls, value: Literal["auto"] | list[int]) -> Literal["auto"] | list[int]:
        if value == "auto":
            return value
        if not value or min(value) < 0:
            raise ValueError("branch_steps: 'auto' or turn indices (0, 1, ...), at least one")
        return sorted(set(value))

    @field_serializer("step_reward")
    def _reward_name(self, value: StepReward | None) -> str | None:
        if value is None:
            return None
        return f"{getattr(value, '__module__', '?')}.{getattr(value, '__qualname__', repr(value))}"

    def forks_at(self, turn: int) -> bool:
        """Whether the parent forks before its turn ``turn``."""
        return self.branch_steps == "auto" or turn in self.branch_steps


def parse_branch_steps(text: str) -> Literal["auto"] | list[int]:
    """``auto`` or comma-separated turn indices (``--branch-steps 1,2``).

    Raises:
        ConfigError: anything else.
    """
    if text.strip() == "auto":
        return "auto"
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise ConfigError(f"--branch-steps: 'auto' or turn indices like 1,2, not {text!r}") from exc


class Branch(BaseModel):
    """Where a branch episode comes from and which of its turns trains."""

    parent_id: str
    """The stored id of its parent episode."""
    fork_step: int
    """Steps of the parent it shares (its first own step has this index)."""
    branch: int
    """Its index among its fork's K branches."""
    turn: int
    """The index (in its turns) of the branching turn: the one it trains."""
    step_reward: float | None = None
    """Its dense step reward at the branching turn (None: none given or none said)."""
    refused: bool = False
    """Its fork was refused for the parent's state (`UNFORKABLE`): it has no turn of its
    own; its signal (0) counts in the values of the parent's states, and nothing of it
    trains."""

    @property
    def group(self) -> tuple[str, int]:
        """Its advantage group: the fork it is a branch of."""
        return (self.parent_id, self.fork_step)


class StepCollected(Collected):
    """A step-level collection: parents and branches, with each branch's lineage."""

    branches: dict[str, Branch] = Field(default_factory=dict)
    """Branch episode id -> its lineage and branching turn (parents are absent)."""

    @property
    def monitored(self) -> list[ScoredEpisode]:
        """The graded parents: fresh episodes of the policy (what the watch reads)."""
        return [e for e in self.graded if e.episode.episode_id not in self.branches]


# -- collection ----------------------------------------------------------------------


def collect_steps(
    store: Store,
    *,
    envs: Sequence[str],
    tasks: Sequence[str],
    group_size: int,
    seed: int,
    version: int,
    policy: str,
    policy_params: Mapping[str, Any],
    policy_factory: Callable[[], Policy],
    step: StepConfig,
    reward: RewardSource = "visible",
    concurrency: int = 4,
    label: str = "",
    run_seed: int | None = None,
) -> StepCollected:
    """Sample ``group_size`` parents per task, fork them at the branching turns, store all.

    The arguments are `gym.train._grpo_collect.collect`'s, plus ``step`` (K, where to
    fork, the step reward) and ``run_seed`` (the run's base seed; by default one derived
    from ``seed`` and ``version`` as trajectory collections do).

    Raises:
        HeldOutError: a task is of a held-out split (refused before anything runs; the
            fork refuses it too).
    """
    start = time.monotonic()
    config = RunConfig(
        envs=list(envs),
        policy=policy,
        policy_params={**policy_params, "policy_version": version, "sampling": "step"},
        k=group_size,
        seed=_step_seed(seed, version) if run_seed is None else run_seed,
        tasks=list(tasks),
        label=label,
    )
    jobs = plan(config)
    for env_id in envs:
        refuse_held_out(env_id, [j.task for j in jobs if j.env_id == env_id])
    done = store.episode_outcomes(config.run_id)
    todo = [j for j in jobs if j.episode_id not in done]
    if todo:
        check_sandboxes(config, todo)
    store.start_run(_run_row(config), planned=len(jobs))
    config.provider().resize(concurrency + step.branches)  # spares for a fork's branches
    grower = _Trees(config, store, policy_factory, step)
    with ThreadPoolExecutor(max(1, concurrency), thread_name_prefix="gym-tree") as pool:
        for future in as_completed([pool.submit(grower.grow, job) for job in todo]):
            grower.commit(*future.result())  # this thread alone writes to the store
    store.end_run(config.run_id, "finished")
    collected = read_step_collected(store, config.run_id, reward, step)
    collected.seconds = time.monotonic() - start
    return collected


_Tree = tuple[Job, EpisodeResult, int, list[tuple[LineageRow, EpisodeResult]]]
"""A parent's job, its result, the attempts it took, and its branches' lineage and results."""


class _Trees:
    """Grows the trees of one collection (in any thread) and commits them (in one)."""

    def __init__(
        self,
        config: RunConfig,
        store: Store,
        factory: Callable[[], Policy],
        step: StepConfig,
        max_attempts: int = 3,
    ) -> None:
        self.config, self.store, self.factory, self.step = config, store, factory, step
        self.max_attempts = max_attempts

    def grow(self, job: Job) -> _Tree:
        """Run a parent (rerun while infra_error) with its forks: the last attempt's tree."""
        for attempt in range(1, self.max_attempts + 1):
            forking = _Forking(self.factory, self.step, job.episode_id)
            env = make(job.env_id, run=self.config.run_id, tasks=[job.task])
            try:
                result = run_episode(env, forking, task_id=job.task.id, seed=job.seed)
            finally:
                branches = forking.finish()
            if result.outcome != "infra_error" or attempt >= self.max_attempts:
                break
        return job, result, attempt, branches

    def commit(
        self,
        job: Job,
        result: EpisodeResult,
        attempts: int,
        branches: list[tuple[LineageRow, EpisodeResult]],
    ) -> None:
        """Store a tree: its branches with their lineage, then its parent (the tree is done)."""
        for lineage, branch in branches:
            self._commit_branch(job, lineage, branch)
        self.store.commit_episode(*_rows(self.config, job, result, attempts, __version__))

    def _commit_branch(self, job: Job, lineage: LineageRow, result: EpisodeResult) -> None:
        key = f"{job.episode_id}:{lineage.fork_step}:{lineage.branch}"
        branch_id = hashlib.sha256(key.encode()).hexdigest()[:24]
        own = job.model_copy(update={"episode_id": branch_id, "seed": result.seed or job.seed})
        rows = _rows(self.config, own, result, 1, __version__)
        lineage = lineage.model_copy(update={"episode_id": branch_id})
        self.store.commit_episode(*rows, lineage=lineage)


class _Reseeded:
    """An environment as a policy's ``start`` sees it, with a reset seed of the branch's own.

    Sampling policies key their randomness to the reset seed; the K branches of a fork
    share their parent's, so each is shown one derived from it and its branch index.
    """

    def __init__(self, env: ContainerEnv[Any], seed: int) -> None:
        self._env, self.np_random_seed = env, seed

    def __getattr__(self, name: str) -> Any:
        return getattr(self._env, name)


class _Forking(Policy):
    """The parent's policy: before each branching turn, fork K branches that play on.

    Each branch runs in a thread of its own, from a copy of the conversation so far,
    with a fresh policy from the factory; `finish` waits for them and returns their
    lineage and results.
    """

    name = "forking"

    def __init__(self, factory: Callable[[], Policy], step: StepConfig, parent_id: str) -> None:
        self.factory, self.step, self.parent_id = factory, step, parent_id
        self.inner = factory()
        self.pool = ThreadPoolExecutor(step.branches, thread_name_prefix="gym-branch")
        self.pending: list[tuple[LineageRow, Future[EpisodeResult]]] = []
        self.env: ContainerEnv[Any] | None = None
        self.turns: list[Turn] = []
        self.marks: list[int] = []
        """The parent's trace length at the start of each of its turns."""
        self.left = step.branches_per_parent
        """Branches still to fork (``branches_per_parent``; None: K at each branching turn)."""

    def start(self, task: Task, env: ContainerEnv[Any]) -> None:
        self.env, self.turns, self.marks = env, [], []
        self.left = self.step.branches_per_parent
        self.inner.start(task, env)

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Turn:
        assert self.env is not None
        if self.left is None and self.step.forks_at(len(self.turns)):
            self._fork(messages, tools, self.step.branches)
        self.marks.append(len(self.env.trace))
        turn = self.inner.act(messages, tools)
        if self.left:  # the turn is sampled first: whether it is the last decides the fork
            self._fork_counted(messages, tools, turn)
        self.turns.append(turn)
        return turn

    def _fork_counted(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], turn: Turn
    ) -> None:
        """``branches_per_parent``: K here (a branching turn), or all those left (the last)."""
        assert self.env is not None and self.left is not None
        k = min(self.step.branches, self.left) if self.step.forks_at(len(self.turns)) else 0
        if _ends(self.env, turn):
            k = self.left
        if k and self._fork(messages, tools, k):
            self.left -= k

    def _fork(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], k: int) -> bool:
        """Fork k branches before the parent's next turn; whether the fork was made."""
        env = self.env
        assert env is not None
        try:
            branches = env.fork(k, training=True, parent_id=self.parent_id)
        except HeldOutError:
            raise
        except ExportTooLarge as exc:  # the agent's state: its K branches are its failures
            _log.warning("fork of %s at turn %d refused: %s", self.parent_id, len(self.turns), exc)
            self._refused(messages, tools, k, exc)
            return True
        except GymError as exc:  # a fault outside the sandbox: this fork is left out, logged
            _log.warning("fork of %s at turn %d failed: %s", self.parent_id, len(self.turns), exc)
            return False
        said = self._said()
        for branch in branches:
            assert branch.lineage is not None
            line = branch.lineage
            seed = self._seed(line.fork_step, line.branch)
            lineage = LineageRow(
                episode_id="",
                parent_id=line.parent_id,
                fork_step=line.fork_step,
                branch=line.branch,
            )
            work = _BranchWork(branch, self.factory(), seed, messages, tools, self.turns, said)
            self.pending.append((lineage, self.pool.submit(work.run)))
        return True

    def _refused(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], k: int, why: GymError
    ) -> None:
        """K branches that failed at the fork their parent's state refused (`UNFORKABLE`).

        Each is the parent's trajectory so far, a ``fail`` with reward 0 flagged
        `UNFORKABLE`: no better for the policy than K branches that all failed.
        """
        env = self.env
        assert env is not None and env.task is not None
        task, step = env.task, len(env.trace)
        verdict = Verdict(
            outcome="fail",
            reward=0.0,
            flags=[Flag(name=UNFORKABLE, detail=str(why)[:500])],
            reason=f"the parent's state could not be forked: {why}",
            env_id=env.env_id,
            task_id=task.id,
        )
        for i in range(k):
            result = EpisodeResult(
                env_id=env.env_id,
                task_id=task.id,
                split=task.split,
                seed=self._seed(step, i),
                outcome="fail",
                reward=0.0,
                verdict=verdict,
                end_reason=UNFORKABLE,
                messages=[dict(m) for m in messages],
                turns=list(self.turns),
                steps=[record.model_copy(deep=True) for record in env.trace],
                step_turns=self._said(),
                tools=tools,
                user_transcript=list(env.user_transcript),
            )
            done: Future[EpisodeResult] = Future()
            done.set_result(result)
            line = LineageRow(episode_id="", parent_id=self.parent_id, fork_step=step, branch=i)
            self.pending.append((line, done))

    def _seed(self, fork_step: int, branch: int) -> int:
        """The reset seed a branch's policy is shown: its parent's, its fork and index."""
        assert self.env is not None
        return zlib.crc32(f"{self.env.np_random_seed}:{fork_step}:{branch}".encode())

    def _said(self) -> list[int]:
        """For each step of the parent so far, the index of the turn that made it."""
        return [n for n in range(len(self.turns)) for _ in range(self._steps_of(n))]

    def _steps_of(self, turn: int) -> int:
        """Steps the parent's turn ``turn`` made (a turn with parallel calls makes several)."""
        assert self.env is not None
        end = self.marks[turn + 1] if turn + 1 < len(self.marks) else len(self.env.trace)
        return end - self.marks[turn]

    def finish(self) -> list[tuple[LineageRow, EpisodeResult]]:
        """Wait for every branch; their lineage and results, in fork order."""
        try:
            return [(lineage, future.result()) for lineage, future in self.pending]
        finally:
            self.pool.shutdown(wait=True)
            self.inner.close()


def _ends(env: ContainerEnv[Any], turn: Turn) -> bool:
    """Whether the turn, once run, ends the episode (foreseen before it runs).

    It does when it calls the final tool or its calls spend the step budget; another
    end (a time limit, an infrastructure failure) is not foreseen.
    """
    inner = env_of(env)
    final = any(
        c.name in inner.tools and inner.tools[c.name][0].kind == "final" for c in turn.calls
    )
    spent = inner.max_steps is not None and len(inner.trace) + max(1, len(turn.calls)) >= (
        inner.max_steps
    )
    return final or spent


class _BranchWork:
    """One branch played from the fork to its end, as `run_episode` plays a reset one."""

    def __init__(
        self,
        env: ContainerEnv[Any],
        policy: Policy,
        seed: int,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        turns: list[Turn],
        step_turns: list[int],
    ) -> None:
        self.env, self.policy, self.seed, self.tools = env, policy, seed, tools
        self.messages = [dict(m) for m in messages]
        self.turns, self.step_turns = list(turns), list(step_turns)

    def run(self) -> EpisodeResult:
        env, start = self.env, time.monotonic()
        result: dict[str, Any] = {"outcome": "infra_error", "end_reason": ""}
        export: dict[str, Any] | None = None
        try:
            assert env.task is not None
            self.policy.start(env.task, _Reseeded(env, self.seed))  # type: ignore[arg-type]
            result, export = _loop(
                env, self.policy, self.messages, self.turns, self.tools, self.step_turns
            )
        except (InfraError, PolicyError) as exc:
            result, export = failed(exc)
        finally:
            env.close()
            self.policy.close()
        inner = env_of(env)
        assert inner.task is not None
        return EpisodeResult(
            env_id=inner.env_id,
            task_id=inner.task.id,
            split=inner.task.split,
            seed=self.seed,
            messages=self.messages,
            turns=self.turns,
            steps=list(inner.trace),
            step_turns=self.step_turns,
            tools=self.tools,
            export=export,
            duration_s=time.monotonic() - start,
            user_transcript=list(inner.user_transcript),
            **result,
        )


# -- reading back and scoring --------------------------------------------------------


def read_step_collected(
    store: Store, run_id: str, reward: RewardSource = "visible", step: StepConfig | None = None
) -> StepCollected:
    """The scored parents and branches of a stored step-level collection.

    Each branch's step reward is computed here (from its stored conversation and its
    task) when ``step`` has a step reward and the branch has an outcome reward and no
    gating flag.
    """
    base = read_collected(store, run_id, reward)
    steps = store.run_steps(run_id)
    rows = {row.id: row for row in store.episodes(run_id)}
    tasks: dict[str, dict[str, Task]] = {}
    branches: dict[str, Branch] = {}
    for scored in base.episodes:
        episode_id = scored.episode.episode_id
        line = store.lineage(episode_id)
        if line is None:
            continue
        turn = turn_at(steps.get(episode_id, []), line.fork_step)
        value = None
        if step is not None and step.step_reward is not None and _rewardable(scored):
            known = tasks.setdefault(scored.env_id, {t.id: t for t in tasks_of(scored.env_id)})
            cut = conversation_to(rows[episode_id].messages, turn)
            value = step.step_reward(known[scored.task_id], cut, turn)
        branches[episode_id] = Branch(
            parent_id=line.parent_id,
            fork_step=line.fork_step,
            branch=line.branch,
            turn=turn,
            step_reward=value,
            refused=UNFORKABLE in scored.episode.flags,
        )
    return StepCollected(run_id=run_id, episodes=base.episodes, branches=branches)


def _rewardable(scored: ScoredEpisode) -> bool:
    return scored.training_reward is not None and not scored.episode.flags


def turn_at(steps: Sequence[StepRow], fork_step: int) -> int:
    """The index of the turn that made step ``fork_step``.

    Steps of a turn's later parallel calls carry no tokens of their own.
    """
    return sum(1 for s in steps[:fork_step] if s.completion_token_ids is not None)


def conversation_to(messages: Sequence[dict[str, Any]], turn: int) -> list[dict[str, Any]]:
    """The conversation up to and including assistant turn ``turn`` and its answers.

    Everything before the next assistant message (the tool messages answering the
    turn's calls, and a user message that follows them).
    """
    seen = -1
    for i, message in enumerate(messages):
        if message.get("role") == "assistant":
            seen += 1
            if seen == turn + 1:
                return [dict(m) for m in messages[:i]]
    return [dict(m) for m in messages]


def branch_signal(reward: float | None, step_reward: float | None, weight: float) -> float | None:
    """A branch's advantage signal: outcome reward + weight x step reward.

    None (left out) when it has no outcome reward (infra_error); a step reward of None
    adds nothing.
    """
    if reward is None:
        return None
    return reward + (weight * step_reward if step_reward is not None and weight else 0.0)


def step_samples(
    episodes: Sequence[ScoredEpisode],
    branches: Mapping[str, Branch],
    kind: AdvantageKind = "grpo",
    *,
    weight: float = 0.0,
    eos_token_id: int | None = None,
    allow_eval: bool = False,
    credit: Literal["tree", "branch"] = "tree",
) -> GroupSamples:
    """The samples of a step-level collection, each one turn with its advantage.

    Args:
        episodes: scored parents and branches.
        branches: episode id -> its `Branch` (lineage, branching turn, step reward).
        kind: grpo, dr_grpo or rloo. ``branch``: over each fork's K branches. ``tree``:
            grpo divides each credit by its task's signal std, dr_grpo and rloo do not.
        weight: the step reward's weight in a branch's signal (`branch_signal`).
        eos_token_id: marks a sample whose completion was cut (see `episode_samples`).
        allow_eval: also accept held-out episodes (refused by default:
            `refuse_held_out_episodes`).
        credit: ``branch``, one sample per branch of a fork with variance (its branching
            turn; parents do not train); ``tree``, one per turn with a nonzero credit
            (`gym.train._credit`): the parents' turns and the branches' own turns.

    Raises:
        HeldOutError: a held-out episode without ``allow_eval``.
        ConfigError: a branch whose branching turn is not among its turns.
    """
    if not allow_eval:
        refuse_held_out_episodes(e.episode for e in episodes)
    if credit == "tree":
        return _tree_samples(episodes, branches, kind, weight, eos_token_id)
    own = [e for e in episodes if e.episode.episode_id in branches]
    info = [branches[e.episode.episode_id] for e in own]
    groups: list[Hashable] = [b.group for b in info]
    adv = advantages([_signal(e, b, weight) for e, b in zip(own, info, strict=True)], groups, kind)
    samples = [
        _turn_sample(e, b.turn, value, eos_token_id)
        for e, b, value, keep in zip(own, info, adv.values, adv.keep, strict=True)
        if keep and not b.refused
    ]
    return GroupSamples(samples=samples, advantages=adv)


def _signal(scored: ScoredEpisode, branch: Branch | None, weight: float) -> float | None:
    """An episode's advantage signal: a branch's `branch_signal`, a parent's reward."""
    if branch is None:
        return scored.training_reward
    step_reward = branch.step_reward if _rewardable(scored) else None
    return branch_signal(scored.training_reward, step_reward, weight)


def tree_signals(
    episodes: Sequence[ScoredEpisode], branches: Mapping[str, Branch], weight: float = 0.0
) -> TreeCredit:
    """The tree credit (`gym.train._credit.tree_credit`) of a step-level collection."""
    signals = {
        e.episode.episode_id: _signal(e, branches.get(e.episode.episode_id), weight)
        for e in episodes
    }
    return tree_credit(episodes, branches, signals)


def _tree_samples(
    episodes: Sequence[ScoredEpisode],
    branches: Mapping[str, Branch],
    kind: AdvantageKind,
    weight: float,
    eos: int | None,
) -> GroupSamples:
    """One sample per turn with a nonzero tree credit, scaled as ``kind`` says."""
    tree = tree_signals(episodes, branches, weight)
    by_id = {e.episode.episode_id: e for e in episodes}
    std = {c.task: tree.spread(c.task) for c in tree.credits}  # the tasks with a spread
    samples, totals = [], {i: 0.0 for i in by_id}
    refused = {i for i, b in branches.items() if b.refused}  # no turn of their own
    for c in tree.credits:
        if c.raw and c.episode_id not in refused:
            value = c.raw / (std[c.task] + 1e-6 if kind == "grpo" else 1.0)
            samples.append(_turn_sample(by_id[c.episode_id], c.turn, value, eos))
            totals[c.episode_id] += value
    trained = {s.episode_id for s in samples}
    adv = Advantages(
        values=[totals[e.episode.episode_id] for e in episodes],
        keep=[e.episode.episode_id in trained for e in episodes],
        groups=len(tree.tasks),
        zero_variance_groups=len(tree.tasks) - len(std),
        infra_excluded=tree.infra_excluded,
        group_std=std,
    )
    return GroupSamples(samples=samples, advantages=adv)


def _turn_sample(scored: ScoredEpisode, turn: int, advantage: float, eos: int | None) -> Sample:
    """One turn alone: its prompt (token-in) and completion, only it masked in."""
    turns = scored.episode.turns
    if not 0 <= turn < len(turns):
        raise ConfigError(
            f"episode {scored.episode.episode_id}: its turn {turn} to train is not among "
            f"its {len(turns)} turns"
        )
    sample = episode_samples([turns[turn]], eos_token_id=eos).samples[0]
    return sample.model_copy(
        update={
            "turns": [turn],
            "advantage": advantage,
            "episode_id": scored.episode.episode_id,
        }
    )
