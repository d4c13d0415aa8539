"""A plugin family for tests: environments/notes/ under this folder, registered from its
boxgym.toml as an outside author's project folder is (`gym.authoring.register_local`, or
``GYM_ROOT`` pointing here).

`registered` registers it for the length of a ``with`` block and then forgets it, so that
tests that list every environment or attack see only boxgym's own and the toy family.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from forget import forget

import gym.authoring
from gym._redteam._core import ATTACKS

ROOT = Path(__file__).resolve().parent
"""The plugin's project root (it holds environments/notes/)."""
ENV_ID = "plugin/Notes-v0"
ATTACK = "notes.erase_a_starting_note"


@contextmanager
def registered() -> Iterator[list[str]]:
    """Register the Notes family as a user would; forget it (and its attacks) after."""
    ids = gym.authoring.register_local(ROOT)
    try:
        yield ids
    finally:
        forget(ids)
        ATTACKS.pop(ATTACK, None)
        for name in [m for m in sys.modules if m.startswith("boxgym_local.notes")]:
            del sys.modules[name]
