import pytest

from patience import delays, retry, retrying


def test_delays_start_at_base():
    assert delays(0.5, 2, 100, 4) == [0.5, 1.0, 2.0]
    assert delays(1, 3, 100, 1) == []


def test_delays_capped():
    assert delays(1, 2, 5, 6) == [1, 2, 4, 5, 5]


def test_only_retry_on_given_exceptions():
    slept, calls = [], []

    def func():
        calls.append(1)
        raise KeyError("not transient")

    with pytest.raises(KeyError):
        retry(func, attempts=5, retry_on=(ConnectionError,), sleep=slept.append)
    assert calls == [1] and slept == []


def test_last_exception_reraised_after_n_minus_1_sleeps():
    slept, errors = [], []

    def func():
        errors.append(TimeoutError(f"try {len(errors)}"))
        raise errors[-1]

    with pytest.raises(TimeoutError) as info:
        retry(func, attempts=4, base=1, factor=2, max_delay=3, sleep=slept.append)
    assert info.value is errors[-1]
    assert len(errors) == 4
    assert slept == [1, 2, 3]


def test_mixed_exceptions():
    slept = []
    seq = [ConnectionError("a"), ConnectionError("b"), ValueError("stop")]

    def func():
        raise seq.pop(0)

    with pytest.raises(ValueError):
        retry(func, attempts=10, base=0.25, retry_on=ConnectionError, sleep=slept.append)
    assert slept == [0.25, 0.5]


def test_decorator_honours_retry_on():
    slept = []

    @retrying(attempts=3, retry_on=(OSError,), sleep=slept.append, base=2, max_delay=2)
    def always():
        raise PermissionError("still an OSError")

    with pytest.raises(PermissionError):
        always()
    assert slept == [2, 2]
