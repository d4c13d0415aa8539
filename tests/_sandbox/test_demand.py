"""Warm pools sized by demand: no spare for an episode that will not come or not need one.

A pool of plain objects stands in for containers, filled by the real controller of a
`Pools` of its own.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator

import pytest

from gym._sandbox._pool import Pools, _Pool

_ids = itertools.count()


class Things(_Pool[int]):
    """Spares that cost nothing: numbers; a spare can be made to take a while."""

    role = "grader"

    def __init__(self, size: int, pools: Pools, delay: float = 0.0) -> None:
        self.delay = delay
        self.dropped: list[int] = []
        super().__init__(size, pools=pools, by_demand=True)

    def _make(self) -> int:
        time.sleep(self.delay)
        return next(_ids)

    def _alive(self, item: int) -> bool:
        return True

    def _drop(self, item: int) -> None:
        self.dropped.append(item)


def settle(pool: Things, ready: int, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if len(pool._ready) == ready and not pool.filling:
            return True
        time.sleep(0.01)
    return False


def wait_until_filling(pool: Things) -> None:
    """Wait (at most 5 s) until the controller is starting a spare for the pool."""
    deadline = time.monotonic() + 5
    while not pool.filling:
        assert time.monotonic() < deadline
        time.sleep(0.01)


@pytest.fixture
def pools() -> Iterator[Pools]:
    """Pools of their own: their demand, controller, counters and gate."""
    pools = Pools()
    yield pools
    pools.close()


def test_without_a_runner_a_pool_keeps_its_size(pools):
    pool = Things(3, pools)
    try:
        assert pool.target() == 3 and settle(pool, 3)
    finally:
        pool.close()


def test_a_pool_keeps_no_spare_before_any_episode_used_one(pools):
    demand = pools.demand
    demand.expect(10)
    pool = Things(4, pools)
    try:
        assert pool.target() == 0 and settle(pool, 0)
        demand.opened()
        assert pool.take() is None, "the first is started on demand"
        assert pool.target() == 4, "one use per episode so far: ten more to come"
        assert settle(pool, 4)
    finally:
        pool.close()


def test_spares_never_outnumber_the_episodes_still_to_come(pools):
    demand = pools.demand
    demand.expect(10)
    pool = Things(4, pools)
    try:
        for _ in range(8):  # eight episodes, each graded once
            demand.opened()
            pool.take()
            demand.closed_one(started=False)
        demand.expect(2)
        assert pool.target() == 2
        demand.expect(0)
        assert pool.target() == 0, "the run is over: nothing more is started"
    finally:
        pool.close()


def test_an_episode_that_needs_none_teaches_the_pool_to_keep_none(pools):
    demand = pools.demand
    demand.expect(10)
    pool = Things(4, pools)
    try:
        demand.opened()
        pool.take()
        demand.closed_one(started=False)
        for _ in range(3):  # three more episodes that are never graded
            demand.opened()
            demand.closed_one(started=False)
        assert pool.target() == 3, "a quarter of episodes use one: ceil(10 / 4)"
    finally:
        pool.close()


def test_a_taker_waits_for_the_spare_being_started_instead_of_starting_another(pools):
    pool = Things(1, pools, delay=0.5)
    try:
        wait_until_filling(pool)
        got: list[int | None] = []
        taker = threading.Thread(target=lambda: got.append(pool.take()))
        taker.start()
        taker.join(5)
        assert got and got[0] is not None, "it got the spare that was being started"
    finally:
        pool.close()


class AgentThings(Things):
    role = "agent"


def test_the_last_episode_gets_the_spare_started_for_it_and_none_is_dropped(pools):
    """An episode starting its container leaves the demand as it takes (one step, under
    the pool's lock): the spare being started for it is kept for it, whenever it ends."""
    demand = pools.demand
    demand.expect(1)
    pool = AgentThings(2, pools, delay=0.5)
    try:
        demand.opened()  # a first episode teaches the pool: one container per episode
        pool.take(on_take=demand.started)
        demand.closed_one(started=True)
        demand.opened()  # the last episode: the pool starts one spare for it
        demand.expect(0)
        wait_until_filling(pool)
        got = pool.take(on_take=demand.started)
        assert got is not None, "it waited for the spare being started for it"
        assert settle(pool, 0) and pool.dropped == []
    finally:
        pool.close()


def test_a_grader_spare_that_ends_its_start_as_its_episode_closes_is_kept_for_its_grading(pools):
    """An episode gives its agent sandbox back (the demand for graders falls) just before it
    takes its grader: the spare started for it, ending in between, is kept, not dropped."""
    demand = pools.demand
    demand.expect(1)
    pool = Things(2, pools, delay=0.5)
    try:
        demand.opened()  # a first episode: one grader per episode
        demand.closed_one(started=True)
        pool.take()
        demand.opened()  # the last episode: a spare is started for its grading
        demand.expect(0)
        wait_until_filling(pool)
        demand.closed_one(started=True)  # it gives its sandbox back...
        assert pool.target() == 0
        assert settle(pool, 1), "...and the spare that ends its start meanwhile is kept"
        assert pool.take() is not None and pool.dropped == []
    finally:
        pool.close()


def test_episodes_waiting_for_a_grading_slot_keep_their_graders_in_the_demand(pools):
    """Every episode has begun and given its sandbox back, most wait for a grading slot:
    each still takes a grader, so the pool keeps spares for them (no cold start inside
    the slot); the episodes still in the queue do not count as having needed none."""
    demand = pools.demand
    demand.expect(0)
    pool = Things(4, pools)
    try:
        for _ in range(10):  # ten episodes began and closed: two graded, eight queued
            demand.opened()
            demand.closed_one(started=False)
        pool.take()
        pool.take()
        assert pool.target() == 0, "unannounced, the queue looks like episodes that are done"
        demand.queue(8)
        assert pool.target() == 4, "one grader per graded episode, eight to come: the size"
        for _ in range(5):  # five more graded
            pool.take()
        demand.queue(3)
        assert pool.target() == 3
        demand.queue(0)
        assert pool.target() == 0
    finally:
        pool.close()
