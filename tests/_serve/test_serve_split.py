"""`gym serve --split` refuses a split no environment declares, as `gym run` does."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gym._run._runner import check_split
from gym._serve._app import ServeConfig, create_app
from gym.errors import ConfigError

GYM = os.path.join(os.path.dirname(sys.executable), "gym")
ENV = "boxgym/PyFunc-v0"


def test_an_undeclared_split_is_refused_with_the_runs_message():
    with pytest.raises(ConfigError) as run_said:
        check_split([ENV], "evl")
    with pytest.raises(ConfigError) as serve_said:
        create_app(ServeConfig(env_id=ENV, split="evl"))
    assert str(serve_said.value) == str(run_said.value)
    assert create_app(ServeConfig(env_id=ENV, split="eval")) is not None  # declared: served


def test_serve_with_a_mistyped_split_exits_2_in_one_line():
    """Before, it served (no task at all) until stopped: the timeout would fail this."""
    done = subprocess.run(
        [GYM, "serve", ENV, "--split", "evl", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        f"error: no environment declares the split 'evl' (declared: {ENV}: train, eval)\n"
    )
