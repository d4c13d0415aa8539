"""Importing boxgym with the cyclic garbage collector paused (gym/_core/_startup.py)."""

from __future__ import annotations

import gc
import subprocess
import sys

import pytest

from gym._core._startup import collector_paused


@pytest.fixture(autouse=True)
def _collector_restored():
    was = gc.isenabled()
    yield
    gc.enable() if was else gc.disable()


def test_the_collector_is_paused_in_the_block_and_runs_again_after_it():
    gc.enable()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_the_collector_runs_again_when_the_block_raises():
    gc.enable()
    with pytest.raises(ImportError), collector_paused():
        raise ImportError("a broken plugin")
    assert gc.isenabled()


def test_a_nested_block_leaves_the_pause_to_the_outer_one():
    gc.enable()
    with collector_paused():
        with collector_paused():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_the_caller_turned_off_stays_off():
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()


def test_importing_gym_and_its_store_leaves_the_collector_running():
    code = "import gc, gym, gym._store; print(gc.isenabled(), gc.get_stats()[2]['collections'])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    enabled, full_collections = done.stdout.split()
    assert enabled == "True"
    assert full_collections == "0", "the oldest generation was collected during the import"
