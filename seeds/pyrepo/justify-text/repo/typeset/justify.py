"""Full justification."""

from typeset.wrap import wrap


def _spread(words, width):
    gaps = len(words) - 1
    spaces = width - sum(len(w) for w in words)
    size, extra = divmod(spaces, gaps)
    out = words[0]
    for i, word in enumerate(words[1:]):
        pad = size + (1 if i >= gaps - extra else 0)
        out += " " * pad + word
    return out


def justify(text, width):
    """The lines of wrap(text, width), each stretched to exactly width characters."""
    return [_spread(words, width) for words in wrap(text, width)]
