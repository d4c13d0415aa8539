import pytest

from patience import retry, retrying


def flaky(failures, result="ok"):
    state = {"left": failures}

    def func():
        if state["left"]:
            state["left"] -= 1
            raise ConnectionError("boom")
        return result

    return func


def test_succeeds_first_time():
    slept = []
    assert retry(lambda: 42, sleep=slept.append) == 42
    assert slept == []


def test_succeeds_after_failures():
    slept = []
    assert retry(flaky(2), attempts=3, sleep=slept.append) == "ok"
    assert len(slept) == 2


def test_attempts_positive():
    with pytest.raises(ValueError):
        retry(lambda: 1, attempts=0)


def test_decorator():
    slept = []

    @retrying(attempts=5, sleep=slept.append)
    def get():
        return fn()

    fn = flaky(1, "data")
    assert get() == "data"
    assert len(slept) == 1
