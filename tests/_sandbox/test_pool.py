import time

import pytest

from gym._sandbox._provider import graded
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


@pytest.mark.parametrize("role", ["agent", "grader"])
def test_a_spare_whose_container_ended_while_waiting_is_not_handed_out(small_config, role):
    # an agent's container has a keeper (its link carries output, ended with it); a
    # grading container has none (its link is input only: its shell's stream tells)
    config = graded(small_config) if role == "grader" else small_config
    pool = SandboxPool(config, size=1, run="pytest", role=role)
    try:
        assert wait_for(lambda: len(pool._ready) == 1)
        dead = pool._ready[0]
        assert (dead.keeper is None) == (role == "grader")
        dead.container.kill()  # as a `docker kill` or an engine restart would
        assert wait_for(dead.known_gone, seconds=5)
        box = pool.acquire()
        assert box.container.id != dead.container.id
        assert box.run("echo ready").stdout == "ready\n"
        assert pool.pools.counts.snapshot().get(f"{role}.spare_dead") == 1
        box.close()
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

    # the low-level listing: the high-level one inspects each container it lists, and a
    # container removed in between raises NotFound
    assert wait_for(
        lambda: not any(client().api.containers(all=True, filters={"id": i}) for i in ids)
    )


def refill_failed_and_released(config) -> bool:
    """A pool of one spare on ``config``: its refill failed and its reservation is free."""
    pool = SandboxPool(config, size=1, run="pytest")
    try:
        return wait_for(lambda: pool._failures >= 1 and pool.filling == 0, seconds=10)
    finally:
        pool.close()


def test_a_missing_image_is_an_image_error_and_the_pool_keeps_working(small_config):
    from gym._sandbox import DockerSandbox
    from gym.errors import ImageError

    missing = small_config.model_copy(update={"image": "boxgym/never-built:0"})
    with pytest.raises(ImageError, match="boxgym/never-built:0"):
        DockerSandbox.create(missing, run="pytest")
    # the controller's worker logged the failure and released its reservation
    assert refill_failed_and_released(missing)


def test_an_unexpected_error_in_a_refill_releases_the_reservation(small_config, monkeypatch):
    def broken(self):
        raise RuntimeError("not a GymError")

    monkeypatch.setattr(SandboxPool, "_make", broken)
    assert refill_failed_and_released(small_config)


def test_a_taker_waits_for_a_stuck_start_only_so_long(small_config, monkeypatch):
    import threading

    from gym._sandbox import _pool

    release = threading.Event()

    def stuck(self):
        release.wait(30)
        raise RuntimeError("released")

    monkeypatch.setattr(_pool, "_FILL_WAIT", 0.5)
    monkeypatch.setattr(SandboxPool, "_make", stuck)
    pool = SandboxPool(small_config, size=1, run="pytest")
    try:
        assert wait_for(lambda: pool.filling == 1, seconds=10)
        start = time.monotonic()
        assert pool.take() is None  # the caller starts its own
        assert 0.4 < time.monotonic() - start < 5
    finally:
        release.set()
        pool.close()


def test_a_pool_sized_0_hands_out_nothing_started_before(small_config):
    pool = SandboxPool(small_config, size=0, run="pytest")
    try:
        pool.reserve()  # a spare still being started with the earlier settings
        start = time.monotonic()
        assert pool.take() is None
        assert time.monotonic() - start < 1
    finally:
        pool.close()
