def check_examples(candidate):
    assert candidate("Hello World") == 3
    assert candidate("rhythm") == 0


def check_edges(candidate):
    assert candidate("") == 0
    assert candidate("AEIOUaeiou") == 10
    assert candidate("yYy") == 0
    assert candidate("Queueing") == 5
    assert candidate("xyz" * 50 + "a") == 1
