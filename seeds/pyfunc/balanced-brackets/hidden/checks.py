def check_examples(candidate):
    assert candidate("([]{})") is True
    assert candidate("([)]") is False


def check_edges(candidate):
    assert candidate("") is True
    assert candidate("((") is False
    assert candidate("))((") is False
    assert candidate("a(b[c]d)e") is True
    assert candidate("}") is False
    assert candidate("{[()()]}") is True
    assert candidate("(]") is False
    assert candidate("(" * 500 + ")" * 500) is True
