"""The environment registry: ``namespace/Name-vN`` ids on top of Gymnasium's registry.

Every id has one owner: boxgym itself (its bundled environments and the environment
folders of a boxgym project), or the installed package (plugin) or Python module that
registered it. Another owner cannot take an id that is held, and only boxgym may
register into the ``boxgym/`` namespace. A broken plugin, folder or task set is kept
local: it is listed as broken with its message, and every other environment works.
"""

from __future__ import annotations

import contextlib
import contextvars
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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium
from gymnasium.envs.registration import WrapperSpec
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gym._core._errors import ConfigError, EnvNotFound, IdTaken
from gym._core._models import DEFAULT_SPLITS, SplitUse, Task, TaskList
from gym._core._paths import install_root, roots
from gym._envs._declare import Declaration, base_entry
from gym._envs._env import env_of

__all__ = [
    "BOXGYM",
    "ID_RULE",
    "EnvInfo",
    "Template",
    "attack_modules",
    "check_folder_id",
    "env_class",
    "env_ids",
    "envs",
    "kind_of",
    "load_plugins",
    "make",
    "register",
    "register_local",
    "spec_of",
    "tasks_of",
    "templates",
]

log = logging.getLogger("gym.registry")

ENTRY_POINT_GROUP = "boxgym.environments"
ID_PATTERN = re.compile(r"^[a-z][a-z0-9_.-]*/[A-Z][A-Za-z0-9]*(?:-[A-Z][A-Za-z0-9]*)*-v\d+$")
ID_RULE = (
    "an id must look like 'namespace/Name-vN': the namespace is lowercase letters, "
    "digits, '_', '.' or '-', starting with a letter (your package's name; 'boxgym' "
    "is reserved for boxgym's own environments); Name is letters and digits starting "
    "with an uppercase letter (parts may be joined by '-', each starting with an "
    "uppercase letter: 'BFCL-MultiTurn'); N is the version, digits (a published version never "
    "changes behaviour); for example 'mypkg/Sorting-v0'"
)
"""The id rule, as every refusal states it."""
BOXGYM = "boxgym"
"""The owner of boxgym's own environments, and the one namespace reserved to it."""

_ids: dict[str, str] = {}
_owners: dict[str, str] = {}
"""id -> who registered it: ``boxgym``, ``local folder PATH``, ``package NAME``..."""
_broken: dict[str, str] = {}
"""A plugin or environment folder that failed to load -> why."""
_kinds: dict[str, str] = {}
"""id -> its kind (``code``, ``sql``...), when it declared one."""
_attacks: dict[str, str] = {}
"""id -> the module of its family's red-team attacks, when it ships some."""
_templates: dict[str, Template] = {}
"""``gym env new --family`` word -> the family it builds on."""
_declared: dict[str, tuple[Declaration, Path]] = {}
"""id -> its declaration and folder, for an environment declared with ``base``."""
_classes: dict[str, Any] = {}
"""id -> the class made from its declaration (made once, on first use)."""
MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_owner: contextvars.ContextVar[str | None] = contextvars.ContextVar("gym_owner", default=None)


@contextlib.contextmanager
def _registering_as(owner: str) -> Iterator[None]:
    """Attribute every `register` call made inside to ``owner``."""
    token = _owner.set(owner)
    try:
        yield
    finally:
        _owner.reset(token)


def _caller_owner() -> str:
    """The owner of a direct `register` call: the caller's top-level package or module."""
    frame = sys._getframe(2)
    module = str(frame.f_globals.get("__name__", "?"))
    return f"module {module.split('.')[0]}"


def _reserved(owner: str) -> bool:
    """Whether an owner may use the ``boxgym/`` namespace (boxgym and its project folders)."""
    return owner == BOXGYM or owner.startswith("local folder ")


def _check_id(env_id: str, owner: str) -> None:
    if not ID_PATTERN.match(env_id):
        raise ConfigError(f"{owner} cannot register {env_id!r}: {ID_RULE}")
    if env_id.startswith(f"{BOXGYM}/") and not _reserved(owner):
        raise IdTaken(
            f"{owner} cannot register {env_id!r}: the '{BOXGYM}/' namespace is reserved for "
            f"boxgym's own environments (this id is held by "
            f"{_owners.get(env_id, 'nobody yet')}); register it under "
            "your own namespace instead, e.g. 'mypkg/Name-v0'"
        )
    holder = _owners.get(env_id)
    if holder is not None and holder != owner:
        raise IdTaken(
            f"{owner} cannot register {env_id!r}: that id is already registered by "
            f"{holder}; a published id never changes hands or behaviour, so pick another "
            f"name or version ({ID_RULE})"
        )


