def check_examples(candidate):
    assert candidate("A man, a plan, a canal: Panama") is True
    assert candidate("race a car") is False


def check_edges(candidate):
    assert candidate("") is True
    assert candidate("!!") is True
    assert candidate("ab") is False
    assert candidate("No 'x' in Nixon") is True
    assert candidate("12321") is True
    assert candidate("123 21") is True
    assert candidate("1a2") is False
