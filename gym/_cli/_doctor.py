"""`gym doctor`: is this machine ready to run boxgym, and if not, the one-line fix."""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from gym._core._errors import GymError
from gym._core._paths import data_dir
from gym._sandbox import client, list_boxgym, owner_alive, reap
from gym._sandbox._engine import HOW_TO_START, LABEL_OWNER
from gym._sandbox._image_disk import parse_size
from gym._sandbox._images import context_hash, image_names

__all__ = ["Check", "fixes", "run_checks", "without_fix"]

MIN_FREE_GB = 5.0


class Check(BaseModel):
    """One line of the doctor's report."""

    name: str
    ok: bool
    detail: str
    fix: str = ""


def _python() -> Check:
    ok = sys.version_info >= (3, 11)
    return Check(
        name="python",
        ok=ok,
        detail=sys.version.split()[0],
        fix="" if ok else "install Python 3.11 or newer",
    )


def _import_name() -> Check:
    """The legacy ``gym`` distribution must not be installed: it shares the import name."""
    try:
        legacy: str | None = importlib.metadata.distribution("gym").version
    except importlib.metadata.PackageNotFoundError:
        legacy = None
    fix = f"`pip uninstall gym` (the legacy gym {legacy} shadows boxgym's `gym`)"
    return Check(
        name="import gym",
        ok=legacy is None,
        detail=str(Path(__file__).parents[1]),  # the gym package this doctor belongs to
        fix="" if legacy is None else fix,
    )


def _engine() -> Check:
    try:
        info = client().info()
        version = client().version()
    except GymError as exc:
        return Check(
            name="docker engine",
            ok=False,
            detail=str(exc),  # whole: the engine's own words say what is wrong (and HOW_TO_START)
            fix=HOW_TO_START,
        )
    detail = (
        f"{version.get('Version')} (API {version.get('ApiVersion')}), "
        f"{info.get('Driver')}, cgroup v{info.get('CgroupVersion', '1')}"
    )
    return Check(name="docker engine", ok=True, detail=detail)


def _base_image() -> Check:
    try:
        client().images.get("debian:bookworm-slim")
    except Exception:
        return Check(
            name="base image",
            ok=False,
            detail="debian:bookworm-slim missing",
            fix="run `scripts/engine.sh` (pulls it, or builds it with debootstrap)",
        )
    return Check(name="base image", ok=True, detail="debian:bookworm-slim")


def _images() -> Check:
    missing = []
    for name in image_names():
        try:
            client().images.get(f"boxgym/{name}:{context_hash(name)[:16]}")
        except Exception:
            missing.append(name)
    if missing:
        return Check(
            name="images",
            ok=False,
            detail="not built: " + ", ".join(missing),
            fix="run `gym images build`",
        )
    return Check(name="images", ok=True, detail=", ".join(image_names()) + " built")


def _leftovers(do_reap: bool) -> Check:
    from gym._sandbox._engine import reaped_at_start

    reaped = [*reaped_at_start, *(reap() if do_reap else [])]
    orphans = [c for c in list_boxgym() if owner_alive(c.labels.get(LABEL_OWNER, "")) is False]
    live = len(list_boxgym()) - len(orphans)
    detail = f"{len(orphans)} orphaned, {live} owned by running processes"
    if reaped:
        detail += f"; reaped {len(reaped)}"
    return Check(
        name="leftover containers",
        ok=not orphans,
        detail=detail,
        fix="" if not orphans else "run `gym doctor --reap`",
    )


def _image_disk() -> Check:
    """The disk each image takes (and its own part, past shared layers) and whom it serves."""
    from gym._envs._registry import family_images
    from gym._sandbox._image_disk import disk_use

    use = disk_use()
    served: dict[str, list[str]] = {}
    for family, folder in sorted(family_images().items()):
        served.setdefault(folder, []).append(family)
    parts = []
    for image in sorted(use.images, key=lambda i: (-i.size, i.names)):
        families = sorted({f for n in image.names for f in served.get(n, [])})
        label = "+".join(image.names) + (f" ({', '.join(families)})" if families else "")
        parts.append(f"{label} {_mib(image.size)} ({_mib(image.unique)} own)")
    ours = sum(i.unique for i in use.images)
    detail = f"{_mib(use.total)} of images, {_mib(ours)} only boxgym's: " + "; ".join(parts)
    budget = os.environ.get("GYM_IMAGE_BUDGET", "")
    ok = not budget or use.total <= parse_size(budget)
    fix = "" if ok else f"run `gym images prune --budget {budget}`"
    return Check(name="image disk", ok=ok, detail=detail, fix=fix)


def _mib(size: int) -> str:
    return f"{size / 2**20:.0f} MiB"


def _disk() -> Check:
    root = "/var/lib/docker"
    try:
        root = client().info().get("DockerRootDir", root)
    except GymError:
        pass
    path = root if Path(root).exists() else str(data_dir())
    free = shutil.disk_usage(path).free / 2**30
    ok = free >= MIN_FREE_GB
    return Check(
        name="free disk",
        ok=ok,
        detail=f"{free:.1f} GiB free at {path}",
        fix="" if ok else f"free at least {MIN_FREE_GB:.0f} GiB (`docker system prune`)",
    )


def fixes(checks: list[Check]) -> list[str]:
    """What to do: the fixes of the failed checks in their order, each once."""
    return list(dict.fromkeys(c.fix for c in checks if not c.ok and c.fix))


def without_fix(check: Check) -> str:
    """The check's detail less the fix it ends with (an error that says what to do)."""
    return check.detail.removesuffix(f": {check.fix}") if check.fix else check.detail


def run_checks(*, do_reap: bool = False) -> list[Check]:
    """Every check, in order; engine-dependent checks are skipped when it is down."""
    checks = [_python(), _import_name(), _engine()]
    if checks[-1].ok:
        steps: list[Callable[[], Check]] = [
            _base_image,
            _images,
            lambda: _leftovers(do_reap),
            _image_disk,
            _disk,
        ]
        checks += [step() for step in steps]
    return checks
