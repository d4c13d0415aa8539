"""Topological build order."""


class CycleError(ValueError):
    """The dependencies contain a cycle."""

    def __init__(self, cycle):
        super().__init__("dependency cycle: " + " -> ".join(cycle))
        self.cycle = cycle


def build_order(graph):
    """Targets in an order where every dependency comes before what needs it.

    When several targets are ready at once, the alphabetically smallest goes first.
    """
    remaining = {t: len(graph.deps(t)) for t in graph.targets()}
    ready = sorted(t for t, n in remaining.items() if n == 0)
    order = []
    while ready:
        target = ready.pop()
        order.append(target)
        for user in graph.dependents(target):
            remaining[user] -= 1
            if remaining[user] == 0:
                ready.append(user)
                ready.sort()
    return order
