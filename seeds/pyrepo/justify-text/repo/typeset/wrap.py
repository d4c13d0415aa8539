"""Greedy line breaking."""


def wrap(text, width):
    """Break text into lists of words, each line at most width wide when joined by spaces.

    A word longer than width gets a line of its own.
    """
    if width < 1:
        raise ValueError("width must be positive")
    lines, current, used = [], [], 0
    for word in text.split():
        needed = len(word) if not current else used + 1 + len(word)
        if current and needed > width:
            lines.append(current)
            current, used = [word], len(word)
        else:
            current.append(word)
            used = needed
    if current:
        lines.append(current)
    return lines
