def is_ipv4(s):
    """Return True if s is a dotted-decimal IPv4 address (four parts 0-255, no leading zeros)."""
    raise NotImplementedError
