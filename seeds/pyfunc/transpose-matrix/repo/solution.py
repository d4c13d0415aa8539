def transpose(matrix):
    """Return the transpose of a rectangular matrix given as a list of row lists."""
    raise NotImplementedError
