def parse_kv(s):
    """Parse 'key=value' pairs separated by ';' into a dict of strings."""
    raise NotImplementedError
