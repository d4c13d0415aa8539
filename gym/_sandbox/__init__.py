"""Hardened Docker sandboxes: containers, a persistent shell, files, warm pools, reaping."""

from gym._sandbox._config import SandboxConfig
from gym._sandbox._engine import client, list_boxgym, owner_alive, owner_label, reap
from gym._sandbox._manifest import Change, Manifest, Node
from gym._sandbox._once import run_once
from gym._sandbox._pool import SandboxPool, discard, pool_for, set_pool_size, shutdown_pools
from gym._sandbox._sandbox import Sandbox
from gym._sandbox._shell import quote
from gym._sandbox._stream import ExecResult, decode
from gym._sandbox._tar import Entry, pack, unpack

__all__ = [
    "Change",
    "Entry",
    "ExecResult",
    "Manifest",
    "Node",
    "Sandbox",
    "SandboxConfig",
    "SandboxPool",
    "client",
    "decode",
    "discard",
    "list_boxgym",
    "owner_alive",
    "owner_label",
    "pack",
    "pool_for",
    "quote",
    "reap",
    "run_once",
    "set_pool_size",
    "shutdown_pools",
    "unpack",
]
