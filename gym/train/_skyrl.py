"""SkyRL drives boxgym environments: a skyrl-gym text environment over one boxgym episode.

For people who train with SkyRL (skyrl-gym 0.4.0). SkyRL's generator samples the
assistant's text and hands it to ``env.step(text)``; `BoxgymTextEnv` reads the tool calls
out of that text with boxgym's own parser (`gym._policy._parse.parse_tool_call`, the
Hermes ``<tool_call>`` form the system prompt teaches), runs them in the episode's
container and answers with the tool results as the next user message. When the episode
ends (the final tool, boxgym's step or time budget, or SkyRL's ``max_turns``) it is graded
on the host as every boxgym episode is, and the step's ``reward`` is the verdict's training
reward (0 on every step before), scored as ``gym train grpo`` and TRL score it
(`gym.train._grpo_collect.verdict_reward`): the visible checks' reward by default (the row's
``reward``: ``visible`` or ``verdict``), 0 with a gating flag; the hidden checks are only
watched (``get_metrics``: ``hidden_pass``). ``metadata["verdict"]`` holds the whole verdict.

An episode SkyRL stops before it ends (its generator's length stop: the context passed
``generator.max_input_length``) is graded as it stands when SkyRL closes it, as boxgym's
runner grades a full context: the verdict and its training reward are kept (``verdict``,
``reward``, ``unscored``) and logged. SkyRL takes no reward at close: the trajectory keeps
the per-step rewards it has (0), so such trajectories should be left out of training
(size ``max_input_length`` and ``max_turns`` so that episodes end first; see
docs/training.md).

An episode boxgym could not run or grade (``infra_error``) has no reward: the step raises
`gym.errors.InfraError` rather than return a 0 or a 1 that SkyRL would train on.

One instance is one episode (SkyRL makes an environment per trajectory). The dataset's
row names the episode in its extra columns (SkyRL's ``env_extras``): ``env_id``,
``task`` (a training-split task id; held-out tasks are refused) and ``seed``; SkyRL adds
``max_turns``. `register` puts the class in skyrl-gym's registry as ``boxgym`` (the
row's ``env_class``); `skyrl_rows` writes such rows for every training task.

skyrl-gym is imported here at module level: import this module only where it is
installed (``scripts/test-adapters.sh`` installs it beside the venv).
"""

from __future__ import annotations

import logging
from typing import Any

import skyrl_gym
from pydantic import BaseModel, ConfigDict
from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput

from gym._core._errors import GymError, InfraError
from gym._envs._env import ContainerEnv, env_of
from gym._envs._registry import make
from gym._envs._splits import refuse_held_out, training_tasks
from gym._policy._parse import parse_tool_call, tools_prompt
from gym._run._rollout import NOT_RUN, action_of
from gym.train._grpo_collect import RewardSource, hidden_passed, verdict_reward

__all__ = ["ENV_CLASS", "BoxgymTextEnv", "Extras", "register", "skyrl_rows"]

ENV_CLASS = "boxgym"
"""The id `register` gives the environment in skyrl-gym's registry (a row's ``env_class``)."""

Transition = tuple[str, Any, bool, bool, dict[str, Any]]

_log = logging.getLogger(__name__)


class Extras(BaseModel):
    """The episode a SkyRL row asks for (its ``env_extras``; other columns are ignored)."""

    model_config = ConfigDict(extra="ignore")

    env_id: str
    """The boxgym environment, ``boxgym/Name-vN``."""
    task: str
    """The task id: one of the environment's training splits."""
    seed: int | None = None
    """The episode's reset seed."""
    max_turns: int | None = None
    """SkyRL's ``generator.max_turns`` (it sets this): the episode ends, graded as it
    stands, after this many assistant turns. None: only boxgym's own budgets end it."""
    run: str = "skyrl"
    """The ``boxgym.run`` label of the episode's containers."""
    reward: RewardSource = "visible"
    """Where the training reward comes from: the visible checks (as ``gym train grpo``)
    or the whole verdict."""