def check_folder_id(env_id: str, folder: Path) -> None:
    """Refuse an id the environment folder ``folder`` could not register (`gym env new`).

    Raises:
        ConfigError: the id breaks the id rule (`ID_RULE`).
        IdTaken: another package or folder holds it.
    """
    _check_id(env_id, _folder_owner(folder))


class EnvInfo(BaseModel):
    """A registered environment, as `gym env list` shows it."""

    id: str
    """Registered id, ``namespace/Name-vN`` (for a plugin or folder that failed to load
    at all: what it is, e.g. ``plugin evil (package evil-plugin)``)."""
    family: str
    """Environment family (seeds/ folder)."""
    entry_point: str
    """``module:Class`` that builds it."""
    tasks: dict[str, int]
    """Number of tasks per declared split (tasks left out as broken are not counted)."""
    max_steps: int | None
    """Step budget per episode."""
    splits: dict[str, SplitUse] = Field(default_factory=dict)
    """The family's splits and their roles (``training`` or ``held-out``)."""
    owner: str = BOXGYM
    """Who registered it: ``boxgym``, ``local folder PATH``, ``package NAME``..."""
    broken: bool = False
    """Some or all of it could not be loaded; `problems` says why."""
    problems: list[str] = Field(default_factory=list)
    """Each problem: the file, the field, the value and what is allowed."""


class Template(BaseModel):
    """A family that ``gym env new NAME --family WORD`` builds on (a ``[template]`` table).

    The new folder's class subclasses the family's, its image is a copy of the family's
    (or is built on it, `extend_image`) and its example task a copy of one of the
    family's tasks.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    word: str
    """The ``--family`` word that picks it (``sql``, ``api``)."""
    module: str
    """The module of the family's class (``environments.sql``)."""
    cls: str = Field(alias="class")
    """The family's class, which the new one subclasses (``SQLEnv``)."""
    image: str
    """The images/ folder the new image copies, or builds on (`extend_image`)."""
    extend_image: bool = False
    """The new image is built ``FROM boxgym/<image>`` (a one-line Dockerfile to add to)
    instead of a copy of it: the family's service keeps following the bundled one."""
    example: str
    """The seeds/ folder of the task copied as the example (``sql/customers-per-country``)."""
    seeds: list[str] = Field(default_factory=list)
    """Files of seeds/ copied beside the new family's tasks (``support/policy.md``)."""
    root: Path
    """The root whose images/ and seeds/ hold them."""


def register(
    id: str,  # noqa: A002 - mirrors gymnasium.register
    entry_point: str,
    *,
    max_steps: int | None = 50,
    max_seconds: float | None = 1800.0,
    kwargs: dict[str, Any] | None = None,
    kind: str | None = None,
    attacks: str | None = None,
) -> None:
    """Register an environment with Gymnasium under a ``namespace/Name-vN`` id.

    Args:
        id: the id, ``namespace/Name-vN`` (`ID_RULE`), for example ``mypkg/Sorting-v0``;
            a published version never changes behaviour.
        entry_point: ``"module:Class"`` of a `ContainerEnv` subclass (a string, so that
            registering imports nothing).
        max_steps: step budget; reaching it truncates (and grades) the episode. Given to
            the environment as its ``max_steps`` argument (``gym.make`` may override it).
        max_seconds: wall-clock budget per episode (the environment's ``max_seconds``).
        kwargs: default keyword arguments of the environment (``split``,
            ``exec_timeout``, ``max_output``, or the family's own).
        kind: what it is, for the red team (``code``, ``sql``, ``support``...):
            environments of one kind share the sandbox, the tools and the grading path,
            so that ``gym redteam`` runs an attack in one of them for all (`kind_of`).
            The id itself by default (a kind of its own).
        attacks: the module of the family's red-team attacks (it calls
            `gym.redteam.register` when imported); ``gym redteam`` imports it.

    Raises:
        ConfigError: the id breaks the rule, the entry point is not ``module:Class``,
            or ``kind`` or ``attacks`` is not a name.
        IdTaken: another package holds the id, or it is in the reserved ``boxgym/``
            namespace; the message names both the one registering and the holder.
    """
    owner = _owner.get() or _caller_owner()
    _check_id(id, owner)
    if not isinstance(entry_point, str) or ":" not in entry_point:
        raise ConfigError(f"entry_point of {id} must be a 'module:Class' string")
    _check_knowledge(id, kind, attacks)
    budgets = {"max_steps": max_steps, "max_seconds": max_seconds}
    _add(id, entry_point, entry_point, {**budgets, **(kwargs or {})})
    _owners[id] = owner
    _remember(_kinds, id, kind)
    _remember(_attacks, id, attacks)


