def triangle_kind(a, b, c):
    """Classify side lengths a, b, c: 'equilateral', 'isosceles', 'scalene' or 'invalid'."""
    raise NotImplementedError