class BoxgymTextEnv(BaseTextEnv):  # type: ignore[misc]
    """One boxgym episode as a skyrl-gym text environment (``init``, ``step``, ``close``).

    Args:
        env_config: SkyRL's ``environment.skyrl_gym.boxgym`` section (unused).
        extras: the row's extra columns, read as `Extras`.

    Raises:
        HeldOutError: the task is of a held-out split.
    """

    def __init__(self, env_config: Any = None, extras: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.extras = Extras.model_validate(dict(extras or {}))
        self.max_turns = self.extras.max_turns or 0
        self.env = make(self.extras.env_id, run=self.extras.run)
        self.inner: ContainerEnv[Any] = env_of(self.env)
        try:
            refuse_held_out(self.extras.env_id, [self.inner.task_by_id(self.extras.task)])
        except GymError:
            self.env.close()
            raise
        self.tools: list[dict[str, Any]] = []
        self.verdict: dict[str, Any] | None = None
        self.reward: float | None = None
        """The verdict's training reward (`verdict_reward`), once graded."""
        self.unscored = False
        """Graded at close, after SkyRL stopped the episode: SkyRL never saw ``reward``."""

    def init(self, prompt: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Start the episode's container: the system prompt (with the tools) and the task.

        Args:
            prompt: the row's prompt, kept between the system prompt and the task's.
        """
        obs, info = self.env.reset(seed=self.extras.seed, options={"task": self.extras.task})
        self.tools = list(info["tools"])
        system = f"{info['system_prompt']}\n\n{tools_prompt(self.tools)}"
        first = [{"role": "system", "content": system}, *prompt, {"role": "user", "content": obs}]
        return first, {"task_id": info["task_id"], "tools": self.tools}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """Run the calls written in one assistant message; the training reward at the end.

        Raises:
            InfraError: the episode could not be run or graded (it has no reward).
        """
        self.turns += 1
        obs, _, terminated, truncated, info = self._act(action)
        if not (terminated or truncated) and self.max_turns and self.turns >= self.max_turns:
            obs, _, terminated, truncated, info = self.inner.end_episode(
                reason="max_turns", truncated=True
            )
        if terminated or truncated:
            reward = self._grade(info["verdict"])
            return BaseTextEnvStepOutput(
                observations=[],
                reward=reward,
                done=True,
                metadata={"verdict": self.verdict, "end_reason": info.get("end_reason", "")},
            )
        said = [{"role": "user", "content": obs}]
        return BaseTextEnvStepOutput(observations=said, reward=0.0, done=False, metadata={})

    def _act(self, text: str) -> Transition:
        """Step each call of the text in order (a plain answer is stepped as text).

        The observation joins every call's result; a call after one that ended the
        episode or the user's turn is not run. A message of the next user turn follows.
        """
        found = parse_tool_call(text, [t["function"]["name"] for t in self.tools])
        if not found.calls:
            obs, reward, terminated, truncated, info = self.env.step(text)
            hint = f"\n({found.error})" if found.error else ""
            return obs + hint, reward, terminated, truncated, info
        parts: list[str] = []
        for i, call in enumerate(found.calls):
            obs, reward, terminated, truncated, info = self.env.step(action_of(call, text))
            parts.append(obs)
            if terminated or truncated or "user" in info:
                why = "the episode ended" if terminated or truncated else "your turn ended"
                parts += [NOT_RUN.format(why=why)] * (len(found.calls) - i - 1)
                break
        if "user" in info and not (terminated or truncated):
            parts.append(str(info["user"]))
        return "\n\n".join(parts), reward, terminated, truncated, info

    def _grade(self, verdict: dict[str, Any]) -> float:
        """Keep the verdict; its training reward (`verdict_reward`).

        Raises:
            InfraError: the verdict has no reward (never a 0 or a 1 to train on).
        """
        self.verdict = verdict
        reward = verdict_reward(verdict, self.extras.reward)
        if reward is None:
            raise InfraError(f"{self.extras.task}: no reward", verdict=verdict)
        self.reward = reward
        return reward

    def close(self) -> None:
        """Grade an episode SkyRL stopped before its end as it stands; give the container back.

        SkyRL's generator stops a trajectory whose context passed ``max_input_length``
        (``stop_reason="length"``) and closes the environment: the episode is graded here,
        as boxgym grades a full context, and the verdict kept (``unscored``: SkyRL
        trains on the per-step rewards it already has, 0). Safe to call more than once.

        Raises:
            InfraError: the stopped episode could not be graded (it has no reward).
        """
        try:
            if not self.inner.done:  # reset, and not ended: SkyRL stopped it
                info = self.inner.end_episode(reason="stopped", truncated=True)[4]
                self.unscored = True
                reward = self._grade(info["verdict"])
                _log.warning(
                    "%s/%s: SkyRL stopped the episode before its end (its length stop): graded "
                    "as it stands, %s, training reward %s; SkyRL keeps its per-step rewards "
                    "(0), filter such trajectories out (docs/training.md)",
                    self.extras.env_id,
                    self.extras.task,
                    info["verdict"]["outcome"],
                    reward,
                )
        finally:
            self.env.close()

    def get_metrics(self) -> dict[str, Any]:
        """The episode's outcome as numbers SkyRL averages: turns, reward, pass, hidden, flags.

        ``reward`` is the training reward, ``hidden_pass`` the held-out monitor (their gap
        is what ``gym train``'s watch follows). An episode not ended yet has only
        ``turns`` and ``unended`` (SkyRL asks before it closes a stopped episode).
        """
        if self.verdict is None:
            return {"turns": self.turns, "unended": 1.0}
        components = self.verdict.get("components") or {}
        hidden = hidden_passed(str(self.verdict["outcome"]), components)
        return {
            "turns": self.turns,
            "unended": 0.0,
            "reward": self.reward,
            "passed": float(self.verdict["outcome"] == "pass"),
            "hidden_pass": float(bool(hidden)),
            "flagged": float(bool(self.verdict.get("flags"))),
        }


def register(env_class: str = ENV_CLASS) -> None:
    """Put `BoxgymTextEnv` in skyrl-gym's registry under ``env_class`` (idempotent)."""
    if env_class not in skyrl_gym.registry:
        skyrl_gym.register(id=env_class, entry_point=f"{__name__}:BoxgymTextEnv")


def skyrl_rows(
    env_id: str, *, seed: int = 0, reward: RewardSource = "visible"
) -> list[dict[str, Any]]:
    """A SkyRL dataset row per training task of an environment (write them as parquet).

    The prompt is empty: `BoxgymTextEnv.init` puts the system prompt and the task's own
    prompt in front of it. ``reward``: the training reward's source (`Extras.reward`).
    """
    return [
        {
            "prompt": [],
            "env_class": ENV_CLASS,
            "env_id": env_id,
            "task": t.id,
            "seed": seed,
            "reward": reward,
        }
        for t in training_tasks(env_id)
    ]