def _add(env_id: str, entry_point: str, listed: str, kwargs: dict[str, Any]) -> None:
    """Register with Gymnasium and list the environment as ``listed``."""
    grade_truncated = WrapperSpec(
        name="GradeOnTruncation", entry_point="gym._envs._wrappers:GradeOnTruncation", kwargs={}
    )
    gymnasium.register(
        id=env_id,
        entry_point=entry_point,
        kwargs=kwargs,
        max_episode_steps=None,
        additional_wrappers=(grade_truncated,),
        disable_env_checker=True,  # its passive checker broke every step after a failed
    )  # first reset; tests run gymnasium's whole check_env on every registered env
    _ids[env_id] = listed
    _declared.pop(env_id, None)
    _classes.pop(env_id, None)


def _declare(
    entry: dict[str, Any], manifest: Path, *, kind: str | None, attacks: str | None
) -> None:
    """Register an environment declared with ``base`` (its class is made on first use).

    Raises:
        ConfigError: a key of the entry is unknown or wrong, or its id may not be taken.
    """
    env_id, folder = entry["id"], manifest.parent
    declaration = Declaration.of(entry, manifest)
    owner = _owner.get() or _caller_owner()
    _check_id(env_id, owner)
    _check_knowledge(env_id, kind, attacks)
    budgets = {
        "max_steps": entry.get("max_steps", 50),
        "max_seconds": entry.get("max_seconds", 1800.0),
    }
    listed = f"{declaration.base} (declared in {folder.name}/boxgym.toml)"
    kwargs = {**budgets, **(entry.get("kwargs") or {}), "declared": env_id}
    _add(env_id, DECLARED_ENTRY, listed, kwargs)
    _declared[env_id] = (declaration, folder)
    _owners[env_id] = owner
    _remember(_kinds, env_id, kind)
    _remember(_attacks, env_id, attacks)


DECLARED_ENTRY = "gym._envs._registry:make_declared"
"""Gymnasium's entry point of every declared environment (a string: registering imports
nothing, and a spec stays plain data); its ``declared`` argument names the id."""


def make_declared(*, declared: str, **kwargs: Any) -> Any:
    """Make the declared environment ``declared`` (its class is made on first use)."""
    return env_class(declared)(**kwargs)


def _declared_class(env_id: str) -> Any:
    """The class of a declared environment, made from its declaration once.

    Raises:
        ConfigError: its base is no family, or a file it names is wrong.
    """
    if env_id not in _classes:
        declaration, folder = _declared[env_id]
        words = {w: f"{t.module}:{t.cls}" for w, t in _templates.items()}
        entry = base_entry(declaration.base, words)
        _classes[env_id] = declaration.build(env_id, folder, entry)
    return _classes[env_id]


def _check_knowledge(env_id: str, kind: str | None, attacks: str | None) -> None:
    if kind is not None and (not isinstance(kind, str) or not kind.strip()):
        raise ConfigError(f"kind of {env_id} must be a word such as 'code'; got {kind!r}")
    if attacks is not None and (not isinstance(attacks, str) or not MODULE_NAME.match(attacks)):
        raise ConfigError(
            f"attacks of {env_id} must be an importable module name such as "
            f"'mypkg.attacks'; got {attacks!r}"
        )


def _remember(table: dict[str, str], env_id: str, value: str | None) -> None:
    if value is None:
        table.pop(env_id, None)
    else:
        table[env_id] = value


def kind_of(env_id: str) -> str:
    """The kind an environment declared (``code``, ``sql``...), else its id (its own kind)."""
    return _kinds.get(env_id, env_id)


def attack_modules(*, bundled: bool) -> list[str]:
    """The red-team attack modules of the registered families, once each, by env id.

    Args:
        bundled: those of boxgym's own families (True), or of every other (False).
    """
    ids = [i for i in env_ids() if i in _attacks and (_owners.get(i) == BOXGYM) == bundled]
    return list(dict.fromkeys(_attacks[env_id] for env_id in ids))


def templates() -> dict[str, Template]:
    """The families ``gym env new --family WORD`` can build on, by word (see `Template`)."""
    return dict(_templates)


def env_ids() -> list[str]:
    """Every boxgym-registered id, sorted."""
    return sorted(_ids)


