def camel_to_snake(name):
    """Convert a camelCase or PascalCase identifier to snake_case."""
    raise NotImplementedError
