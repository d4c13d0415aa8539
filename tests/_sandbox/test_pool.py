import time

import pytest

from gym.sandbox import SandboxPool

pytestmark = pytest.mark.docker


def wait_for(predicate, seconds=30.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_pool_hands_out_ready_sandboxes_and_refills(small_config):
    pool = SandboxPool(small_config, size=2, run="pytest")
    try:
        assert wait_for(lambda: len(pool._ready) == 2)
        box = pool.acquire()
        assert box.shell.alive and box.run("echo ready").stdout == "ready\n"
        assert wait_for(lambda: len(pool._ready) == 2)
        box.close()
    finally:
        pool.close()


def test_each_acquire_is_a_fresh_container(small_config):
    pool = SandboxPool(small_config, size=1, run="pytest")
    try:
        first = pool.acquire()
        first.run("echo mark > /tmp/mark")
        first.close()
        second = pool.acquire()
        assert second.container.id != first.container.id
        assert second.run("cat /tmp/mark").exit_code != 0
        second.close()
    finally:
        pool.close()


def test_resize_and_close_remove_ready_sandboxes(small_config):
    pool = SandboxPool(small_config, size=2, run="pytest")
    assert wait_for(lambda: len(pool._ready) == 2)
    ids = [b.container.id for b in pool._ready]
    pool.resize(0)
    assert len(pool._ready) == 0
    pool.close()
    from gym._sandbox import client

    assert wait_for(
        lambda: not any(client().containers.list(all=True, filters={"id": i}) for i in ids)
    )
