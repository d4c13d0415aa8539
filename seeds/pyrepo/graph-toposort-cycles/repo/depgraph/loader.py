"""Reading dependency files: one `target: dep dep ...` per line, # comments."""

from depgraph.graph import Graph


def parse_deps(text):
    """Parse a dependency file into a Graph."""
    graph = Graph()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        target, sep, rest = line.partition(":")
        target = target.strip()
        if not sep or not target:
            raise ValueError(f"line {number}: expected 'target: deps', got {raw!r}")
        graph.add_target(target)
        for dep in rest.split():
            graph.add_dependency(target, dep)
    return graph
