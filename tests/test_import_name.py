"""`import gym` must be boxgym, never the legacy `gym` package, and must cost little."""

import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import gym
from gym._core._version import DISTRIBUTION


def test_import_gym_is_boxgym():
    assert DISTRIBUTION == "boxgym"
    assert hasattr(gym, "ContainerEnv")


def test_gym_module_comes_from_the_boxgym_distribution():
    dist = importlib.metadata.distribution("boxgym")
    assert dist.metadata["Name"] == "boxgym"
    origin = Path(gym.__file__).resolve()
    top_level = {Path(str(f)).parts[0] for f in dist.files or []}
    # an editable install lists a path hook instead of the sources; either way the
    # module must sit in a folder named gym that holds boxgym's own private modules
    assert origin.parent.name == "gym"
    assert (origin.parent / "_sandbox").is_dir()
    assert "gym" in top_level or any("boxgym" in p for p in top_level)


def test_legacy_gym_distribution_is_not_installed():
    try:
        importlib.metadata.distribution("gym")
    except importlib.metadata.PackageNotFoundError:
        return
    raise AssertionError("the legacy `gym` package is installed and shadows boxgym")


def test_importing_gym_keeps_numpys_blas_threads_from_spinning():
    """OpenBLAS threads sleep at once (not after 2**28 cycles); a user's own value stays."""
    probe = "import gym, os; print(os.environ['OPENBLAS_THREAD_TIMEOUT'])"
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    ours = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    theirs = subprocess.run(
        [sys.executable, "-c", probe],
        env={**env, "OPENBLAS_THREAD_TIMEOUT": "20"},
        capture_output=True,
        text=True,
    )
    assert (ours.stdout, theirs.stdout) == ("4\n", "20\n")
