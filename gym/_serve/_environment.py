"""One OpenEnv session: a boxgym environment behind openenv-core's `Environment` API.

The OpenEnv server makes one `BoxgymEnvironment` per WebSocket session and calls its
``reset``, ``step`` and ``state`` from that session's own worker thread, so the
environment's blocking calls (containers, grading) never hold up the other sessions.
The session makes its `ContainerEnv` (``gym.make``) at its first reset and keeps it for
every episode it runs; closing the session (the client leaves, or it stays idle past
the server's timeout) closes it, and its agent container goes with it.
"""

from __future__ import annotations

import uuid
from typing import Any, SupportsFloat

import gymnasium
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import EnvironmentMetadata

from gym._core._errors import ConfigError, InfraError
from gym._core._models import Outcome, Verdict
from gym._core._version import __version__
from gym._envs._env import env_of
from gym._envs._registry import env_class, make
from gym._serve._models import Call, EpisodeState, ToolAction, ToolObservation

__all__ = ["MAX_ID", "NOT_RUN", "BoxgymEnvironment"]

MAX_ID = 255
"""The longest ``episode_id`` or ``task_id`` a reset takes (OpenEnv's HTTP bound)."""

NOT_RUN = "Not run: {why}, so the calls after it in this step were not executed."
"""The output of a call left unrun after an earlier call of its step ended the episode."""

Transition = tuple[str, SupportsFloat, bool, bool, dict[str, Any]]


class BoxgymEnvironment(Environment[ToolAction, ToolObservation, EpisodeState]):
    """A registered boxgym environment as an OpenEnv environment, one per session.

    Args:
        env_id: the registered id (``boxgym/PyFunc-v0``).
        make_kwargs: keyword arguments for ``gym.make`` (``split``, budgets...).
    """

    SUPPORTS_CONCURRENT_SESSIONS = True
    """Every session owns its environment and its containers: nothing is shared."""

    def __init__(self, env_id: str, make_kwargs: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.env_id = env_id
        self.make_kwargs = dict(make_kwargs or {})
        self._env: gymnasium.Env[Any, Any] | None = None
        self._state = EpisodeState(env_id=env_id)
        self._closed = False

    # -- the OpenEnv contract ---------------------------------------------------------

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        task_id: str | None = None,
        options: dict[str, Any] | None = None,
        **unknown: Any,
    ) -> ToolObservation:
        """Start an episode: the task's prompt, its tools and its system prompt.

        Args:
            seed: the reset seed; without ``task_id`` it picks the task.
            episode_id: the episode's id in `state` (a fresh one by default).
            task_id: the task to run.
            options: the environment's reset options (``task_id`` is ``{"task": ...}``).
            **unknown: refused, naming the arguments reset takes (OpenEnv passes every
                key the client sends).

        Raises:
            ConfigError: an unknown or malformed argument (checked before the episode
                starts: a refused reset starts none), an unknown task, or a closed
                session.
            InfraError: no sandbox could be started (never a reward).
        """
        _check_reset(seed, episode_id, task_id, options, unknown)
        env = self._live_env()
        chosen = {**(options or {}), **({"task": task_id} if task_id is not None else {})}
        prompt, info = env.reset(seed=seed, options=chosen)
        inner = env_of(env)
        assert inner.task is not None
        self._state = EpisodeState(
            episode_id=episode_id or uuid.uuid4().hex,
            env_id=self.env_id,
            task_id=inner.task.id,
            split=inner.task.split,
            done=False,
        )
        return ToolObservation(
            text=prompt,
            env_id=self.env_id,
            task_id=inner.task.id,
            tools=info["tools"],
            system_prompt=info.get("system_prompt"),
            reward=None,
            done=False,
        )

    def step(
        self, action: ToolAction, timeout_s: float | None = None, **kwargs: Any
    ) -> ToolObservation:
        """Run the action's call (or calls, in order) in the episode.

        An episode that cannot be graded for infrastructure reasons ends here with
        ``outcome="infra_error"`` and no reward: never 0 or 1.

        Raises:
            ConfigError: no episode is running (reset first), or the session is closed.
        """
        env = self._live_env()
        if env_of(env).done:
            raise ConfigError("no episode is running in this session: reset first")
        self._state.step_count += 1
        try:
            if action.calls:
                outputs, last = self._calls(env, action.calls, action.content)
                return self._observed(last, outputs)
            return self._observed(env.step(_wire(action)))
        except InfraError as exc:
            return self._infra(exc)

    @property
    def state(self) -> EpisodeState:
        """The session's episode as it stands (its sandbox read now)."""
        inner = env_of(self._env) if self._env is not None else None
        sandbox = inner.sandbox if inner is not None else None
        return self._state.model_copy(update={"sandbox": sandbox.id if sandbox else None})

    def get_metadata(self) -> EnvironmentMetadata:
        """The environment's id and family, and boxgym's version."""
        family = getattr(env_class(self.env_id), "family", "") or "?"
        return EnvironmentMetadata(
            name=self.env_id,
            description=f"the boxgym environment {self.env_id} (family {family})",
            version=__version__,
        )

    def close(self) -> None:
        """Close the environment: its episode's sandbox is given back (safe to repeat)."""
        self._closed = True
        if self._env is not None:
            self._env.close()

    # -- helpers ----------------------------------------------------------------------

    def _live_env(self) -> gymnasium.Env[Any, Any]:
        if self._closed:
            raise ConfigError(
                "this session is closed (it was idle longer than the server's "
                "--session-timeout, or the server is stopping): connect again"
            )
        if self._env is None:
            self._env = make(self.env_id, **self.make_kwargs)
        return self._env

    def _calls(
        self, env: gymnasium.Env[Any, Any], calls: list[Call], content: str | None
    ) -> tuple[list[str], Transition]:
        """Step each call in order until one ends the episode or the user's turn."""
        outputs: list[str] = []
        for i, call in enumerate(calls):
            wire = {"name": call.tool, "arguments": call.arguments, "id": call.id}
            last: Transition = env.step({**wire, "content": content})
            outputs.append(last[0])
            ended, info = last[2] or last[3], last[4]
            if ended or "user" in info:
                why = "the episode ended" if ended else f"the user's turn ended with {call.tool}"
                outputs += [NOT_RUN.format(why=why)] * (len(calls) - i - 1)
                break
        return outputs, last

    def _observed(
        self, transition: Transition, outputs: list[str] | None = None
    ) -> ToolObservation:
        """The observation of a step's (last) transition, with the verdict at the end."""
        obs, reward, terminated, truncated, info = transition
        inner = env_of(self._env) if self._env is not None else None
        self._state.turn = inner.turn if inner is not None else 0
        done = bool(terminated or truncated)
        verdict = Verdict.model_validate(info["verdict"]) if done and "verdict" in info else None
        return self._observation(
            done=done,
            text=obs,
            outputs=outputs or [],
            user=info.get("user"),
            truncated=bool(truncated),
            verdict=verdict,
            reward=float(reward),
            end_reason=info.get("end_reason", ""),
        )

    def _infra(self, exc: InfraError) -> ToolObservation:
        """The end of an episode that could not be completed or graded: no reward."""
        verdict = Verdict.model_validate(exc.verdict) if exc.verdict else None
        return self._observation(
            done=True,
            text=f"Episode over: infra_error ({exc}).",
            verdict=verdict,
            outcome="infra_error",
            reward=None,
            end_reason=f"infra: {exc}",
        )

    def _observation(
        self,
        *,
        done: bool,
        verdict: Verdict | None,
        reward: float | None,
        outcome: Outcome | None = None,
        **fields: Any,
    ) -> ToolObservation:
        """An observation of this session's episode; at its end, the verdict's fields."""
        outcome = verdict.outcome if verdict is not None else outcome
        if done:
            self._state.done, self._state.outcome = True, outcome
        if outcome == "infra_error":
            reward = None  # the verdict has none; never a number for an infra failure
        return ToolObservation(
            env_id=self.env_id,
            task_id=self._state.task_id or "",
            turn=self._state.turn,
            outcome=outcome,
            flags=[f.name for f in verdict.flags] if verdict else [],
            verified=verdict.verified if verdict else False,
            verdict=verdict.model_dump(mode="json") if verdict else None,
            done=done,
            reward=reward,
            **fields,
        )


