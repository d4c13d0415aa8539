"""Aligning single lines."""


def align_right(line, width):
    """Pad on the left to width."""
    return line.rjust(width)


def align_center(line, width):
    """Center in width; an odd leftover space goes to the right."""
    total = max(width - len(line), 0)
    left = total // 2
    return " " * left + line + " " * (total - left)
