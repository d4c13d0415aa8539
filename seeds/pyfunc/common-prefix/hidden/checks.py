def check_examples(candidate):
    assert candidate(["flower", "flow", "flight"]) == "fl"
    assert candidate(["dog", "racecar"]) == ""


def check_edges(candidate):
    assert candidate([]) == ""
    assert candidate(["alone"]) == "alone"
    assert candidate(["same", "same"]) == "same"
    assert candidate(["ab", "a", ""]) == ""
    assert candidate(["prefix", "pre"]) == "pre"
    assert candidate(["Abc", "abc"]) == ""
    assert candidate(["interview", "internet", "interval"]) == "inter"
