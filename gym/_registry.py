"""The environment registry: ``boxgym/<Name>-v<N>`` ids on top of Gymnasium's registry."""

from __future__ import annotations

import difflib
import importlib.abc
import importlib.machinery
import importlib.metadata
import importlib.util
import logging
import re
import sys
import tomllib
from collections import Counter
from pathlib import Path
from typing import Any

import gymnasium
from gymnasium.envs.registration import WrapperSpec
from pydantic import BaseModel

from gym._env import env_of
from gym._errors import ConfigError, EnvNotFound
from gym._models import Task
from gym._paths import roots

__all__ = [
    "EnvInfo",
    "env_ids",
    "envs",
    "load_plugins",
    "make",
    "register",
    "register_local",
    "spec_of",
    "tasks_of",
]

log = logging.getLogger("gym.registry")

ENTRY_POINT_GROUP = "boxgym.environments"
ID_PATTERN = re.compile(r"^[a-z][a-z0-9_.-]*/[A-Z][A-Za-z0-9]*-v\d+$")
_ids: dict[str, str] = {}


class EnvInfo(BaseModel):
    """A registered environment, as `gym env list` shows it."""

    id: str
    """Registered id, ``namespace/Name-vN``."""
    family: str
    """Environment family (seeds/ folder)."""
    entry_point: str
    """``module:Class`` that builds it."""
    tasks: dict[str, int]
    """Number of tasks per split."""
    max_steps: int | None
    """Step budget per episode."""


def register(
    id: str,  # noqa: A002 - mirrors gymnasium.register
    entry_point: str,
    *,
    max_steps: int | None = 50,
    max_seconds: float | None = 1800.0,
    kwargs: dict[str, Any] | None = None,
) -> None:
    """Register an environment with Gymnasium under a ``namespace/Name-vN`` id.

    Args:
        id: the id, for example ``boxgym/PyRepo-v0``; a published version never changes.
        entry_point: ``"module:Class"`` of a `ContainerEnv` subclass (a string, so that
            registering imports nothing).
        max_steps: step budget; reaching it truncates (and grades) the episode. Given to
            the environment as its ``max_steps`` argument (``gym.make`` may override it).
        max_seconds: wall-clock budget per episode (the environment's ``max_seconds``).
        kwargs: default keyword arguments of the environment.
    """
    if not ID_PATTERN.match(id):
        raise ConfigError(f"environment id {id!r} must look like 'boxgym/Name-v0'")
    if not isinstance(entry_point, str) or ":" not in entry_point:
        raise ConfigError(f"entry_point of {id} must be a 'module:Class' string")
    grade_truncated = WrapperSpec(
        name="GradeOnTruncation", entry_point="gym._wrappers:GradeOnTruncation", kwargs={}
    )
    gymnasium.register(
        id=id,
        entry_point=entry_point,
        kwargs={"max_steps": max_steps, "max_seconds": max_seconds, **(kwargs or {})},
        max_episode_steps=None,
        additional_wrappers=(grade_truncated,),
        disable_env_checker=False,
    )
    _ids[id] = entry_point


def env_ids() -> list[str]:
    """Every boxgym-registered id, sorted."""
    return sorted(_ids)


def _not_found(env_id: str) -> EnvNotFound:
    close = difflib.get_close_matches(env_id, env_ids(), n=3, cutoff=0.4)
    lower = [i for i in env_ids() if i.lower() == env_id.lower()]
    hint = ", ".join(dict.fromkeys(lower + close)) or "none close"
    return EnvNotFound(
        f"no environment {env_id!r}; did you mean: {hint}? (`gym env list` shows them all)"
    )


def spec_of(env_id: str) -> gymnasium.envs.registration.EnvSpec:
    """The Gymnasium spec of a boxgym id, or `EnvNotFound` with the closest ids."""
    if env_id not in _ids:
        raise _not_found(env_id)
    return gymnasium.spec(env_id)


