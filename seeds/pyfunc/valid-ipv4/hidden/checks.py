def check_examples(candidate):
    assert candidate("192.168.0.1") is True
    assert candidate("256.1.1.1") is False
    assert candidate("01.2.3.4") is False


def check_valid(candidate):
    assert candidate("255.255.255.255") is True
    assert candidate("0.0.0.0") is True
    assert candidate("10.0.100.9") is True


def check_invalid(candidate):
    assert candidate("") is False
    assert candidate("1.2.3") is False
    assert candidate("1.2.3.4.5") is False
    assert candidate("1.2.3.-4") is False
    assert candidate("a.b.c.d") is False
    assert candidate("1..2.3") is False
    assert candidate(" 1.2.3.4") is False
    assert candidate("1.2.3.4 ") is False
    assert candidate("+1.2.3.4") is False
    assert candidate("1.2.3.\u0664") is False
    assert candidate("1.2.3.00") is False
