"""verl drives boxgym environments: an agent loop and tools over one boxgym episode each.

For people who train with verl (0.9.1). verl's multi-turn rollouts run an agent loop per
trajectory (``verl.experimental.agent_loop``): the stock ``tool_agent`` loop generates
token-in/token-out, reads the calls with verl's tool parser (``multi_turn.format``,
Hermes by default), runs each through a ``BaseTool`` (``create``, ``execute``,
``release``) and merges the results into the token stream with a loss mask of 0. That
loop creates and releases a tool instance around every call and never asks a tool for
its reward, so a stateful episode needs a loop that owns it:

- `BoxgymAgentLoop` (registered as ``boxgym_agent``) subclasses verl's ``ToolAgentLoop``
  and keeps its generation, parsing, masks and logprobs. Per trajectory it makes and
  resets the boxgym episode the row names (``extra_info``: ``env_id``, ``task``,
  ``seed``; held-out tasks are refused), offers the episode's own tools (their JSON
  schemas go to the chat template), stops when the episode ends, grades an episode the
  model left unfinished as it stands (``truncated``), closes the container, and sets
  ``reward_score`` to the verdict's training reward (verl puts it on the last response
  token and skips its reward function). ``extra_fields["reward_extra_info"]`` holds the
  pass, the hidden checks' pass and the flag count.
- `BoxgymTool` is one boxgym tool as a verl ``BaseTool``: the instance id is the
  trajectory's episode id (``create`` returns it), ``execute`` steps that episode,
  ``calc_reward`` grades it if it has not ended and returns its training reward.

The training reward is scored as ``gym train grpo`` and TRL score it
(`gym.train._grpo_collect.verdict_reward`): the visible checks' reward by default (the row's
``reward``: ``visible`` or ``verdict``), 0 with a gating flag; the hidden checks are
only watched (``boxgym_hidden_pass``).
  ``release`` leaves the episode to its loop, which closes it after the trajectory.

An episode boxgym could not run or grade (``infra_error``) has no reward: the loop
raises `gym.errors.InfraError` from ``run`` (verl's rollout step fails) rather than
give verl a 0 or a 1 to train on. `verl_rows` writes dataset rows for the training tasks.

verl is imported here at module level: import this module only where verl is installed
(``scripts/test-adapters.sh`` installs what this seam imports beside the venv).
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any
from uuid import uuid4

from pydantic import BaseModel, ConfigDict
from verl.experimental.agent_loop.agent_loop import AgentLoopOutput, register
from verl.experimental.agent_loop.tool_agent_loop import AgentState, ToolAgentLoop
from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

from gym._core._errors import ConfigError, GymError, InfraError
from gym._envs._env import ContainerEnv, env_of
from gym._envs._registry import make
from gym._envs._splits import refuse_held_out, training_tasks
from gym.train._grpo_collect import RewardSource, hidden_passed, verdict_reward

__all__ = ["AGENT_NAME", "BoxgymAgentLoop", "BoxgymTool", "Episode", "Extras", "verl_rows"]

AGENT_NAME = "boxgym_agent"
"""The agent loop's name in verl's registry (``rollout.agent.default_agent_loop`` or a
row's ``agent_name``)."""

OVER = "The episode is over; stop calling tools."


class Extras(BaseModel):
    """The episode a verl row asks for (its ``extra_info``; other keys are ignored)."""

    model_config = ConfigDict(extra="ignore")

    env_id: str
    """The boxgym environment, ``boxgym/Name-vN``."""
    task: str
    """The task id: one of the environment's training splits."""
    seed: int | None = None
    """The episode's reset seed."""
    run: str = "verl"
    """The ``boxgym.run`` label of the episode's containers."""
    reward: RewardSource = "visible"
    """Where the training reward comes from: the visible checks (as ``gym train grpo``)
    or the whole verdict."""


class Episode:
    """One boxgym episode, stepped by tool name from verl's threads.

    Raises:
        HeldOutError: the task is of a held-out split.
    """

    def __init__(self, extras: Extras) -> None:
        self.id = uuid4().hex
        self.extras = extras
        self.env = make(extras.env_id, run=extras.run)
        self.inner: ContainerEnv[Any] = env_of(self.env)
        try:
            refuse_held_out(extras.env_id, [self.inner.task_by_id(extras.task)])
        except GymError:
            self.env.close()
            raise
        self.verdict: dict[str, Any] | None = None
        self.error: InfraError | None = None
        self._lock = threading.Lock()

    @property
    def done(self) -> bool:
        """Whether the episode ended (graded, or an infrastructure error)."""
        return self.verdict is not None or self.error is not None

    def start(self) -> tuple[str, dict[str, Any]]:
        """Reset: the task's prompt and reset's info (``tools``, ``system_prompt``...)."""
        obs, info = self.env.reset(seed=self.extras.seed, options={"task": self.extras.task})
        return obs, info

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        """Run one tool call; its result (and the next user message, if a turn ended).

        Raises:
            InfraError: the episode could not be run or graded (kept in ``error``).
        """
        with self._lock:
            if self.done:
                return OVER
            try:
                obs, _, terminated, truncated, info = self.env.step(
                    {"name": name, "arguments": arguments}
                )
            except InfraError as exc:
                self.error = exc
                raise
            if terminated or truncated:
                self.verdict = info["verdict"]
            elif "user" in info:
                obs = f"{obs}\n\n{info['user']}"
            return str(obs)

    def finish(self) -> dict[str, Any]:
        """The verdict: an episode not ended yet is ended (truncated) and graded now.

        Raises:
            InfraError: the episode could not be run or graded (it has no reward).
        """
        with self._lock:
            if self.error is not None:
                raise self.error
            if self.verdict is None:
                try:
                    info = self.inner.end_episode(reason="agent_stopped", truncated=True)[4]
                except InfraError as exc:
                    self.error = exc
                    raise
                self.verdict = info["verdict"]
            return self.verdict

    def reward(self) -> float:
        """The training reward of the verdict (`finish`), from the row's reward source.

        Raises:
            InfraError: the episode could not be run or graded (it has no reward).
        """
        verdict = self.finish()
        reward = verdict_reward(verdict, self.extras.reward)
        if reward is None:
            raise InfraError(f"{self.extras.task}: no reward", verdict=verdict)
        return reward

    def close(self) -> None:
        """Give the container back (an episode not ended is never graded)."""
        self.env.close()


_episodes: dict[str, Episode] = {}
"""The episodes of the trajectories in flight in this process, by id (= instance id)."""


class BoxgymTool(BaseTool):  # type: ignore[misc]
    """One boxgym tool of the episode a trajectory runs; the instance id is its episode's.

    Args:
        config: verl's tool config (unused).
        tool_schema: the tool's OpenAI schema.
    """

    def __init__(self, config: dict[str, Any], tool_schema: OpenAIFunctionToolSchema) -> None:
        # BaseTool.__init__ prints the schema; the loop makes these per trajectory
        self.config, self.tool_schema = config, tool_schema
        self.name: str = tool_schema.function.name

    async def create(
        self, instance_id: str | None = None, **kwargs: Any
    ) -> tuple[str, ToolResponse]:
        """The episode id (``create_kwargs["episode"]``, else ``instance_id``).

        Raises:
            ConfigError: no episode of that id is in flight.
        """
        episode = (kwargs.get("create_kwargs") or {}).get("episode", instance_id)
        if episode not in _episodes:
            raise ConfigError(
                f"no boxgym episode {episode!r} is in flight: boxgym tools run inside the "
                f"{AGENT_NAME!r} agent loop (set rollout.agent.default_agent_loop)"
            )
        return str(episode), ToolResponse()

    async def execute(
        self, instance_id: str, parameters: dict[str, Any], **kwargs: Any
    ) -> tuple[ToolResponse, float, dict[str, Any]]:
        """Step the episode with this tool; the step reward is 0 (the verdict comes last)."""
        episode = _episodes[instance_id]
        text = await asyncio.to_thread(episode.call, self.name, parameters)
        return ToolResponse(text=text), 0.0, {"done": episode.done}

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        """The training reward (the episode is graded now if it has not ended)."""
        reward: float = await asyncio.to_thread(_episodes[instance_id].reward)
        return reward

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        """Nothing: the agent loop closes the episode when the trajectory ends."""


@register(AGENT_NAME)
class BoxgymAgentLoop(ToolAgentLoop):  # type: ignore[misc]
    """verl's tool agent loop over one boxgym episode per trajectory (see the module)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.pop("tools", None)  # the episode's own tools, set per trajectory
        super().__init__(*args, **kwargs)
        self.episode: Episode | None = None

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        """One trajectory: the episode's prompt and tools, verl's loop, the verdict's reward.

        Raises:
            InfraError: the episode could not be run or graded (it has no reward).
            HeldOutError: the row names a held-out task.
        """
        extras = Extras.model_validate(dict(kwargs.get("extra_info") or {}))
        episode = await asyncio.to_thread(Episode, extras)
        _episodes[episode.id] = self.episode = episode
        try:
            messages = await asyncio.to_thread(self._open, episode, list(kwargs["raw_prompt"]))
            create = {"create_kwargs": {"episode": episode.id}}
            kwargs = {**kwargs, "raw_prompt": messages}
            kwargs["tools_kwargs"] = {name: create for name in self.tools}
            output: AgentLoopOutput = await super().run(sampling_params, **kwargs)
            reward = await self.tools[next(iter(self.tools))].calc_reward(episode.id)
        finally:
            _episodes.pop(episode.id, None)
            await asyncio.to_thread(episode.close)
        output.reward_score = reward
        output.extra_fields["reward_extra_info"] = _reward_info(episode.finish())
        return output

    def _open(self, episode: Episode, prompt: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Reset the episode and offer its tools; the first messages of the trajectory."""
        obs, info = episode.start()
        schemas = [OpenAIFunctionToolSchema.model_validate(t) for t in info["tools"]]
        self.tools = {s.function.name: BoxgymTool({}, s) for s in schemas}
        self.tool_schemas = list(info["tools"])  # the full schemas, for the chat template
        system = {"role": "system", "content": info["system_prompt"]}
        return [system, *prompt, {"role": "user", "content": obs}]

    async def _handle_processing_tools_state(self, agent_data: Any) -> AgentState:
        state: AgentState = await super()._handle_processing_tools_state(agent_data)
        if self.episode is not None and self.episode.done:
            return AgentState.TERMINATED
        return state


def _reward_info(verdict: dict[str, Any]) -> dict[str, Any]:
    """What verl logs beside the reward: the outcome as numbers.

    ``boxgym_hidden_pass`` is the held-out monitor: its gap to the training reward is
    what ``gym train``'s watch follows.
    """
    hidden = hidden_passed(str(verdict["outcome"]), verdict.get("components") or {})
    return {
        "boxgym_pass": float(verdict["outcome"] == "pass"),
        "boxgym_hidden_pass": float(bool(hidden)),
        "boxgym_flags": float(len(verdict.get("flags") or [])),
    }


def verl_rows(
    env_id: str, *, seed: int = 0, reward: RewardSource = "visible"
) -> list[dict[str, Any]]:
    """A verl dataset row per training task of an environment (write them as parquet).

    The prompt is empty: `BoxgymAgentLoop` puts the system prompt and the task's own
    prompt around it. ``reward``: the training reward's source (`Extras.reward`).
    """
    return [
        {
            "prompt": [],
            "data_source": env_id,
            "agent_name": AGENT_NAME,
            "extra_info": {"env_id": env_id, "task": t.id, "seed": seed, "reward": reward},
        }
        for t in training_tasks(env_id)
    ]
