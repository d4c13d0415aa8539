def spiral(matrix):
    """Return the items of a rectangular matrix in clockwise spiral order from the top left."""
    raise NotImplementedError
