"""agentbox-rl 0.3.0, the peer boxgym is measured against: its venv, image and tasks.

Used by bench/scale.py only. agentbox-rl goes into a virtual environment of its own
(never boxgym's), its default sandbox image is built from the same local Debian base
as boxgym's images (agentbox/data/sandbox.Dockerfile with Debian's python3 and pytest
for python:3.12-slim-bookworm, which no registry here serves), and boxgym's PyFunc
tasks are written as agentbox tasks: the same stub, the same hidden checks run by
pytest, written into the workspace only at verification (agentbox's hidden_files).
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import venv
from pathlib import Path

import docker

VERSION = "0.3.0"
IMAGE = "agentbox-bench/sandbox:bookworm"
DOCKERFILE = """\
# agentbox-rl 0.3.0's default sandbox (agentbox/data/sandbox.Dockerfile: Python, pytest and
# common Unix tools), from the same local Debian base as boxgym's images.
FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends \\
      bash ca-certificates curl coreutils findutils grep sed gawk git patch procps \\
      python3 python3-pytest python-is-python3 \\
    && rm -rf /var/lib/apt/lists/*
WORKDIR /workspace
CMD ["sleep", "infinity"]
"""
HIDDEN_TEST = """\
import checks
from solution import {entry}


def test_{name}():
    checks.{name}({entry})
"""

SCRIPTED = """\
# The peer's side of the tool-call workload: a scripted model makes the same shell calls.
import asyncio, json, sys
from pathlib import Path
from agentbox.config import AgentConfig, ModelConfig, RolloutConfig, SandboxConfig
from agentbox.model.base import ModelResponse
from agentbox.model.mock import MockModelClient
from agentbox.runner.parallel import ParallelRunner
from agentbox.tasks.loader import iter_tasks
from agentbox.trajectory.io import JsonlSink
from agentbox.trajectory.schema import FunctionCall, ToolCall

tasks_dir, out, concurrency, image = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
calls = json.loads(sys.argv[5])
script = [
    ModelResponse(tool_calls=[ToolCall(id=f"call_{i}", function=FunctionCall(
        name="run_command", arguments=json.dumps({"command": c})))], finish_reason="tool_calls")
    for i, c in enumerate(calls)
] + [ModelResponse(content="done", finish_reason="stop")]
config = RolloutConfig(
    sandbox=SandboxConfig(image=image),
    model=ModelConfig(model="mock"),
    agent=AgentConfig(tools="shell", max_steps=len(calls) + 5),
)
runner = ParallelRunner(concurrency=concurrency, config=config, model=MockModelClient(script))
out.mkdir(parents=True, exist_ok=True)
summary = asyncio.run(runner.run_to_sink(
    list(iter_tasks([Path(tasks_dir)])), JsonlSink(out / "trajectories.jsonl"), n_per_task=1
))
print(summary.model_dump_json())
"""


class AgentBox:
    """A ready agentbox-rl: its python, image and task folder under ``work``."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.venv = work / f"agentbox-{VERSION}"
        self.cli = self.venv / "bin" / "agentbox"
        self.python = self.venv / "bin" / "python"
        self.tasks = work / "agentbox-tasks"

    def prepare(self, seeds: Path, task_ids: list[str]) -> None:
        """Install agentbox-rl in its own venv, build its image, write the tasks."""
        if not self.cli.exists():
            venv.create(self.venv, with_pip=True)
            pip = [str(self.venv / "bin" / "pip"), "install", "-q", f"agentbox-rl=={VERSION}"]
            subprocess.run(pip, check=True)
        self._build_image()
        self._write_tasks(seeds, task_ids)

    def _build_image(self) -> None:
        engine = docker.from_env()
        try:
            engine.images.get(IMAGE)
            return
        except docker.errors.ImageNotFound:
            pass
        print(f"building {IMAGE} (first time only)", file=sys.stderr)
        context = io.BytesIO(DOCKERFILE.encode())
        try:
            engine.images.build(fileobj=context, tag=IMAGE, rm=True)
        except docker.errors.BuildError:  # no default bridge (a shared engine): the host's
            context.seek(0)
            engine.images.build(fileobj=context, tag=IMAGE, rm=True, network_mode="host")

    def _write_tasks(self, seeds: Path, task_ids: list[str]) -> None:
        import tomllib

        self.tasks.mkdir(parents=True, exist_ok=True)
        for old in self.tasks.glob("*.json"):
            old.unlink()
        for task_id in task_ids:
            folder = seeds / "pyfunc" / task_id
            spec = tomllib.loads((folder / "task.toml").read_text())
            grading = spec["grading"]
            tests = "\n\n".join(
                HIDDEN_TEST.format(entry=grading["entry"], name=name) for name in grading["tests"]
            )
            task = {
                "task_id": task_id,
                "description": spec["prompt"].strip(),
                "starter_files": {"solution.py": (folder / "repo" / "solution.py").read_text()},
                "verifier": {
                    "type": "pytest",
                    "command": "python -m pytest -q test_hidden.py",
                    "hidden_files": {
                        "checks.py": (folder / "hidden" / "checks.py").read_text(),
                        "test_hidden.py": tests,
                    },
                },
            }
            (self.tasks / f"{task_id}.json").write_text(json.dumps(task, indent=1))

    def mock_command(self, concurrency: int, out: Path) -> list[str]:
        """`agentbox run --mock` over the tasks (no tool calls, then verification)."""
        return [
            str(self.cli),
            "-q",
            "run",
            str(self.tasks),
            "--mock",
            "-c",
            str(concurrency),
            "--image",
            IMAGE,
            "--out",
            str(out),
            "--no-progress",
        ]

    def scripted_command(self, concurrency: int, out: Path, calls: list[str]) -> list[str]:
        """A scripted model making ``calls`` (run_command), then verification."""
        args = [str(self.tasks), str(out), str(concurrency), IMAGE, json.dumps(calls)]
        return [str(self.python), "-c", SCRIPTED, *args]

    @staticmethod
    def results(out: Path) -> list[dict]:
        """The trajectories a run wrote."""
        path = out / "trajectories.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
