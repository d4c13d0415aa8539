def hello(name):
    """Greet name."""
    name = name.strip()
    return f"Hello, {name or 'world'}!"
