"""The installed version of boxgym and the name of its distribution (a low layer).

Every module that records a version imports it from here, never from the package's
front door (``gym/__init__.py`` sits above every other module).
"""

from importlib.metadata import PackageNotFoundError, version

__all__ = ["DISTRIBUTION", "__version__"]

DISTRIBUTION = "boxgym"
"""The distribution that provides the import name ``gym``."""

try:
    __version__ = version(DISTRIBUTION)
except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
    __version__ = "0.0.0"
