def spiral(matrix):
    """Return the items of a rectangular matrix in clockwise spiral order from the top left."""
    out = []
    rows = [list(r) for r in matrix]
    while rows:
        out.extend(rows.pop(0))
        rows = [list(col) for col in zip(*rows)][::-1]
    return out
