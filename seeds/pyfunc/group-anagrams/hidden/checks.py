def check_examples(candidate):
    assert candidate(["eat", "tea", "tan", "ate", "nat", "bat"]) == [
        ["ate", "eat", "tea"],
        ["bat"],
        ["nat", "tan"],
    ]
    assert candidate([]) == []


def check_edges(candidate):
    assert candidate(["a"]) == [["a"]]
    assert candidate(["ab", "ba", "ab"]) == [["ab", "ab", "ba"]]
    assert candidate(["abc", "Cab"]) == [["Cab"], ["abc"]]
    assert candidate(["", ""]) == [["", ""]]
    assert candidate(["zz", "aab", "aba", "z"]) == [["aab", "aba"], ["z"], ["zz"]]
