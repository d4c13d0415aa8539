def check_examples(candidate):
    assert candidate("a=1; b = two") == {"a": "1", "b": "two"}
    assert candidate("k=v=w") == {"k": "v=w"}


def check_edges(candidate):
    assert candidate("") == {}
    assert candidate(" ; ;") == {}
    assert candidate("a=1;a=2") == {"a": "2"}
    assert candidate("novalue;x=1") == {"x": "1"}
    assert candidate("e= ;") == {"e": ""}
    assert candidate(" spaced key = spaced value ") == {"spaced key": "spaced value"}
    assert candidate("x = 1 ;; y=2;") == {"x": "1", "y": "2"}
