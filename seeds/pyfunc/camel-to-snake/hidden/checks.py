def check_examples(candidate):
    assert candidate("camelCase") == "camel_case"
    assert candidate("CamelCase") == "camel_case"
    assert candidate("ABC") == "a_b_c"


def check_edges(candidate):
    assert candidate("already") == "already"
    assert candidate("") == ""
    assert candidate("A") == "a"
    assert candidate("getX2Value") == "get_x2_value"
    assert candidate("parseHttpResponse") == "parse_http_response"
    assert candidate("v2") == "v2"
