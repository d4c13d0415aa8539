from memo import cached


def test_results_reused():
    calls = []

    @cached(maxsize=4)
    def square(x):
        calls.append(x)
        return x * x

    assert [square(3), square(3), square(4)] == [9, 9, 16]
    assert calls == [3, 4]
    assert square.cache.stats()["hits"] == 1
