"""The disk boxgym's images take, and pruning them under a budget.

The engine reports each image's size and the part it shares with others (base layers);
what removing an image frees is its own part. `prune` removes boxgym's images (those
labelled with a build context), least recently used first (`gym._sandbox._images.last_uses`,
else the image's creation time), until the engine's images fit in the budget. It never
removes an image that a container uses (running or stopped), and `dry_run` only says
what it would do.
"""

from __future__ import annotations

import re
from typing import Any

import docker.errors
from pydantic import BaseModel, Field

from gym._core._errors import ConfigError
from gym._sandbox._engine import client, docker_errors
from gym._sandbox._grading_image import LABEL_GRADING
from gym._sandbox._images import LABEL_CONTEXT, last_uses

__all__ = ["DiskUse", "ImageUse", "PruneResult", "disk_use", "parse_size", "prune"]

_UNITS = {"": 1, "b": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


def parse_size(text: str) -> int:
    """Bytes from ``500M``, ``20G``, ``1.5GiB``, ``10gb`` or a plain number of bytes.

    Raises:
        ConfigError: the text is not a size.
    """
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([kmgtb]?)(?:i?b)?\s*", text.lower())
    if not match:
        raise ConfigError(f"{text!r} is not a size: write for example 500M or 20G")
    return int(float(match.group(1)) * _UNITS[match.group(2)])


class ImageUse(BaseModel):
    """One boxgym image and the disk it takes."""

    digest: str
    """The engine's image id."""
    names: list[str]
    """The image folders it serves (one per tag; several when their content is the same)."""
    size: int
    """Bytes of the image, shared base layers included."""
    unique: int
    """Bytes only this image holds: what removing it frees."""
    containers: int
    """Containers (running or stopped) made from it."""
    last_used: float
    """When boxgym last used it (Unix seconds; its creation when never recorded)."""


class DiskUse(BaseModel):
    """The engine's image disk and boxgym's share of it."""

    total: int
    """Bytes of every image layer in the engine (boxgym's and others')."""
    images: list[ImageUse]
    """boxgym's images, least recently used first."""


def disk_use() -> DiskUse:
    """What the engine's images take, and boxgym's images among them (one engine call)."""
    with docker_errors():
        df = client().df()
    uses = last_uses()
    images = []
    copies = _copies(df.get("Images") or [])
    for row in df.get("Images") or []:
        if LABEL_CONTEXT not in (row.get("Labels") or {}):
            continue
        tags = [t for t in row.get("RepoTags") or [] if t != "<none>:<none>"]
        size, shared = int(row.get("Size", 0)), max(0, int(row.get("SharedSize", 0)))
        copy = copies.get(row["Id"], 0)  # its grading copy's layer is its own: all unique
        images.append(
            ImageUse(
                digest=row["Id"],
                names=[t.split(":")[0].removeprefix("boxgym/") for t in tags] or ["<none>"],
                size=size + copy,
                unique=max(0, size - shared) + copy,
                containers=max(0, int(row.get("Containers", 0))),
                last_used=uses.get(row["Id"], float(row.get("Created", 0))),
            )
        )
    images.sort(key=lambda i: i.last_used)
    return DiskUse(total=int(df.get("LayersSize", 0)), images=images)


class PruneResult(BaseModel):
    """What a prune removed (or, dry, would remove)."""

    budget: int
    """The budget, in bytes."""
    before: int
    """Bytes of the engine's images before."""
    after: int
    """Bytes after (estimated when dry)."""
    removed: list[ImageUse] = Field(default_factory=list)
    """The images removed (or to remove), least recently used first."""
    kept_in_use: list[ImageUse] = Field(default_factory=list)
    """Images that would have gone but a container uses them."""
    dry_run: bool = False


def prune(budget: int, *, dry_run: bool = False, names: list[str] | None = None) -> PruneResult:
    """Remove boxgym's least recently used images until the engine's fit in ``budget``.

    Args:
        budget: bytes the engine's images may take.
        dry_run: only say what would be removed.
        names: consider only the images of these image folders (all of boxgym's by default).
    """
    use = disk_use()
    result = PruneResult(budget=budget, before=use.total, after=use.total, dry_run=dry_run)
    for image in use.images:
        if result.after <= budget:
            break
        if names is not None and not set(image.names) & set(names):
            continue
        if image.containers:
            result.kept_in_use.append(image)
            continue
        if dry_run or _remove(image):
            result.removed.append(image)
            result.after -= image.unique
    if result.removed and not dry_run:
        result.after = disk_use().total
    return result


def _copies(rows: list[dict[str, Any]]) -> dict[str, int]:
    """The bytes of each image's grading copies (`grading_image`), by the image's id."""
    sizes: dict[str, int] = {}
    for row in rows:
        source = (row.get("Labels") or {}).get(LABEL_GRADING)
        if source:
            sizes[source] = sizes.get(source, 0) + int(row.get("Size", 0))
    return sizes


def _remove(image: ImageUse) -> bool:
    """Untag and remove an image and its grading copies; False when the engine refuses."""
    api = client().api
    refs = [f"boxgym/{n}" for n in image.names if n != "<none>"]
    try:
        for copy in api.images(filters={"label": f"{LABEL_GRADING}={image.digest}"}, quiet=True):
            api.remove_image(copy, force=False)
        for name in refs:
            for tag in _tags_of(image.digest, name):
                api.remove_image(tag)
        if not refs or _still_there(image.digest):
            api.remove_image(image.digest)
    except docker.errors.NotFound:
        return True
    except docker.errors.APIError:
        return False
    return True


def _tags_of(digest: str, repository: str) -> list[str]:
    try:
        tags = client().api.inspect_image(digest).get("RepoTags") or []
    except docker.errors.NotFound:
        return []
    return [t for t in tags if t.split(":")[0] == repository]


def _still_there(digest: str) -> bool:
    try:
        client().api.inspect_image(digest)
    except docker.errors.NotFound:
        return False
    return True
