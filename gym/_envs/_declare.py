"""Environments declared in boxgym.toml alone: a family to build on, and what differs.

An ``[[env]]`` entry with ``base`` instead of ``class`` needs no Python of its own::

    [[env]]
    id = "me/Logs-v0"
    base = "shell"                 # the family: its tools, final state and grader
    tasks = "logs"                 # seeds/logs/ (default: the base family's tasks)
    image = "logs"                 # images/logs/ (may be built FROM boxgym/shell)
    system_prompt = "prompt.md"    # a file of the folder, or the text itself
    tools = "tools.json"           # JSON schemas (OpenAI function format): add or replace
    drop_tools = ["write_file"]    # inherited tools the agent is not offered
    sandbox = { memory = "1g" }    # over the family's sandbox settings
    splits = { train = "training", test = "held-out" }

``base`` is ``code`` (`gym.CodeEnv`), a family's ``gym env new`` word (``shell``, ``sql``,
``api``, ``toolapi``: `gym env list` shows them) or ``module:Class``. The class is made
when the environment is first used (registering imports nothing); `Declaration.build`
makes it.
"""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gym._core._errors import ConfigError
from gym._core._models import SplitUse
from gym._core._tree import read_regular

if TYPE_CHECKING:
    from gym._envs._env import ContainerEnv

__all__ = ["CODE_BASE", "DECLARATION_KEYS", "Declaration", "base_entry", "class_name"]

CODE_BASE = "code"
"""The ``base`` word of `gym.CodeEnv` (a repository or function to write, hidden checks)."""
_CODE_ENTRY = "gym._envs._code:CodeEnv"
_FILE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


class Declaration(BaseModel):
    """What an ``[[env]]`` entry with ``base`` declares (every key but the budgets)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base: str = Field(min_length=1)
    """The family it builds on: ``code``, a ``gym env new`` word, or ``module:Class``."""
    tasks: str | None = None
    """The seeds/ folder of its tasks; None: the base family's."""
    image: str | None = None
    """The images/ folder of its image; None: the base family's."""
    system_prompt: str | None = None
    """The system prompt: a file of the environment's folder, or the text itself."""
    tools: str | list[dict[str, Any]] | None = None
    """Tools declared as JSON schemas: a JSON file of the folder, or the list itself.
    Added to the family's (one of the same name replaces it)."""
    drop_tools: tuple[str, ...] = ()
    """Inherited tools not offered (a task's own ``drop_tools`` come after these)."""
    sandbox: dict[str, Any] = Field(default_factory=dict)
    """Sandbox settings over the family's (`gym.sandbox.SandboxConfig` fields)."""
    splits: dict[str, SplitUse] | None = None
    """Its splits and their roles; None: the base family's."""

    @field_validator("tasks", "image")
    @classmethod
    def _folder_name(cls, value: str | None) -> str | None:
        if value is not None and not _FILE_NAME.match(value):
            raise ValueError(f"must be a folder name such as 'logs'; got {value!r}")
        return value

    @field_validator("tools")
    @classmethod
    def _file_name(cls, value: Any) -> Any:
        """A tools file is a file of the environment's folder, named as tasks/image are."""
        if isinstance(value, str) and not _FILE_NAME.match(value):
            raise ValueError(
                f"must be a file name of the environment's folder such as 'tools.json' "
                f"(no path: nothing outside the folder is read); got {value!r}"
            )
        return value

    @classmethod
    def of(cls, entry: dict[str, Any], where: Path) -> Declaration:
        """The declaration of one ``[[env]]`` entry (its id and budgets left out).

        Raises:
            ConfigError: a key is unknown or has a wrong value; the message names it.
        """
        fields = {k: v for k, v in entry.items() if k not in _ENTRY_KEYS}
        try:
            return cls.model_validate(fields)
        except ValidationError as exc:
            err = exc.errors(include_url=False)[0]
            key = ".".join(str(p) for p in err["loc"]) or "entry"
            raise ConfigError(
                f"{where}: [[env]] {entry.get('id', '?')}: {key}: {err['msg']} (keys: "
                f"{', '.join(DECLARATION_KEYS)}; see docs/authoring.md)"
            ) from None

    def build(self, env_id: str, folder: Path, base_entry: str) -> type[ContainerEnv[Any]]:
        """The environment's class: a subclass of the base family's with what differs.

        Raises:
            ConfigError: the base is not a `ContainerEnv` family, or a file it names is
                missing or not what it must be.
        """
        from gym._envs._env import ContainerEnv

        base = _import(base_entry, env_id)
        if not (isinstance(base, type) and issubclass(base, ContainerEnv)):
            raise ConfigError(f"{env_id}: base {self.base!r} ({base_entry}) is not a ContainerEnv")
        where = folder / "boxgym.toml"
        attrs: dict[str, Any] = {"__doc__": f"{env_id}, declared in {where} on {base.__name__}."}
        attrs["__module__"] = base.__module__
        attrs["declared_in"] = folder
        seeds = folder.parent.parent / "seeds"
        attrs["seeds_dir"] = classmethod(lambda cls: seeds)
        if self.tasks is not None:
            attrs["family"] = self.tasks
        if self.image is not None:
            attrs["image"] = self.image
        if self.splits is not None:
            attrs["splits"] = dict(self.splits)
        if self.system_prompt is not None:
            attrs["system_prompt"] = self._prompt(folder, where)
        if self.tools is not None:
            attrs["tool_schemas"] = _merged(base.tool_schemas, self._tools(folder, where))
        if self.drop_tools:
            attrs["drop_tools"] = (*base.drop_tools, *self.drop_tools)
        if self.sandbox:
            attrs["sandbox_settings"] = {**base.sandbox_settings, **self.sandbox}
        return type(class_name(env_id), (base,), attrs)

    def _prompt(self, folder: Path, where: Path) -> str:
        """The prompt text, or the file of the folder it names (a regular file, no link)."""
        text = self.system_prompt or ""
        file = folder / text
        if _FILE_NAME.match(text) and (file.is_file() or file.is_symlink()):
            return _read(file, where, "system_prompt", text)
        return text

    def _tools(self, folder: Path, where: Path) -> tuple[dict[str, Any], ...]:
        raw: Any = self.tools
        if isinstance(raw, str):
            try:
                raw = json.loads(_read(folder / raw, where, "tools", raw))
            except ValueError as exc:
                raise ConfigError(f"{where}: tools = {self.tools!r}: {exc}") from None
        if not isinstance(raw, list) or not all(isinstance(t, dict) for t in raw):
            raise ConfigError(f"{where}: tools must be a list of JSON tool schemas (objects)")
        return tuple(raw)


