def hello(name):
    """Greet name."""
    raise NotImplementedError
