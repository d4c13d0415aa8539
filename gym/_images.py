"""Building images from images/<name>/ with content-addressed tags, and finding them."""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path

import docker.errors
from pydantic import BaseModel

from gym._errors import ConfigError, ImageError
from gym._paths import data_dir, project_root, roots
from gym._sandbox import client
from gym._sandbox._engine import docker_errors

__all__ = [
    "ImageRecord",
    "register_image",
    "build_image",
    "context_hash",
    "ensure_image",
    "forbidden_in_context",
    "image_names",
    "list_images",
]

log = logging.getLogger("gym.images")

_FORBIDDEN_NAMES = re.compile(
    r"(^|/)(tests?|hidden|solutions?|oracles?)(/|$)|(^|/)(test_[^/]*|[^/]*_test)\.py$"
    r"|(^|/)conftest\.py$|(^|/)(solution|oracle)[^/]*$|\.patch$|\.diff$"
)
_lock = threading.Lock()
_resolved: dict[str, str] = {}


class ImageRecord(BaseModel):
    """One built image, as recorded after `build_image`."""

    name: str
    """Folder name under images/."""
    tag: str
    """``boxgym/<name>:<context hash>``."""
    digest: str
    """The engine's image id (``sha256:...``): what episodes record as lineage."""
    context_hash: str
    """sha256 of the build context (paths, modes and contents)."""
    built_at: float
    """Unix time of the build."""
    size_mb: float
    """Image size in MiB."""


_contexts: dict[str, Path] = {}


def register_image(name: str, context: Path) -> None:
    """Make a build context outside images/ known under a name (for plugin packages).

    Args:
        name: the image name environments refer to (their ``image`` class variable).
        context: a folder holding a Dockerfile and its build context.
    """
    if not (Path(context) / "Dockerfile").is_file():
        raise ConfigError(f"{context} has no Dockerfile")
    _contexts[name] = Path(context)


def image_dir(name: str) -> Path:
    """The build context of an image: registered by a plugin, or images/<name>/."""
    path = _contexts.get(name) or next(
        (r / "images" / name for r in roots() if (r / "images" / name / "Dockerfile").is_file()),
        project_root() / "images" / name,
    )
    if not (path / "Dockerfile").is_file():
        known = ", ".join(image_names()) or "none"
        raise ConfigError(f"no image folder images/{name}/ with a Dockerfile (known: {known})")
    return path


def image_names() -> list[str]:
    """The image folders under images/."""
    found = {p.parent.name for r in roots() for p in (r / "images").glob("*/Dockerfile")}
    return sorted(found | set(_contexts))


def _context_files(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob("*") if p.is_file() or p.is_symlink())


def context_hash(name: str) -> str:
    """sha256 over the build context of images/<name>/ (paths, exec bits, contents)."""
    path = image_dir(name)
    h = hashlib.sha256()
    for file in _context_files(path):
        rel = file.relative_to(path).as_posix()
        h.update(rel.encode() + b"\0" + (b"x" if file.stat().st_mode & 0o111 else b"-"))
        h.update(hashlib.sha256(file.read_bytes()).digest())
    return h.hexdigest()


def seed_secret_hashes() -> set[str]:
    """Content hashes of every hidden check and oracle file under seeds/."""
    files = [
        f
        for r in roots()
        for pattern in ("*/*/hidden/**/*", "*/*/oracle/**/*")
        for f in (r / "seeds").glob(pattern)
    ]
    return {hashlib.sha256(f.read_bytes()).hexdigest() for f in files if f.is_file()}


def forbidden_in_context(name: str) -> list[str]:
    """Files in images/<name>/ that look like, or are, tests or solutions."""
    path = image_dir(name)
    hashes = seed_secret_hashes()
    bad = []
    for file in _context_files(path):
        rel = file.relative_to(path).as_posix()
        if _FORBIDDEN_NAMES.search(rel):
            bad.append(f"{rel} (named like a test or solution)")
        elif hashlib.sha256(file.read_bytes()).hexdigest() in hashes:
            bad.append(f"{rel} (same content as a hidden test or oracle in seeds/)")
    return bad


