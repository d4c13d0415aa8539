"""Rail networks and route finding."""

from transit.loader import parse_network
from transit.network import Network
from transit.search import fewest_stops

__all__ = ["Network", "fewest_stops", "parse_network"]
