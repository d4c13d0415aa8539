"""Full justification."""

from typeset.wrap import wrap


def _spread(words, width):
    """Stretch words to width; the leftmost gaps get the extra spaces."""
    if len(words) == 1:
        return words[0].ljust(width)
    gaps = len(words) - 1
    spaces = width - sum(len(w) for w in words)
    size, extra = divmod(spaces, gaps)
    out = words[0]
    for i, word in enumerate(words[1:]):
        pad = size + (1 if i < extra else 0)
        out += " " * pad + word
    return out


def justify(text, width):
    """The lines of wrap(text, width), each exactly width characters wide.

    Every line but the last is fully justified; the last one is left-aligned. A line
    holding one word is left-aligned; a word longer than width stays as it is.
    """
    lines = wrap(text, width)
    out = [_spread(words, width) for words in lines[:-1]]
    if lines:
        out.append(" ".join(lines[-1]).ljust(width))
    return out