def make(env_id: str, **kwargs: Any) -> gymnasium.Env[Any, Any]:
    """`gymnasium.make` for boxgym ids, failing with suggestions on an unknown id.

    Keyword arguments go to the environment, ``max_steps`` and ``max_seconds`` (the
    episode budgets) included.
    """
    spec_of(env_id)
    return gymnasium.make(env_id, **kwargs)


def tasks_of(env_id: str) -> list[Task]:
    """The tasks an environment made from its id offers (registered options applied)."""
    env = make(env_id)
    try:
        return list(env_of(env).tasks)
    finally:
        env.close()


def _env_class(entry_point: str) -> Any:
    module, _, name = entry_point.partition(":")
    return getattr(importlib.import_module(module), name)


def envs() -> list[EnvInfo]:
    """Every registered environment with its task counts per split."""
    out = []
    for env_id in env_ids():
        spec = gymnasium.spec(env_id)
        cls = _env_class(_ids[env_id])
        tasks = cls.load_tasks()
        counts = Counter(t.split for t in tasks)
        out.append(
            EnvInfo(
                id=env_id,
                family=cls.family,
                entry_point=_ids[env_id],
                tasks={"train": counts.get("train", 0), "eval": counts.get("eval", 0)},
                max_steps=spec.kwargs.get("max_steps"),
            )
        )
    return out


def load_plugins() -> list[str]:
    """Load third-party environment packages from the ``boxgym.environments`` entry points.

    Each entry point names a module or a callable; loading it registers its
    environments (by calling `gym.register`). A broken plugin is logged, not fatal.
    """
    loaded = []
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            target = ep.load()
            if callable(target):
                target()
            loaded.append(ep.name)
        except Exception as exc:  # a broken plugin must not break `import gym`
            log.warning("boxgym plugin %s (%s) failed to load: %s", ep.name, ep.value, exc)
    return loaded


class _LocalFinder(importlib.abc.MetaPathFinder):
    """Imports ``boxgym_local.<folder>`` from <root>/environments/<folder>/ (lazily)."""

    def __init__(self) -> None:
        self.folders: dict[str, Path] = {}

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname == "boxgym_local":
            return importlib.machinery.ModuleSpec(fullname, None, is_package=True)
        folder = self.folders.get(fullname)
        if folder is None:
            return None
        return importlib.util.spec_from_file_location(
            fullname, folder / "__init__.py", submodule_search_locations=[str(folder)]
        )


_finder = _LocalFinder()


def _module_for(folder: Path) -> str:
    """``environments.<folder>`` when that is this folder, else a ``boxgym_local`` name."""
    spec = importlib.util.find_spec("environments")
    locations = list(spec.submodule_search_locations or []) if spec else []
    if any(Path(loc).resolve() == folder.parent.resolve() for loc in locations):
        return f"environments.{folder.name}"
    if _finder not in sys.meta_path:
        sys.meta_path.append(_finder)
    name = f"boxgym_local.{folder.name}"
    _finder.folders[name] = folder
    return name


def register_local(root: Path | None = None) -> list[str]:
    """Register every environment declared in environments/*/boxgym.toml.

    Looks under ``root``, or else under the project root and the checkout boxgym was
    installed from (which holds the bundled environments).

    A folder declares its environments in ``boxgym.toml``::

        [[env]]
        id = "boxgym/Demo-v0"
        class = "DemoEnv"        # defined in the folder's __init__.py
        max_steps = 30

    Returns:
        The ids registered.
    """
    bases = [root] if root else roots()
    manifests = [m for base in bases for m in sorted((base / "environments").glob("*/boxgym.toml"))]
    ids: list[str] = []
    for manifest in manifests:
        try:
            entries = tomllib.loads(manifest.read_text()).get("env", [])
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"{manifest}: {exc}") from exc
        module = _module_for(manifest.parent)
        for entry in entries:
            if entry["id"] in ids:
                continue  # the same folder seen from two roots
            register(
                entry["id"],
                f"{module}:{entry['class']}",
                max_steps=entry.get("max_steps", 50),
                max_seconds=entry.get("max_seconds", 1800.0),
                kwargs=entry.get("kwargs"),
            )
            ids.append(entry["id"])
    return ids
