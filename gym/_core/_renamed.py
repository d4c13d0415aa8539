"""Old public names that still resolve under their new ones, with a DeprecationWarning.

A front door that renamed a name keeps the old one working through a module
``__getattr__`` made here (docs/architecture.md, "Names", lists every rename)::

    __getattr__ = renamed("gym.datasets", {"task_files": "seed_files"}, globals())
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["renamed"]


def renamed(
    module: str, old_to_new: Mapping[str, str], namespace: Mapping[str, Any]
) -> Callable[[str], Any]:
    """A module ``__getattr__`` that answers each old name with its new one's value.

    Args:
        module: the module's public name, for the warning (``gym.datasets``).
        old_to_new: old name -> the new name it was renamed to.
        namespace: the module's ``globals()``, where the new names live.
    """

    def __getattr__(name: str) -> Any:
        if name not in old_to_new:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        new = old_to_new[name]
        warnings.warn(
            f"{module}.{name} is renamed {module}.{new}; use the new name "
            "(the old one will be removed)",
            DeprecationWarning,
            stacklevel=2,
        )
        return namespace[new]

    return __getattr__
