"""A directed graph of targets and what they depend on."""


class Graph:
    """Targets (strings) and their dependencies."""

    def __init__(self):
        self._deps = {}

    def add_target(self, name):
        """Add a target with no dependencies (if it is not there yet)."""
        self._deps.setdefault(name, set())

    def add_dependency(self, target, dep):
        """Record that target needs dep to be built first."""
        self.add_target(target)
        self.add_target(dep)
        self._deps[target].add(dep)

    def targets(self):
        """Every target, sorted."""
        return sorted(self._deps)

    def deps(self, target):
        """The direct dependencies of a target, sorted."""
        return sorted(self._deps[target])

    def dependents(self, target):
        """The targets that directly depend on target, sorted."""
        return sorted(t for t, deps in self._deps.items() if target in deps)
