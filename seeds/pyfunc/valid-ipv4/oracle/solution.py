def is_ipv4(s):
    """Return True if s is a dotted-decimal IPv4 address (four parts 0-255, no leading zeros)."""
    parts = s.split(".")
    if len(parts) != 4:
        return False
    for part in parts:
        if not part or any(ch not in "0123456789" for ch in part):
            return False
        if len(part) > 1 and part[0] == "0":
            return False
        if int(part) > 255:
            return False
    return True
