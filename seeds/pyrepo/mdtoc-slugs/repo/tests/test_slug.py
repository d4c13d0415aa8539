from mdtoc import slugify


def test_slugify():
    assert slugify("Hello, World!") == "hello-world"
    assert slugify("  snake_case and-dash ") == "snake_case-and-dash"
    assert slugify("Ünïcode Title") == "ünïcode-title"
