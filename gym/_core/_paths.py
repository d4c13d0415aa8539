"""Where boxgym finds its project folders (images, seeds) and keeps its data."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["data_dir", "data_path", "install_root", "project_root", "roots"]


def project_root() -> Path:
    """The folder holding environments/, images/ and seeds/.

    ``GYM_ROOT`` overrides; otherwise the checkout this package was installed from.
    """
    if env := os.environ.get("GYM_ROOT"):
        return Path(env).resolve()
    return install_root()


def install_root() -> Path:
    """The checkout this package was installed from (holds the bundled images and seeds)."""
    return Path(__file__).resolve().parents[2]


def roots() -> list[Path]:
    """Where to look for images/ and seeds/: the project root, then the install root."""
    return list(dict.fromkeys([project_root(), install_root()]))


def data_path() -> Path:
    """Where run stores, image records and caches live (``GYM_DATA`` or trajectories/)."""
    if "GYM_DATA" in os.environ:
        return Path(os.environ["GYM_DATA"])
    return project_root() / "trajectories"


def data_dir() -> Path:
    """`data_path`, created if it is not there yet."""
    path = data_path()
    path.mkdir(parents=True, exist_ok=True)
    return path
