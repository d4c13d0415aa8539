def check_hello(candidate):
    assert candidate("Ada") == "Hello, Ada!"
    assert candidate("  Grace ") == "Hello, Grace!"
    assert candidate("") == "Hello, world!"
    assert candidate("   ") == "Hello, world!"
