"""Route finding."""

import heapq
from collections import deque


def _check(network, start, goal):
    if start not in network or goal not in network:
        raise KeyError(start if start not in network else goal)


def fewest_stops(network, start, goal):
    """The path with the fewest stations from start to goal (None if unreachable)."""
    _check(network, start, goal)
    previous = {start: None}
    queue = deque([start])
    while queue:
        here = queue.popleft()
        if here == goal:
            path = []
            while here is not None:
                path.append(here)
                here = previous[here]
            return path[::-1]
        for nxt in sorted(network.neighbours(here)):
            if nxt not in previous:
                previous[nxt] = here
                queue.append(nxt)
    return None


def fastest(network, start, goal):
    """(minutes, path) of the quickest route, or None if goal cannot be reached.

    Ties go to fewer stations, then to the alphabetically smallest path.
    """
    _check(network, start, goal)
    heap = [(0, 1, [start])]
    done = set()
    while heap:
        minutes, stops, path = heapq.heappop(heap)
        here = path[-1]
        if here in done:
            continue
        done.add(here)
        if here == goal:
            return minutes, path
        for nxt, cost in network.neighbours(here).items():
            if nxt not in done:
                heapq.heappush(heap, (minutes + cost, stops + 1, path + [nxt]))
    return None
