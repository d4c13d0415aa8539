"""A training run's checkpoint: whole after a kill at any moment of its save."""

from __future__ import annotations

import importlib.util
import os
import signal
import sys
from pathlib import Path

import pytest

HAVE = all(importlib.util.find_spec(m) for m in ("torch", "transformers"))
pytestmark = pytest.mark.skipif(not HAVE, reason="needs torch and transformers")


def _weights():  # type: ignore[no-untyped-def]
    from gym.train._grpo_weights import LocalWeights

    return LocalWeights.create("tiny", "tiny", seed=0, lr=1e-3)


def _info(version: int):  # type: ignore[no-untyped-def]
    from gym.train._grpo_weights import CheckpointInfo

    return CheckpointInfo(train_id="t1", version=version)


def _killed_at_rename(folder: Path, number: int) -> None:
    """Save version 2 over version 1 in a child killed at its ``number``-th rename."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child dies
        renames = 0
        real = Path.rename

        def rename(self: Path, target: Path) -> Path:
            nonlocal renames
            renames += 1
            if renames == number:
                os.kill(os.getpid(), signal.SIGKILL)
            return real(self, target)

        Path.rename = rename  # type: ignore[method-assign]
        _weights().save(folder, _info(2))
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status), "the save finished before the kill"


@pytest.mark.skipif(sys.platform != "linux", reason="forks")
@pytest.mark.parametrize(("number", "version"), [(1, 1), (2, 2)])
def test_a_save_killed_between_its_renames_resumes_from_a_whole_checkpoint(
    tmp_path: Path, number: int, version: int
) -> None:
    folder = tmp_path / "out"
    _weights().save(folder, _info(1))
    _killed_at_rename(folder, number)
    weights = _weights()
    info = weights.resume(folder, "t1")
    assert info is not None and info.version == version
    weights.save(folder, _info(version + 1))  # what the resumed run does next
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    again = _weights().resume(folder, "t1")
    assert again is not None and again.version == version + 1
