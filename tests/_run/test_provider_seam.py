"""A second sandbox provider plugs in through the public seam alone, without touching gym/_run.

The stand-in below is written as a user would write one: from `gym.sandbox` only (the
`SandboxProvider` interface and a `LocalSandbox` for its sandboxes). A run on it goes
through the runner and the executor, and its episode is graded in a one-shot sandbox of
the stand-in (`run_once`), as code is; the default provider starts nothing.

The family is the toy code family of tests/toy_env.py, graded by a check that runs in
that one-shot sandbox. (The bundled code families' grading container runs a root runner
that writes to /grade and switches uids: a local folder cannot stand in for it.)
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator, Sequence

import pytest
from forget import forget
from toy_env import ToyEnv

import gym
import gym.authoring
import gym.grading
from gym.runs import RunConfig, Store, run
from gym.sandbox import (
    ExecResult,
    LocalSandbox,
    Sandbox,
    SandboxConfig,
    SandboxProvider,
    default_sandboxes,
)

ENV_ID = "toy/OnceAnswer-v0"
TASK = "greet"
CHECK = "import sys; print('pass' if sys.stdin.read().strip() == sys.argv[1] else 'fail')"


class OnceAnswerEnv(ToyEnv):
    """The toy family, its answer checked in a one-shot sandbox of its provider."""

    def grade(
        self, task: gym.Task, final_state: gym.grading.Export, trajectory: Sequence[gym.StepRecord]
    ) -> gym.Verdict:
        files = final_state.applied_to(gym.authoring.workspace_files(task, with_git=False))
        expected = str(task.data["expected"])
        result = self.sandboxes.run_once(
            self.sandbox_config(),
            [sys.executable, "-I", "-c", CHECK, expected],
            stdin=files.get("answer.txt", b""),
            run="grading",
        )
        passed = result.ok and result.stdout.strip() == "pass"
        component = gym.Component(score=float(passed), passed=passed, explanation=result.stdout)
        return gym.grading.compose({"answer": component}, [], grader="once-toy", version="1")


@pytest.fixture(autouse=True)
def once_answer() -> Iterator[None]:
    """The family registered for each test, and forgotten after (a listing never sees it)."""
    gym.register(ENV_ID, f"{__name__}:OnceAnswerEnv", max_steps=8, max_seconds=120)
    yield
    forget([ENV_ID])


class StandIn(SandboxProvider):
    """Temporary folders for sandboxes; it records every call the run makes of it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.acquired: list[str] = []
        self.ran: list[list[str]] = []
        self.expected: list[tuple[int | None, int | None]] = []
        self.sizes: list[int] = []

    def image(self, name: str) -> str:
        return f"stand-in:{name}"

    def acquire(self, config: SandboxConfig, *, run: str = "adhoc", role: str = "agent") -> Sandbox:
        with self.lock:
            self.acquired.append(role)
        return LocalSandbox(config)

    def run_once(
        self,
        config: SandboxConfig,
        argv: Sequence[str],
        *,
        stdin: bytes | None = None,
        timeout: float = 60.0,
        max_output: int = 1 << 20,
        run: str = "adhoc",
    ) -> ExecResult:
        with self.lock:
            self.ran.append(list(argv))
        with LocalSandbox(config) as box:
            return box.exec(argv, stdin=stdin, timeout=timeout, max_output=max_output)

    def expect(self, *, episodes: int | None = None, gradings: int | None = None) -> None:
        with self.lock:
            self.expected.append((episodes, gradings))

    def resize(self, size: int) -> None:
        self.sizes.append(size)

    def counts(self) -> dict[str, int]:
        with self.lock:
            return {"agent.cold": self.acquired.count("agent"), "grader.cold": len(self.ran)}


def test_a_stand_in_provider_runs_a_graded_episode_through_the_runner(tmp_path):
    standin = StandIn()
    config = RunConfig(envs=[ENV_ID], policy="oracle", tasks=[TASK], sandboxes=standin)
    store = Store(f"sqlite:///{tmp_path / 'runs.db'}")
    docker_before = default_sandboxes().counts()

    progress = run(config, store=store, concurrency=1)

    assert progress.done == progress.passed == 1 and progress.infra_error == 0
    assert list(store.episode_outcomes(config.run_id).values()) == ["pass"]
    (episode,) = store.episodes(config.run_id)
    assert episode.reward == 1.0
    assert standin.acquired == ["agent"], "the episode's sandbox came from the stand-in"
    assert len(standin.ran) == 1 and CHECK in standin.ran[0], "graded by the stand-in's run_once"
    assert progress.containers == {"agent.cold": 1, "grader.cold": 1}, "counted by the stand-in"
    assert standin.sizes == [1] and (0, 0) in standin.expected, "the executor told the stand-in"
    assert default_sandboxes().counts() == docker_before, "no container was started"


def test_the_provider_is_not_part_of_the_run_id():
    plain = RunConfig(envs=[ENV_ID], policy="oracle", tasks=[TASK])
    other = plain.model_copy(update={"sandboxes": StandIn()})
    assert other.run_id == plain.run_id
    assert "sandboxes" not in other.model_dump(mode="json")