_ENTRY_KEYS = frozenset({"id", "max_steps", "max_seconds", "kwargs", "kind"})
DECLARATION_KEYS = tuple(Declaration.model_fields)
"""The keys an ``[[env]]`` entry with ``base`` may hold beyond id, budgets, kwargs, kind."""


def class_name(env_id: str) -> str:
    """``boxgym/PyFunc-v0`` -> ``PyFuncEnv`` (the declared class's name)."""
    name = env_id.split("/", 1)[-1].rsplit("-v", 1)[0]
    return name.replace("-", "") + "Env"


def _read(file: Path, where: Path, key: str, value: str) -> str:
    """A file a declaration names, read only as a regular file of its folder.

    Raises:
        ConfigError: it is missing, a symbolic link (never followed), or not text.
    """
    try:
        return read_regular(file).decode()
    except (OSError, UnicodeDecodeError, ConfigError) as exc:
        raise ConfigError(f"{where}: {key} = {value!r}: {exc}") from None


def _merged(
    inherited: tuple[dict[str, Any], ...], own: tuple[dict[str, Any], ...]
) -> tuple[dict[str, Any], ...]:
    """The family's schema tools with the declared ones added, a same-named one replaced."""
    names = {_tool_name(t) for t in own}
    return (*(t for t in inherited if _tool_name(t) not in names), *own)


def _tool_name(schema: dict[str, Any]) -> Any:
    return schema.get("function", schema).get("name")


def _import(entry: str, env_id: str) -> Any:
    module, _, name = entry.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"{env_id}: its base {entry} cannot be imported: {exc}") from exc


def base_entry(base: str, words: dict[str, str]) -> str:
    """The ``module:Class`` of a ``base``: ``code``, a family word (``words``), or itself.

    Raises:
        ConfigError: a word no family offers.
    """
    if base == CODE_BASE:
        return _CODE_ENTRY
    if base in words:
        return words[base]
    if ":" in base:
        return base
    known = ", ".join(sorted({CODE_BASE, *words}))
    raise ConfigError(f"base {base!r} is no family: use one of {known}, or 'module:Class'")
