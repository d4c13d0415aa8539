"""Forget environments a test registered, so later tests that list every one never see them."""

from __future__ import annotations

from collections.abc import Iterable

import gymnasium

from gym._envs import _registry


def forget(env_ids: Iterable[str]) -> None:
    """Remove each id from boxgym's registry tables and from Gymnasium's registry."""
    for env_id in env_ids:
        for table in (_registry._ids, _registry._owners, _registry._kinds, _registry._attacks):
            table.pop(env_id, None)
        gymnasium.registry.pop(env_id, None)
