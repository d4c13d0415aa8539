"""Writing environments, for authors of an environment family.

A family subclasses `ContainerEnv` (or `CodeEnv` for a code repository), declares
its tools with `@tool`, loads its tasks with `load_tasks` and registers its ids with
`register`; docs/authoring.md walks through one. The rest is what such a family
needs beside that: the trajectory it grades (`StepRecord`, `tool_calls`), the tool
schemas (`ToolSpec`) and spaces (`TextSpace`, `ToolCallSpace`), the limits wrapper
(`EpisodeLimits`), a task's workspace files (`workspace_files`, `read_tree`), a file its
family's tasks share (`read_inside`), a small cache
(`LRUCache`), what an episode changed as the viewer shows it (`Changes`, `ChangedFile`:
the answer of `ContainerEnv.changes`), and the registry's view of what is registered
(`EnvInfo`, `env_class`, `env_of`, `load_plugins`, `register_local`), and the user an agent works
for in an episode of several turns (`User`, `ScriptedUser`, `RecordingUser`)::

    >>> from gym.authoring import CodeEnv, tool
    >>> class MyEnv(CodeEnv):                                             # doctest: +SKIP
    ...     @tool(kind="read")
    ...     def lines(self, path: str) -> str:  # its docstring describes the tool
    ...         return self.sandbox.exec(["wc", "-l", path]).stdout

An environment on an existing family needs no Python: its folder's boxgym.toml declares
it (``base``, tasks, image, system prompt, tools; docs/authoring.md, "Declaring an
environment"), and ``gym env new NAME`` scaffolds one (declaration, image, tasks).
"""

from gym._core._cache import LRUCache
from gym._core._models import Component, Flag, Task, TaskKeys, Verdict, load_tasks
from gym._core._renamed import renamed
from gym._core._tools import ToolCall, ToolSpec, tool
from gym._core._tree import read_inside
from gym._envs._changes import ChangedFile, Changes
from gym._envs._code import CodeEnv, read_tree, workspace_files
from gym._envs._env import ContainerEnv, StepRecord, env_of, tool_calls
from gym._envs._registry import EnvInfo, env_class, load_plugins, register, register_local
from gym._envs._spaces import TextSpace, ToolCallSpace
from gym._envs._users import RecordingUser, ScriptedUser, User
from gym._envs._wrappers import EpisodeLimits
from gym._grading._ast import parse_python

__all__ = [
    "ChangedFile",
    "Changes",
    "CodeEnv",
    "Component",
    "ContainerEnv",
    "EnvInfo",
    "EpisodeLimits",
    "Flag",
    "LRUCache",
    "RecordingUser",
    "ScriptedUser",
    "StepRecord",
    "Task",
    "TaskKeys",
    "TextSpace",
    "ToolCall",
    "ToolCallSpace",
    "ToolSpec",
    "User",
    "Verdict",
    "env_class",
    "env_of",
    "load_plugins",
    "load_tasks",
    "parse_python",
    "read_inside",
    "read_tree",
    "register",
    "register_local",
    "tool",
    "tool_calls",
    "workspace_files",
]

__getattr__ = renamed("gym.authoring", {"task_files": "workspace_files"}, globals())
