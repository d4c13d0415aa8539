"""Dependency graphs and build orders."""

from depgraph.graph import Graph
from depgraph.loader import parse_deps
from depgraph.topo import CycleError, build_order

__all__ = ["CycleError", "Graph", "build_order", "parse_deps"]
