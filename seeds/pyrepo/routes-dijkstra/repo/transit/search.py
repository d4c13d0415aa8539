"""Route finding."""

from collections import deque


def fewest_stops(network, start, goal):
    """The path with the fewest stations from start to goal (None if unreachable)."""
    if start not in network or goal not in network:
        raise KeyError(start if start not in network else goal)
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
