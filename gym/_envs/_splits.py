"""Split roles: which tasks may become training data and which are held out.

A family declares its splits and the role of each in its class (``splits``, a dict of
split name to ``training`` or ``held-out``); a family that declares none has
``train`` (training) and ``eval`` (held-out). Everything that keeps evaluation data
out of training asks here: `gym export` refuses held-out episodes, and training code
calls `refuse_held_out` (or takes `training_tasks`) before it learns from a task.
"""

from __future__ import annotations

from collections.abc import Iterable

from gym._core._errors import EnvNotFound, HeldOutError
from gym._core._models import DEFAULT_SPLITS, SplitUse, Task
from gym._envs._registry import env_class, tasks_of

__all__ = ["refuse_held_out", "split_use", "split_uses", "training_tasks"]


def split_uses(env_id: str) -> dict[str, SplitUse]:
    """The splits a registered environment's family declares, with their roles.

    Raises:
        EnvNotFound: no such id.
    """
    return dict(getattr(env_class(env_id), "splits", DEFAULT_SPLITS))


def split_use(env_id: str, split: str) -> SplitUse:
    """The role of one split of an environment.

    A split its family does not declare, or an environment that is not registered here
    (a stored run of an uninstalled plugin), is ``held-out`` unless it is named
    ``train``: when in doubt, data stays out of training.
    """
    try:
        roles = split_uses(env_id)
    except EnvNotFound:
        roles = {}
    if split in roles:
        return roles[split]
    return "training" if not roles and split == "train" else "held-out"


def refuse_held_out(env_id: str, tasks: Iterable[Task | str]) -> None:
    """Raise unless every task given is of a training split; training code calls this.

    Args:
        env_id: the environment the tasks belong to.
        tasks: tasks, or their split names.

    Raises:
        HeldOutError: some are held out; the message names them and their splits.
    """
    held = []
    for task in tasks:
        split = task.split if isinstance(task, Task) else task
        if split_use(env_id, split) != "training":
            held.append(f"{task.id} ({split})" if isinstance(task, Task) else split)
    if held:
        raise HeldOutError(
            f"{env_id}: {len(held)} held-out task(s) asked for as training data: "
            f"{', '.join(held[:10])}; held-out splits are for evaluation only "
            f"(roles: {_roles_text(env_id)})"
        )


def training_tasks(env_id: str) -> list[Task]:
    """The tasks of an environment's training splits only (natural id order)."""
    return [t for t in tasks_of(env_id) if split_use(env_id, t.split) == "training"]


def _roles_text(env_id: str) -> str:
    """``train: training, eval: held-out`` for messages."""
    try:
        roles = split_uses(env_id)
    except EnvNotFound:
        return "environment not registered here"
    return ", ".join(f"{name}: {role}" for name, role in roles.items())
