def parse_duration(s):
    """Convert a duration such as '1h30m' (units d, h, m, s) into seconds."""
    raise NotImplementedError