def _not_found(env_id: str) -> EnvNotFound:
    """The error of an unknown id: the ids of the family it names, or the closest ids."""
    family = _family_ids(env_id)
    if family:
        shown = ", ".join(family[:8]) + (
            f" (and {len(family) - 8} more)" if len(family) > 8 else ""
        )
        return EnvNotFound(
            f"no environment {env_id!r}: that is a family; name one of its environments: "
            f"{shown} (`gym env list` shows them all)"
        )
    close = difflib.get_close_matches(env_id, env_ids(), n=3, cutoff=0.4)
    lower = [i for i in env_ids() if i.lower() == env_id.lower()]
    hint = ", ".join(dict.fromkeys(lower + close))
    if not hint:
        return EnvNotFound(
            f"no environment {env_id!r}; no registered id is close; `gym env list` lists them"
        )
    return EnvNotFound(
        f"no environment {env_id!r}; did you mean: {hint}? (`gym env list` shows them all)"
    )


def _family_ids(name: str) -> list[str]:
    """The ids whose family or kind is ``name``, in any case.

    The family is what ``gym env list`` shows (``pyfunc``), the kind what a manifest
    declares (``code``, ``sql``); a name with a ``/`` is an id, never a family.
    """
    if "/" in name or not name:
        return []
    out = []
    for env_id in env_ids():
        try:
            family = str(env_class(env_id).family)
        except Exception:  # a broken environment names no family here
            family = ""
        if name.lower() in (family.lower(), kind_of(env_id).lower()):
            out.append(env_id)
    return out


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


def family_images() -> dict[str, str]:
    """Each registered family's image folder (``family -> image``), without loading tasks.

    An environment whose class cannot be imported is left out (`envs` reports it).
    """
    out: dict[str, str] = {}
    for env_id in env_ids():
        try:
            cls = env_class(env_id)
        except Exception:  # a broken environment must not hide the others
            continue
        out.setdefault(cls.family, cls.image)
    return out


def env_class(env_id: str) -> Any:
    """The environment class a registered id builds (its module imported now).

    Raises:
        EnvNotFound: no such id.
    """
    if env_id not in _ids:
        raise _not_found(env_id)
    if env_id in _declared:
        return _declared_class(env_id)
    return _env_class(_ids[env_id])


def _info(env_id: str) -> EnvInfo:
    """One environment's listing; whatever fails is reported in it, never raised."""
    spec = gymnasium.spec(env_id)
    info = EnvInfo(
        id=env_id,
        family="",
        entry_point=_ids[env_id],
        tasks={},
        max_steps=(spec.kwargs or {}).get("max_steps"),
        owner=_owners.get(env_id, BOXGYM),
    )
    try:
        cls = env_class(env_id)
        info.family, info.splits = cls.family, dict(getattr(cls, "splits", DEFAULT_SPLITS))
        tasks = cls.load_tasks()
    except Exception as exc:  # a broken environment must not hide the others
        info.broken = True
        info.problems = [f"{env_id} ({info.owner}, {_ids[env_id]}): {type(exc).__name__}: {exc}"]
        return info
    counts = Counter(t.split for t in tasks)
    info.tasks = {name: counts.get(name, 0) for name in info.splits}
    info.tasks |= {name: n for name, n in counts.items() if name not in info.splits}
    info.problems = list(tasks.problems) if isinstance(tasks, TaskList) else []
    info.broken = bool(info.problems)
    return info


def envs() -> list[EnvInfo]:
    """Every registered environment with its task counts per split.

    Environments that fail to load, and plugins or folders that failed to register, are
    listed too, marked ``broken`` with their problems; they never hide the others.
    """
    out = [_info(env_id) for env_id in env_ids()]
    out += [
        EnvInfo(
            id=source,
            family="",
            entry_point="",
            tasks={},
            max_steps=None,
            owner=source,
            broken=True,
            problems=[problem],
        )
        for source, problem in sorted(_broken.items())
    ]
    return out


def task_problems(env_id: str) -> list[str]:
    """Why tasks of an environment were left out as it loaded them (file, field, value)."""
    tasks = env_class(env_id).load_tasks()
    return list(tasks.problems) if isinstance(tasks, TaskList) else []


