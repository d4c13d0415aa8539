"""Grading copies: an image's files in a layer of their own, for grading containers only.

Containers of one image share its layers' files on the host, and so the kernel's page
cache of each file: whether a page of a file is cached is state every container of the
image can set (by reading it) and read back (by timing a read), and it outlives the
container that set it. A grading container runs the code under test with the task's
hidden inputs; had it the agent's image, that code could leave the inputs in the page
cache for an agent of the same task, running at once or later (a red-team helper
carried a hidden input from one episode's grading to another episode's agent so). A
grading container therefore starts from a copy of its image: the same files and
settings, in one layer that no agent container's image has (one more file in it makes
its content, and so its layer, its own), so no file of a grading container is a file of
an agent container.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import tarfile
import tempfile
import threading
from pathlib import Path
from typing import Any

import docker.errors

from gym._core._errors import ImageError
from gym._sandbox._engine import client, docker_errors, labels

__all__ = ["LABEL_GRADING", "grading_image"]

LABEL_GRADING = "boxgym.grading-of"
"""The label of a grading copy: the id of the image it copies."""

_MARK = "/.boxgym-grading"
"""The file only a grading copy has (its content is the source's id)."""

_lock = threading.Lock()
_building: dict[str, threading.Lock] = {}
_copies: dict[str, str] = {}


def grading_image(ref: str) -> str:
    """The id of ``ref``'s grading copy, built on first use (tens of seconds) and kept.

    Two processes may each build one the first time (the engine keeps both; either
    serves); in one process a build holds up only the gradings of its own image.

    Raises:
        ImageError: ``ref`` is not in the engine, or the copy could not be built.
    """
    with _lock:
        if ref in _copies:
            return _copies[ref]
        building = _building.setdefault(ref, threading.Lock())
    with building:
        with _lock:
            if ref in _copies:
                return _copies[ref]
        copy = _find_or_build(ref)
        with _lock:
            _copies[ref] = copy
        return copy


def _find_or_build(ref: str) -> str:
    engine = client()
    with docker_errors():
        try:
            source = engine.images.get(ref)
        except docker.errors.ImageNotFound:
            raise ImageError(f"image {ref} is not in the engine: build it first") from None
        if LABEL_GRADING in (source.labels or {}):  # a copy already
            return str(source.id)
        found = engine.images.list(filters={"label": f"{LABEL_GRADING}={source.id}"})
    return str(found[0].id) if found else _build(source)


def _build(source: Any) -> str:
    marked = _marked(source)
    try:
        return _build_from(source, marked)
    finally:
        with docker_errors(), contextlib.suppress(docker.errors.NotFound):
            client().images.remove(marked, force=True, noprune=True)  # never its parent


def _marked(source: Any) -> str:
    """An image of ``source``'s files and the mark, committed from a container (no build).

    Not a Dockerfile ``FROM`` it: no ``ONBUILD`` step of the image's runs. The copy is
    made from it, so that its one layer holds the mark: a layer of the image's own would
    never equal it (an image of one layer, copied without the mark, did).
    """
    mark = io.BytesIO()
    with tarfile.open(fileobj=mark, mode="w") as tar:
        data = (source.id + "\n").encode()
        info = tarfile.TarInfo(_MARK.lstrip("/"))
        info.size, info.mode = len(data), 0o444
        tar.addfile(info, io.BytesIO(data))
    engine = client()
    with docker_errors():
        box = engine.containers.create(
            source.id,
            command=["/.boxgym-never-run"],
            entrypoint=[],
            network_disabled=True,
            labels=labels("grading-copy", "", "grader"),
        )
        try:
            box.put_archive("/", mark.getvalue())
            return str(box.commit().id)
        finally:
            box.remove(force=True, v=True)


def _build_from(source: Any, marked: str) -> str:
    with tempfile.TemporaryDirectory(prefix="boxgym-grading-") as folder:
        text = dockerfile(marked, source.attrs["Config"] or {})
        Path(folder, "Dockerfile").write_text(text)
        try:
            with docker_errors():
                image, _ = client().images.build(
                    path=folder,
                    tag=f"boxgym/grading:{source.id.removeprefix('sha256:')[:16]}",
                    labels={LABEL_GRADING: source.id},
                    rm=True,
                    forcerm=True,
                )
        except docker.errors.BuildError as exc:
            tail = "".join(str(c.get("stream", c.get("error", ""))) for c in exc.build_log)
            raise ImageError(f"copying {source.id} for grading failed:\n{tail[-2000:]}") from exc
    shared = set(image.attrs["RootFS"]["Layers"]) & set(source.attrs["RootFS"]["Layers"])
    if shared:  # cannot be: the copy's one layer holds the mark, no layer of the image does
        client().images.remove(image.id, force=True)
        raise ImageError(
            f"the grading copy of {source.id} has a layer of the image's own: report this"
        )
    return str(image.id)


def dockerfile(source: str, config: dict[str, Any]) -> str:
    """A Dockerfile that copies ``source``'s files into one layer of their own, with settings.

    Copied from the image itself (``COPY --from``), not from a stage built on it: no
    image is left that depends on it (`gym images prune` could not remove it).

    Args:
        source: the id of the image whose files are copied (the image with the mark).
        config: the image's ``Config`` (``docker image inspect``): its environment,
            working folder, user, volumes, entry point, command and stop signal are kept.

    Raises:
        ImageError: a setting a Dockerfile cannot write (a value over several lines, a
            variable's name that is not a plain name, a path with spaces at its ends).
    """
    lines = ["FROM scratch", f"COPY --from={source} / /"]
    env = [item for item in config.get("Env") or () if "=" in item]  # NAME alone: unset
    if any(not _NAME.fullmatch(item.partition("=")[0]) for item in env):
        raise ImageError(_unwritable(source, "an environment variable's name"))
    lines += [f"ENV {_env_line(item)}" for item in env]
    for key, word in (("WorkingDir", "WORKDIR"), ("User", "USER"), ("StopSignal", "STOPSIGNAL")):
        value = config.get(key)
        if value and value != value.strip():
            raise ImageError(_unwritable(source, f"its {key} (spaces at its ends)"))
        if value:
            lines.append(f"{word} {_escaped(value)}")
    if config.get("Volumes"):
        lines.append(f"VOLUME {json.dumps(sorted(config['Volumes']))}")
    for key, word in (("Entrypoint", "ENTRYPOINT"), ("Cmd", "CMD")):
        if config.get(key):
            lines.append(f"{word} {json.dumps(config[key])}")
    if any("\n" in line or "\r" in line for line in lines):
        raise ImageError(_unwritable(source, "a setting over several lines"))
    return "\n".join(lines) + "\n"


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
"""An environment variable's name a Dockerfile's ENV writes as it is."""


def _unwritable(source: str, what: str) -> str:
    return (
        f"image {source} has {what} that a Dockerfile cannot write: its grading copy "
        "cannot be made; set it another way (a plain name, one line, no spaces at the ends)"
    )


def _escaped(value: str) -> str:
    """A value as written, with what a Dockerfile would expand escaped."""
    return value.replace("\\", "\\\\").replace("$", "\\$")


def _env_line(item: str) -> str:
    """``NAME=value`` as an ENV instruction's argument, the value quoted as written."""
    name, _, value = item.partition("=")
    return f'{name}="{_escaped(value).replace(chr(34), chr(92) + chr(34))}"'
