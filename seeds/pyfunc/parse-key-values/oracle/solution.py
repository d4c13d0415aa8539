def parse_kv(s):
    """Parse 'key=value' pairs separated by ';' into a dict of strings."""
    out = {}
    for segment in s.split(";"):
        if "=" in segment:
            key, value = segment.split("=", 1)
            out[key.strip()] = value.strip()
    return out
