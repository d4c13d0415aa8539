"""Building images from images/<name>/ with content-addressed tags, and finding them.

An image is identified by the hash of its build context (``boxgym.context`` label): two
image folders with the same content share one image, tagged under both names.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import docker.errors
from pydantic import BaseModel

from gym._core._errors import ConfigError, ImageError
from gym._core._paths import data_dir, project_root, roots
from gym._sandbox._engine import client, docker_errors

__all__ = [
    "LABEL_CONTEXT",
    "ImageRecord",
    "base_images",
    "register_image",
    "build_image",
    "context_hash",
    "ensure_image",
    "forbidden_in_context",
    "image_names",
    "last_uses",
    "list_images",
    "record_use",
]

log = logging.getLogger("gym.images")

_FORBIDDEN_NAMES = re.compile(
    r"(^|/)(tests?|hidden|solutions?|oracles?)(/|$)|(^|/)(test_[^/]*|[^/]*_test)\.py$"
    r"|(^|/)conftest\.py$|(^|/)(solution|oracle)[^/]*$|\.patch$|\.diff$"
)
_lock = threading.RLock()
_resolved: dict[str, str] = {}
LABEL_CONTEXT = "boxgym.context"
"""The label every boxgym image carries: the hash of the build context it came from."""


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


_FROM_BUNDLED = re.compile(
    r"^(\s*FROM\s+(?:--\S+\s+)*)boxgym/([a-z0-9][a-z0-9_.-]*)(?::latest)?(?=\s|$)",
    re.IGNORECASE | re.MULTILINE,
)
"""A ``FROM boxgym/<name>`` line (no tag, or ``latest``): a build on a bundled image."""


def base_images(name: str) -> list[str]:
    """The images images/<name>/ builds on by name (``FROM boxgym/<base>``), in order.

    Such a base is resolved at build time: built first if missing, and named by its
    content tag (``boxgym/<base>:<hash>``), so a change of the base rebuilds this image.
    """
    text = (image_dir(name) / "Dockerfile").read_text(errors="replace")
    return list(dict.fromkeys(m.group(2) for m in _FROM_BUNDLED.finditer(text)))


def context_hash(name: str, *, _seen: tuple[str, ...] = ()) -> str:
    """sha256 over the build context of images/<name>/ (paths, exec bits, contents).

    An image built on a bundled one (`base_images`) hashes that image's context hash
    too: a change of the base changes this image's tag.

    Raises:
        ConfigError: the image folder is unknown, or its bases build on each other in a
            cycle.
    """
    if name in _seen:
        cycle = " -> ".join((*_seen, name))
        raise ConfigError(f"images build on each other in a cycle ({cycle}): break the cycle")
    path = image_dir(name)
    h = hashlib.sha256()
    for file in _context_files(path):
        rel = file.relative_to(path).as_posix()
        h.update(rel.encode() + b"\0" + (b"x" if file.stat().st_mode & 0o111 else b"-"))
        h.update(hashlib.sha256(file.read_bytes()).digest())
    for base in base_images(name):
        h.update(f"\0FROM boxgym/{base}\0".encode())
        h.update(context_hash(base, _seen=(*_seen, name)).encode())
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

    Images are shared by content: when an image built from the same context (the same
    files, whatever the folder's name) is already in the engine, it is tagged under this
    name too instead of being built again.

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
    image = _same_content(chash)
    if image is None:
        image = _build(name, tag, chash, progress)
    else:
        with docker_errors():
            image.tag(f"boxgym/{name}", chash[:16])
    record = ImageRecord(
        name=name,
        tag=tag,
        digest=image.id,
        context_hash=chash,
        built_at=time.time(),
        size_mb=round(image.attrs.get("Size", 0) / 2**20, 1),
    )
    _save_record(record)
    record_use(image.id)
    with _lock:
        _resolved[name] = image.id
    return record


def _same_content(chash: str) -> Any:
    """An image in the engine built from a context with this hash (any name), or None."""
    with docker_errors():
        found = client().images.list(filters={"label": f"{LABEL_CONTEXT}={chash}"})
    return found[0] if found else None


def resolved_dockerfile(name: str) -> str | None:
    """images/<name>/'s Dockerfile with each ``FROM boxgym/<base>`` as the base's content tag.

    Each base is built first when missing (`ensure_image`). None when the Dockerfile
    names no bundled image (it is built as it is).
    """
    bases = base_images(name)
    if not bases:
        return None
    tags = {}
    for base in bases:
        ensure_image(base)
        tags[base] = _tag(base, context_hash(base))
    text = (image_dir(name) / "Dockerfile").read_text(errors="replace")
    return _FROM_BUNDLED.sub(lambda m: m.group(1) + tags[m.group(2)], text)


def _build(name: str, tag: str, chash: str, progress: Callable[[str], None] | None) -> Any:
    labels = {LABEL_CONTEXT: chash}  # no name: the same content is the same image
    resolved = resolved_dockerfile(name)
    with contextlib.ExitStack() as stack:
        dockerfile = None
        if resolved is not None:  # outside the context: docker-py sends it inside the tar
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="boxgym-build-"))
            dockerfile = os.path.join(folder, "Dockerfile")
            Path(dockerfile).write_text(resolved)
        return _build_with(name, tag, labels, dockerfile, progress)


def _build_with(
    name: str,
    tag: str,
    labels: dict[str, str],
    dockerfile: str | None,
    progress: Callable[[str], None] | None,
) -> Any:
    try:
        with docker_errors():
            image, logs = client().images.build(
                path=str(image_dir(name)),
                dockerfile=dockerfile,
                tag=tag,
                labels=labels,
                rm=True,
                forcerm=True,
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
    return image


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
    """The digest of the current build of images/<name>/, building it if missing.

    The first resolution in a process records the image's use (`gym images prune`
    removes the least recently used first).
    """
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
    record_use(digest)
    with _lock:
        _resolved[name] = digest
    return digest


def _uses_file() -> Path:
    return data_dir() / "image-uses.json"


def record_use(digest: str) -> None:
    """Note that an image was used now (kept per engine image id, newest wins)."""
    path = _uses_file()
    with _lock:
        uses = last_uses()
        uses[digest] = time.time()
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(uses, indent=1, sort_keys=True))
            tmp.replace(path)


def last_uses() -> dict[str, float]:
    """Image id -> the last time boxgym used it on this machine (Unix seconds)."""
    try:
        data = json.loads(_uses_file().read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in data.items()} if isinstance(data, dict) else {}


def list_images() -> list[ImageRecord]:
    """Every boxgym image in the engine, one record per name it is tagged with, newest first.

    An image shared by several image folders (same content) has a record per name; one
    left without a tag (replaced by a rebuild) is listed as ``<none>``.
    """
    with docker_errors():
        images = client().images.list(filters={"label": LABEL_CONTEXT})
    records = []
    for image in images:
        chash = image.labels.get(LABEL_CONTEXT, "")
        names = [t.split(":")[0].removeprefix("boxgym/") for t in image.tags]
        for tag, name in zip(image.tags, names, strict=True) if names else [("", "<none>")]:
            records.append(
                ImageRecord(
                    name=name,
                    tag=tag or "<none>",
                    digest=image.id,
                    context_hash=chash,
                    built_at=_parse_time(image.attrs.get("Created", "")),
                    size_mb=round(image.attrs.get("Size", 0) / 2**20, 1),
                )
            )
    return sorted(records, key=lambda r: (-r.built_at, r.name))


def _parse_time(stamp: str) -> float:
    from datetime import datetime

    try:
        return datetime.fromisoformat(stamp[:26].rstrip("Z")).timestamp()
    except ValueError:
        return 0.0
