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

import json
import tempfile
import threading
from pathlib import Path
from typing import Any

import docker.errors

from gym._core._errors import ImageError
from gym._sandbox._engine import client, docker_errors

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
    with tempfile.TemporaryDirectory(prefix="boxgym-grading-") as folder:
        Path(folder, "mark").write_text(source.id + "\n")
        text = dockerfile(source.id, source.attrs["Config"] or {})
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
    if shared:  # the engine found the copy's files equal to a layer of the image's own
        client().images.remove(image.id, force=True)
        raise ImageError(
            f"the grading copy of {source.id} has a layer of the image's own: report this"
        )
    return str(image.id)


def dockerfile(source: str, config: dict[str, Any]) -> str:
    """A Dockerfile that copies ``source``'s files into a layer of their own, with its settings.

    Copied from the image itself (``COPY --from``), not from a stage built on it: no
    image is left that depends on it (`gym images prune` could not remove it), and none
    of its ``ONBUILD`` steps runs.

    Args:
        source: the image's id.
        config: its ``Config`` (``docker image inspect``): its environment, working
            folder, user, volumes, entry point, command and stop signal are kept.

    Raises:
        ImageError: a setting a Dockerfile cannot write (a value over several lines).
    """
    lines = ["FROM scratch", f"COPY --from={source} / /", f"COPY mark {_MARK}"]
    lines += [f"ENV {_env_line(item)}" for item in config.get("Env") or ()]
    if config.get("WorkingDir"):
        lines.append(f"WORKDIR {_escaped(config['WorkingDir'])}")
    for key, word in (("User", "USER"), ("StopSignal", "STOPSIGNAL")):
        if config.get(key):
            lines.append(f"{word} {_escaped(config[key])}")
    if config.get("Volumes"):
        lines.append(f"VOLUME {json.dumps(sorted(config['Volumes']))}")
    for key, word in (("Entrypoint", "ENTRYPOINT"), ("Cmd", "CMD")):
        if config.get(key):
            lines.append(f"{word} {json.dumps(config[key])}")
    if any("\n" in line or "\r" in line for line in lines):
        raise ImageError(
            f"image {source} has a setting over several lines (an environment variable's "
            "value?): its grading copy cannot be written; give the value another way"
        )
    return "\n".join(lines) + "\n"


def _escaped(value: str) -> str:
    """A value as written, with what a Dockerfile would expand escaped."""
    return value.replace("\\", "\\\\").replace("$", "\\$")


def _env_line(item: str) -> str:
    """``NAME=value`` as an ENV instruction's argument, the value quoted as written."""
    name, _, value = item.partition("=")
    return f'{name}="{_escaped(value).replace(chr(34), chr(92) + chr(34))}"'
