"""Sandboxes: where episodes run, behind one interface.

`Sandbox` is the interface (exec, a persistent shell, files, diffs, close);
`DockerSandbox` the hardened container every real episode uses, with warm pools and
reaping; `LazySandbox` one whose container starts at its first command; `LocalSandbox`
a temporary folder for unit tests (not a security boundary).
Environments get theirs from a `SandboxProvider` (`DockerSandboxes`, `LocalSandboxes`;
`default_sandboxes` is the process's default), which owns its warm pools, their
controller, counters and engine gate; the layers above talk to it only through its
methods. Grading containers get their settings in one place (`_once`).
The images they run are built, recorded and pruned here too (`_images`, `_image_disk`;
`gym.images` is their front door).
"""

from gym._sandbox._base import Sandbox
from gym._sandbox._config import SandboxConfig
from gym._sandbox._docker import DockerSandbox
from gym._sandbox._engine import (
    LABEL_OWNER,
    client,
    list_boxgym,
    owner_alive,
    owner_label,
    reap,
)
from gym._sandbox._lazy import LazySandbox
from gym._sandbox._local import LocalSandbox
from gym._sandbox._manifest import Change, Manifest, Node
from gym._sandbox._once import graded
from gym._sandbox._pool import SandboxPool
from gym._sandbox._provider import (
    DockerSandboxes,
    LocalSandboxes,
    Role,
    SandboxProvider,
    default_sandboxes,
    run_once,
)
from gym._sandbox._shell import quote
from gym._sandbox._stream import ExecResult, decode
from gym._sandbox._tar import Entry, check_name, pack, unpack

__all__ = [
    "LABEL_OWNER",
    "Change",
    "DockerSandbox",
    "DockerSandboxes",
    "Entry",
    "ExecResult",
    "LazySandbox",
    "LocalSandbox",
    "LocalSandboxes",
    "Manifest",
    "Node",
    "Role",
    "Sandbox",
    "SandboxConfig",
    "SandboxPool",
    "SandboxProvider",
    "check_name",
    "client",
    "decode",
    "default_sandboxes",
    "graded",
    "list_boxgym",
    "owner_alive",
    "owner_label",
    "pack",
    "quote",
    "reap",
    "run_once",
    "unpack",
]