def _dist_name(ep: importlib.metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return str(dist.name) if dist is not None else ep.value.split(":")[0].split(".")[0]


def load_plugins() -> list[str]:
    """Load third-party environment packages from the ``boxgym.environments`` entry points.

    Each entry point names a module or a callable; loading it registers its
    environments (by calling `gym.register`), attributed to its package. A broken
    plugin, or one that registers an id it may not take, is logged and listed as broken
    by `envs`; it never breaks ``import gym`` nor another plugin.
    """
    loaded = []
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        owner = f"package {_dist_name(ep)}"
        try:
            with _registering_as(owner):
                target = ep.load()
                if callable(target):
                    target()
            loaded.append(ep.name)
        except Exception as exc:  # a broken plugin must not break `import gym`
            source = f"plugin {ep.name} ({owner})"
            _broken[source] = f"{source}, entry point {ep.value}: {exc}"
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


def _folder_owner(folder: Path) -> str:
    bundled = (install_root() / "environments").resolve()
    return BOXGYM if folder.resolve().parent == bundled else f"local folder {folder}"


def _register_folder(manifest: Path, seen: list[str]) -> None:
    """Register the environments one boxgym.toml declares (and keep its template).

    Raises:
        ConfigError: the file is unreadable or an entry is wrong (the caller keeps it local).
    """
    try:
        data = tomllib.loads(manifest.read_text())
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{manifest}: {exc}") from exc
    module = _module_for(manifest.parent)
    attacks = _attack_module(manifest, module, data.get("attacks"))
    template = _template(manifest, module, data["template"]) if "template" in data else None
    with _registering_as(_folder_owner(manifest.parent)):
        for entry in data.get("env", []):
            if (
                not isinstance(entry, dict)
                or "id" not in entry
                or ("class" in entry) == ("base" in entry)
            ):
                raise ConfigError(
                    f"{manifest}: each [[env]] needs an id, and either a class (of the folder's "
                    f"__init__.py) or a base (the family it builds on); got {entry!r}"
                )
            if entry["id"] in seen:
                continue  # the same folder seen from two roots
            kind = entry.get("kind", data.get("kind"))
            if "base" in entry:
                _declare(entry, manifest, kind=kind, attacks=attacks)
            else:
                register(
                    entry["id"],
                    f"{module}:{entry['class']}",
                    max_steps=entry.get("max_steps", 50),
                    max_seconds=entry.get("max_seconds", 1800.0),
                    kwargs=entry.get("kwargs"),
                    kind=kind,
                    attacks=attacks,
                )
            seen.append(entry["id"])
    if template is not None:
        _templates.setdefault(template.word, template)  # the first root to offer a word keeps it


def _attack_module(manifest: Path, module: str, attacks: Any) -> str | None:
    """The full name of a folder's ``attacks`` module (a name relative to the folder).

    Raises:
        ConfigError: it is not a module name.
    """
    if attacks is None:
        return None
    if not isinstance(attacks, str) or not MODULE_NAME.match(attacks):
        raise ConfigError(
            f"{manifest}: attacks must name a module of the folder, e.g. 'attacks'; got {attacks!r}"
        )
    return f"{module}.{attacks}"


def _template(manifest: Path, module: str, table: Any) -> Template:
    """A folder's ``[template]`` table, read.

    Raises:
        ConfigError: the table lacks a key or has a wrong value.
    """
    fields = table if isinstance(table, dict) else {}
    try:
        return Template.model_validate(
            {**fields, "module": module, "root": manifest.parent.parent.parent}
        )
    except ValidationError as exc:
        raise ConfigError(
            f"{manifest}: [template] takes word, class, image and example (strings) and a "
            f"seeds list; {exc.errors(include_url=False)}"
        ) from exc


def register_local(root: Path | None = None) -> list[str]:
    """Register every environment declared in environments/*/boxgym.toml.

    Looks under ``root``, or else under the project root and the checkout boxgym was
    installed from (which holds the bundled environments). A folder that fails (an
    unreadable boxgym.toml, an id it may not take) is logged and listed as broken by
    `envs`; the other folders still register.

    A folder declares its environments in ``boxgym.toml``::

        kind = "demo"            # optional: the red team's group (see `register`)
        attacks = "attacks"      # optional: the folder's module of red-team attacks

        [[env]]
        id = "boxgym/Demo-v0"
        class = "DemoEnv"        # defined in the folder's __init__.py
        max_steps = 30

    and may offer itself to ``gym env new --family WORD`` with a ``[template]`` table
    (`Template`: word, class, image, example, seeds).

    Returns:
        The ids registered.
    """
    bases = [root] if root else roots()
    manifests = [m for base in bases for m in sorted((base / "environments").glob("*/boxgym.toml"))]
    ids: list[str] = []
    for manifest in manifests:
        try:
            _register_folder(manifest, ids)
        except ConfigError as exc:
            _broken[f"folder {manifest.parent}"] = str(exc)
            log.warning("environment folder %s failed to register: %s", manifest.parent, exc)
    return ids
