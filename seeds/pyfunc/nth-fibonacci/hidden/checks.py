def _fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


def check_examples(candidate):
    assert candidate(10) == 55
    assert candidate(0) == 0


def check_edges(candidate):
    assert candidate(1) == 1
    assert candidate(2) == 1
    assert candidate(50) == 12586269025
    assert candidate(300) == _fib(300)
    assert candidate(10000) == _fib(10000)
