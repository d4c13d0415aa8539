"""Unions of intervals."""

from spans.interval import Interval


def merge(intervals):
    """The union of intervals as disjoint intervals sorted by start."""
    out = []
    for iv in intervals:
        if out and iv.start < out[-1].end:
            out[-1] = Interval(out[-1].start, max(out[-1].end, iv.end))
        else:
            out.append(iv)
    return out


def total_length(intervals):
    """The length of the union of intervals."""
    return sum(iv.length for iv in merge(intervals))


def gaps(intervals, within):
    """The parts of `within` (an Interval) not covered by intervals."""
    out = []
    cursor = within.start
    for iv in merge(intervals):
        if iv.end <= within.start or iv.start >= within.end:
            continue
        if iv.start > cursor:
            out.append(Interval(cursor, iv.start))
        cursor = max(cursor, iv.end)
    if cursor < within.end:
        out.append(Interval(cursor, within.end))
    return out
