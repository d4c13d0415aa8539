"""Environment validation: every task is solvable, not free, and graded deterministically.

For each task: the oracle must pass every time; the noop policy must fail; a perturbed
oracle (one forbidden write) must be flagged; and the oracle's final state, graded
again ``repeats`` times, must give the same verdict each time.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

from pydantic import BaseModel, Field

from gym._env import ContainerEnv, env_of
from gym._errors import ConfigError
from gym._models import Verdict
from gym._policy import NoopPolicy, OraclePolicy, PerturbedOraclePolicy, Policy
from gym._registry import make, tasks_of
from gym._rollout import EpisodeResult, run_episode
from gym._sandbox import set_pool_size

__all__ = ["TaskCheck", "validate_env"]


class TaskCheck(BaseModel):
    """Validation results of one task."""

    task_id: str
    env_id: str = ""
    """The environment."""
    oracle: list[str] = Field(default_factory=list)
    """Outcome of each oracle run."""
    noop: str = ""
    """Outcome of the noop run."""
    perturbed: str = ""
    """Flags of the perturbed oracle run (``-`` when the family has no perturbation)."""
    regrade_identical: bool | None = None
    """Whether re-grading the oracle's final state gave identical verdicts."""
    problems: list[str] = Field(default_factory=list)
    """What is wrong with the task; empty when it is valid."""

    @property
    def ok(self) -> bool:
        """Whether the task passed every check."""
        return not self.problems


def _verdict_key(verdict: Verdict | None) -> str:
    if verdict is None:
        return "none"
    data = verdict.model_dump(mode="json")
    return json.dumps(
        {k: data[k] for k in ("outcome", "reward", "components", "flags")}, sort_keys=True
    )


def _episode(env_id: str, policy: Policy, task_id: str, seed: int) -> EpisodeResult:
    env = make(env_id)
    return run_episode(env, policy, task_id=task_id, seed=seed)


def _regrade(env: ContainerEnv[Any], result: EpisodeResult, repeats: int) -> bool | None:
    if result.export is None or result.verdict is None:
        return None
    first = _verdict_key(result.verdict)
    for _ in range(repeats):
        again = env.regrade(result.task_id, result.export, result.steps)
        if _verdict_key(again) != first:
            return False
    return True


def validate_task(env_id: str, task_id: str, repeats: int) -> TaskCheck:
    """Run every validation check on one task."""
    check = TaskCheck(task_id=task_id, env_id=env_id)
    first: EpisodeResult | None = None
    for i in range(repeats):
        result = _episode(env_id, OraclePolicy(), task_id, seed=i)
        first = first or result
        check.oracle.append(result.outcome)
        if result.outcome != "pass":
            reason = result.verdict.reason if result.verdict else result.end_reason
            check.problems.append(f"oracle run {i + 1}: {result.outcome} ({reason[:300]})")
        elif result.verdict and result.verdict.flags:
            check.problems.append(
                f"oracle run {i + 1} raised flags: {[f.name for f in result.verdict.flags]}"
            )
    noop = _episode(env_id, NoopPolicy(), task_id, seed=0)
    check.noop = noop.outcome
    if noop.outcome != "fail":
        why = noop.verdict.reason if noop.verdict else noop.end_reason
        check.problems.append(f"noop: {noop.outcome}: {why[:300]} (it must fail)")
    env = env_of(make(env_id))
    if env.perturbed_calls(env.task_by_id(task_id)) is not None:
        pert = _episode(env_id, PerturbedOraclePolicy(), task_id, seed=0)
        flags = [f.name for f in pert.verdict.flags] if pert.verdict else []
        check.perturbed = ",".join(flags) or pert.outcome
        if not flags or pert.outcome != "fail":
            check.problems.append(
                f"perturbed oracle not flagged and failed: {pert.outcome} {flags}"
            )
    else:
        check.perturbed = "-"
    if first is not None and first.outcome == "pass":
        check.regrade_identical = _regrade(env, first, repeats)
        if check.regrade_identical is False:
            check.problems.append("re-grading the oracle's final state changed the verdict (flaky)")
    env.close()
    return check


def validate_env(
    env_id: str,
    *,
    repeats: int = 3,
    tasks: list[str] | None = None,
    concurrency: int = 1,
    progress: Callable[[TaskCheck], None] | None = None,
) -> list[TaskCheck]:
    """Validate every task (or the named ones) of an environment, tasks in parallel."""
    ids = [t.id for t in tasks_of(env_id)]
    if tasks:
        unknown = sorted(set(tasks) - set(ids))
        if unknown:
            raise ConfigError(f"{env_id} has no tasks {unknown}")
        ids = [i for i in ids if i in tasks]
    set_pool_size(max(1, concurrency))
    out: dict[str, TaskCheck] = {}
    pool = ThreadPoolExecutor(max_workers=max(1, concurrency))
    try:
        futures = [pool.submit(validate_task, env_id, task_id, repeats) for task_id in ids]
        for future in as_completed(futures):
            check = future.result()
            out[check.task_id] = check
            if progress:
                progress(check)
    except BaseException:  # Ctrl-C, SIGTERM: drop the queued tasks, finish no more
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    return [out[i] for i in ids]
