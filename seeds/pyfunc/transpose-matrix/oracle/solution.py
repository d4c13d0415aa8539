def transpose(matrix):
    """Return the transpose of a rectangular matrix given as a list of row lists."""
    if not matrix:
        return []
    return [[row[i] for row in matrix] for i in range(len(matrix[0]))]
