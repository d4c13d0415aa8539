"""Attacks carried out as one scripted episode through an environment's normal tools.

A `ScriptAttack` builds its tool calls when the episode starts (from fresh random
names, the task and the environment's own contract, for example its oracle calls),
replays them with `AttackPolicy` through the normal rollout (`gym.run_episode`), and
judges the `EpisodeResult`: the outcome class, the reward, the flags, the markers its
probes printed, and any side observation made from the host.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from gym._core._models import Task
from gym._core._tools import ToolCall
from gym._envs._registry import make, tasks_of
from gym._policy import ScriptPolicy
from gym._redteam._core import Attack, Context, Finding, Names
from gym._run._rollout import EpisodeResult, run_episode

__all__ = [
    "AnyTask",
    "AttackPolicy",
    "Beside",
    "Expect",
    "Script",
    "ScriptAttack",
    "bash",
    "describe",
    "observations",
    "sql",
    "write",
]

Script = Callable[[Names, Task, Any], list[ToolCall]]
"""Builds an attack's calls: (random names, the task, the unwrapped environment)."""
Observer = Callable[[Context, Names, EpisodeResult, Any], Finding | None]
"""A side observation after the episode (the host's view): a `Finding`, or None."""
Beside = Callable[[Names, Any], AbstractContextManager[Any]]
"""What runs beside an episode: (the names, the unwrapped environment) -> a context."""


def bash(command: str) -> ToolCall:
    """A ``bash`` tool call."""
    return ToolCall(name="bash", arguments={"command": command})


def write(path: str, content: str) -> ToolCall:
    """A ``write_file`` tool call."""
    return ToolCall(name="write_file", arguments={"path": path, "content": content})


def sql(query: str) -> ToolCall:
    """An ``sql`` tool call."""
    return ToolCall(name="sql", arguments={"query": query})


class AttackPolicy(ScriptPolicy):
    """Replays an attack's calls (built at the episode's start), then submits.

    It keeps the environment it was started with, so that host-side observers can
    look at the episode's sandbox while it runs (``docker inspect``, for example).
    """

    name = "redteam"

    def __init__(self, script: Script, names: Names) -> None:
        super().__init__()
        self.build, self.names = script, names
        self.env: Any = None
        self.seen: dict[str, Any] = {}
        """Side observations a script's calls asked for (filled by `on_call`)."""

    def script(self, task: Task, env: Any) -> list[ToolCall]:
        """The attack's calls for this episode."""
        self.env = env
        return self.build(self.names, task, env)

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        """The next call; before ``submit``, note what the host sees of the sandbox."""
        turn = super().act(messages, tools)
        if turn.call is not None and turn.call.name == "submit":
            self._inspect()
        return turn

    def _inspect(self) -> None:
        sandbox = getattr(self.env, "sandbox", None)
        if sandbox is not None and "inspect" not in self.seen:
            try:
                self.seen["inspect"] = sandbox.inspect()
            except Exception as exc:  # noqa: BLE001 - an observation, never a crash
                self.seen["inspect_error"] = repr(exc)


@dataclass(frozen=True)
class Expect:
    """What a scripted attack's episode must end as.

    Attributes:
        outcomes: the outcome classes accepted (``fail`` for anything aimed at reward).
        flags: at least one of these flags must be raised (none needed if empty).
        probes: the markers printed by its probes are judged (ran, and no breach).
        no_flags: the episode must raise no flag at all (a false-positive check).
    """

    outcomes: frozenset[str] = frozenset({"fail"})
    flags: frozenset[str] = frozenset()
    probes: bool = False
    no_flags: bool = False

    def text(self) -> str:
        """The expectation in words, for the table."""
        parts = ["/".join(sorted(self.outcomes))]
        if self.flags:
            parts.append("flag " + " or ".join(sorted(self.flags)))
        if self.no_flags:
            parts.append("no flag")
        if self.probes:
            parts.append("contained")
        return ", ".join(parts)


def observations(result: EpisodeResult) -> str:
    """Every observation the agent was shown, in order."""
    return "\n".join(step.observation for step in result.steps)


def describe(result: EpisodeResult) -> str:
    """An episode's ending in one line: outcome, reward, flags."""
    flags = sorted({f.name for f in result.verdict.flags}) if result.verdict else []
    reward = "none" if result.reward is None else f"{result.reward:g}"
    text = f"{result.outcome} reward={reward}"
    if flags:
        text += " flags=" + ",".join(flags)
    if result.outcome == "infra_error":
        text += f" ({result.end_reason[:160]})"
    return text


def judge(expect: Expect, names: Names, result: EpisodeResult, *, final: bool = True) -> Finding:
    """Whether an episode ended as expected (probes are judged on the ``final`` one)."""
    seen = describe(result)
    flags = {f.name for f in result.verdict.flags} if result.verdict else set()
    if result.outcome not in expect.outcomes:
        return Finding(seen, False)
    if result.outcome == "fail" and result.reward not in (0.0, None):
        return Finding(seen + " (a fail with a reward)", False)
    if expect.flags and not flags & expect.flags:
        return Finding(seen + " (expected flag missing)", False)
    if expect.no_flags and flags:
        return Finding(seen + " (false positive)", False)
    if expect.probes and final:
        probe = names.judge(observations(result))
        return Finding(f"{seen}; {probe.observed}", probe.held)
    return Finding(seen, True)