def _check_reset(
    seed: Any, episode_id: Any, task_id: Any, options: Any, unknown: dict[str, Any]
) -> None:
    """Refuse the reset arguments that reset does not take, before the episode starts.

    OpenEnv hands them over as the client wrote them: JSON of any type.

    Raises:
        ConfigError: naming the argument and what it takes.
    """
    if unknown:
        known = "seed, episode_id, task_id, options"
        raise ConfigError(f"reset takes {known}; not {', '.join(sorted(unknown))}")
    if seed is not None and (type(seed) is not int or seed < 0):
        raise ConfigError(f"reset's seed is an integer from 0, not {_shown(seed)}")
    for name, value in (("episode_id", episode_id), ("task_id", task_id)):
        if value is not None and (not isinstance(value, str) or len(value) > MAX_ID):
            raise ConfigError(f"reset's {name} is a string of up to {MAX_ID} characters")
    if options is None:
        return
    if not isinstance(options, dict):
        raise ConfigError(f'reset\'s options is an object ({{"task": id}}), not {_shown(options)}')
    if set(options) - {"task"}:
        wrong = ", ".join(sorted(map(str, set(options) - {"task"})))
        raise ConfigError(f"reset's options take task; not {wrong}")
    task = options.get("task")
    if task is not None and (not isinstance(task, str) or len(task) > MAX_ID):
        raise ConfigError(f"reset's options.task is a string of up to {MAX_ID} characters")


def _shown(value: Any) -> str:
    """A client's value in an error message, cut short."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _wire(action: ToolAction) -> dict[str, Any] | str:
    """The Gymnasium action of a one-call step (the plain text when it names no tool)."""
    if not action.tool:
        return action.content or ""
    return {"name": action.tool, "arguments": action.arguments, "content": action.content}
