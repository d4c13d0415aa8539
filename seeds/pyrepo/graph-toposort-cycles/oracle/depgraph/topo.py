"""Topological build order."""

import heapq


class CycleError(ValueError):
    """The dependencies contain a cycle."""

    def __init__(self, cycle):
        super().__init__("dependency cycle: " + " -> ".join(cycle))
        self.cycle = cycle


def find_cycle(graph, among):
    """One cycle among the given targets (each depends on the next), first repeated."""
    path, on_path, node = [], {}, min(among)
    while node not in on_path:
        on_path[node] = len(path)
        path.append(node)
        node = next(d for d in graph.deps(node) if d in among)
    return path[on_path[node] :] + [node]


def build_order(graph):
    """Targets in an order where every dependency comes before what needs it.

    When several targets are ready at once, the alphabetically smallest goes first.

    Raises:
        CycleError: the dependencies contain a cycle.
    """
    remaining = {t: len(graph.deps(t)) for t in graph.targets()}
    ready = [t for t, n in remaining.items() if n == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        target = heapq.heappop(ready)
        order.append(target)
        for user in graph.dependents(target):
            remaining[user] -= 1
            if remaining[user] == 0:
                heapq.heappush(ready, user)
    if len(order) < len(remaining):
        # every target left has a dependency left, so following them must loop
        left = {t for t, n in remaining.items() if n > 0}
        raise CycleError(find_cycle(graph, left))
    return order
