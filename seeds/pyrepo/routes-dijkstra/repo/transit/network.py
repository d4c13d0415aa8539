"""Stations joined by two-way links with travel times in minutes."""


class Network:
    """An undirected weighted graph of stations."""

    def __init__(self):
        self._links = {}

    def add_station(self, name):
        self._links.setdefault(name, {})

    def add_link(self, a, b, minutes):
        """Join a and b both ways (a second link between them replaces the first)."""
        if minutes < 0:
            raise ValueError("travel time cannot be negative")
        if a == b:
            raise ValueError("a link needs two different stations")
        self.add_station(a)
        self.add_station(b)
        self._links[a][b] = minutes
        self._links[b][a] = minutes

    def stations(self):
        return sorted(self._links)

    def neighbours(self, name):
        """{station: minutes} of the stations linked to name (KeyError if unknown)."""
        return dict(self._links[name])

    def __contains__(self, name):
        return name in self._links