def _tag(name: str, digest: str) -> str:
    return f"boxgym/{name}:{digest[:16]}"


def build_image(name: str, *, progress: Callable[[str], None] | None = None) -> ImageRecord:
    """Build images/<name>/ under a content-addressed tag and record its digest.

    Raises:
        ImageError: the context holds tests or solutions, or the build failed.
    """
    bad = forbidden_in_context(name)
    if bad:
        raise ImageError(
            f"images/{name}/ must never contain tests or solutions; move these to seeds/: "
            + "; ".join(bad)
        )
    chash = context_hash(name)
    tag = _tag(name, chash)
    labels = {"boxgym.image": name, "boxgym.context": chash}
    try:
        with docker_errors():
            image, logs = client().images.build(
                path=str(image_dir(name)), tag=tag, labels=labels, rm=True, forcerm=True
            )
            for chunk in logs:
                if progress and "stream" in chunk:
                    progress(str(chunk["stream"]).rstrip())
    except docker.errors.BuildError as exc:
        tail = "".join(str(c.get("stream", c.get("error", ""))) for c in exc.build_log)[-2000:]
        hint = ""
        if "debian:bookworm-slim" in tail or "pull access denied" in tail:
            hint = " (base image missing: run `scripts/engine.sh` to build debian:bookworm-slim)"
        raise ImageError(f"building images/{name}/ failed{hint}:\n{tail}") from exc
    record = ImageRecord(
        name=name,
        tag=tag,
        digest=image.id,
        context_hash=chash,
        built_at=time.time(),
        size_mb=round(image.attrs.get("Size", 0) / 2**20, 1),
    )
    _save_record(record)
    with _lock:
        _resolved[name] = image.id
    return record


def _records_file() -> Path:
    return data_dir() / "images.json"


def _save_record(record: ImageRecord) -> None:
    path = _records_file()
    records = json.loads(path.read_text()) if path.exists() else {}
    records[record.name] = record.model_dump()
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(records, indent=2, sort_keys=True))
    tmp.replace(path)


class _Missing(Exception):
    """The image is not in the engine (kept apart from engine errors)."""


def ensure_image(name: str, *, build: bool = True) -> str:
    """The digest of the current build of images/<name>/, building it if missing."""
    with _lock:
        if name in _resolved:
            return _resolved[name]
    tag = _tag(name, context_hash(name))
    engine = client()
    try:
        with docker_errors():
            try:
                digest = str(engine.images.get(tag).id)
            except docker.errors.ImageNotFound:
                raise _Missing from None
    except _Missing:
        if not build:
            raise ImageError(f"image {tag} is not built: run `gym images build {name}`") from None
        log.warning("building image %s (first use; later runs reuse it)", tag)
        digest = build_image(name).digest
    with _lock:
        _resolved[name] = digest
    return digest


def list_images() -> list[ImageRecord]:
    """Every boxgym image in the engine, newest first."""
    with docker_errors():
        images = client().images.list(filters={"label": "boxgym.image"})
    records = []
    for image in images:
        name = image.labels.get("boxgym.image", "?")
        chash = image.labels.get("boxgym.context", "")
        created = image.attrs.get("Created", "")
        records.append(
            ImageRecord(
                name=name,
                tag=image.tags[0] if image.tags else _tag(name, chash),
                digest=image.id,
                context_hash=chash,
                built_at=_parse_time(created),
                size_mb=round(image.attrs.get("Size", 0) / 2**20, 1),
            )
        )
    return sorted(records, key=lambda r: -r.built_at)


def _parse_time(stamp: str) -> float:
    from datetime import datetime

    try:
        return datetime.fromisoformat(stamp[:26].rstrip("Z")).timestamp()
    except ValueError:
        return 0.0
