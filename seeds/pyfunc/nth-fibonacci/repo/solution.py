def fib(n):
    """Return the n-th Fibonacci number exactly (fib(0) == 0, fib(1) == 1)."""
    raise NotImplementedError
