def check_examples(candidate):
    assert candidate("hello big world") == "world big hello"
    assert candidate("  one   two ") == "two one"


def check_edges(candidate):
    assert candidate("") == ""
    assert candidate("   ") == ""
    assert candidate("single") == "single"
    assert candidate("a\tb\nc") == "c b a"
    assert candidate("Mixed CASE stays") == "stays CASE Mixed"
