def fib(n):
    """Return the n-th Fibonacci number exactly (fib(0) == 0, fib(1) == 1)."""
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a