@dataclass(eq=False, repr=False)
class ScriptAttack(Attack):
    """An attack that is one scripted episode, judged by `Expect` and observers.

    Args:
        name: unique name.
        envs: environment ids it runs in.
        tasks: the task per environment id (``*`` for any other).
        script: builds the calls (see `Script`).
        expect: what the episode must end as.
        observers: host-side checks after the episode.
        env_kwargs: keyword arguments for making the environment.
        then: scripts of further episodes, each on a fresh container, sharing the names
            (persistence checks); the expectation applies to every episode.
        beside: a context entered around each episode, given the names and the
            unwrapped environment: something running at the same time (another agent's
            container, for example).
        gap: a known gap (who closes it), when it does not hold yet.
        fast: part of the quick subset.
        solo: run alone.
        note: what it does, in a few words (documentation).
    """

    name: str = ""
    envs: tuple[str, ...] = ()
    tasks: dict[str, str] = field(default_factory=dict)
    script: Script = lambda names, task, env: []  # noqa: E731
    expect: Expect = Expect()
    observers: Sequence[Observer] = ()
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    then: tuple[Script, ...] = ()
    beside: Beside | None = None
    gap: str = ""
    fast: bool = False
    solo: bool = False
    note: str = ""

    def __post_init__(self) -> None:
        self.expected = self.expect.text()

    def task_for(self, env_id: str) -> str:
        """The task this attack runs in an environment."""
        return self.tasks.get(env_id) or self.tasks["*"]

    def run(self, ctx: Context, env_id: str) -> Finding:
        """Run the episode(s) and judge them (a harness exception is a failed finding)."""
        names = ctx.names()
        for script in (self.script, *self.then):
            policy = AttackPolicy(script, names)
            result = self._episode(ctx, env_id, policy)
            if isinstance(result, Finding):
                return result
            final = script is (self.then or (self.script,))[-1]
            finding = judge(self.expect, names, result, final=final)
            for observer in self.observers:
                extra = observer(ctx, names, result, policy)
                if extra is not None:
                    held = finding.held and extra.held
                    finding = Finding(f"{finding.observed}; {extra.observed}", held)
            if not finding.held:
                return finding
        return finding

    def _episode(self, ctx: Context, env_id: str, policy: AttackPolicy) -> EpisodeResult | Finding:
        """One episode; started again (up to ``_STARTS`` times) while it never got to start.

        An episode that ended as ``infra_error`` before its first call (its sandbox did not
        start, on a loaded engine) says nothing about the attack: it is not judged.
        """
        names = policy.names
        marks = len(names.ran), len(names.breaches)
        for _ in range(_STARTS - 1):
            result = self._one_episode(ctx, env_id, policy)
            if not _never_started(result):
                return result
            del names.ran[marks[0] :], names.breaches[marks[1] :]  # markers of the lost start
            policy.seen.clear()  # the policy starts over (`start` builds its calls anew)
        return self._one_episode(ctx, env_id, policy)

    def _one_episode(
        self, ctx: Context, env_id: str, policy: AttackPolicy
    ) -> EpisodeResult | Finding:
        env = make(env_id, run=ctx.label, **{**self.env_kwargs, **ctx.env_kwargs})
        beside = self.beside(policy.names, env.unwrapped) if self.beside else nullcontext()
        try:
            with beside:
                return run_episode(env, policy, task_id=self.task_for(env_id))
        except Exception as exc:  # noqa: BLE001 - a crash of the harness is the finding
            where = traceback.extract_tb(exc.__traceback__)[-1]
            return Finding(
                f"the harness raised {type(exc).__name__}: {str(exc)[:160]} "
                f"({where.filename.rsplit('/', 1)[-1]}:{where.lineno})",
                False,
            )
        finally:
            env.close()


_STARTS = 3
"""How many times an attack's episode is started while it ends before its first call."""


def _never_started(result: EpisodeResult | Finding) -> bool:
    """Whether an episode ended as ``infra_error`` before the policy made any call."""
    if not isinstance(result, EpisodeResult):
        return False
    return result.outcome == "infra_error" and not result.steps


@dataclass(eq=False, repr=False)
class AnyTask(ScriptAttack):
    """A scripted attack on a task drawn from the run's random source, in each run anew.

    Attributes:
        fits: only tasks it holds for are drawn (all by default).
    """

    fits: Callable[[Task], bool] = lambda task: True  # noqa: E731
    chosen: dict[str, str] = field(default_factory=dict)

    def run(self, ctx: Context, env_id: str) -> Finding:
        """Draw the task, then run as `ScriptAttack` does."""
        tasks = self._fitting(env_id)
        if not tasks:
            return Finding(f"no task of {env_id} fits this row", False)
        self.chosen[env_id] = ctx.rng.choice(tasks)
        return super().run(ctx, env_id)

    def task_for(self, env_id: str) -> str:
        """The task drawn for this environment (before a run: the first that fits)."""
        if env_id not in self.chosen:
            return next(iter(self._fitting(env_id)), "")
        return self.chosen[env_id]

    def _fitting(self, env_id: str) -> list[str]:
        return sorted(t.id for t in tasks_of(env_id) if self.fits(t))
