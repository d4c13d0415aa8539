"""Reading networks from text: one 'A - B: minutes' link per line."""

import re

from transit.network import Network

LINE = re.compile(r"^\s*(.+?)\s*-\s*(.+?)\s*:\s*(\d+)\s*$")


def parse_network(text):
    """Build a Network; blank lines and lines starting with # are skipped."""
    net = Network()
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        match = LINE.match(raw)
        if not match:
            raise ValueError(f"line {number}: expected 'A - B: minutes'")
        a, b, minutes = match.groups()
        net.add_link(a, b, int(minutes))
    return net
