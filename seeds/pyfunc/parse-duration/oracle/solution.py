def parse_duration(s):
    """Convert a duration such as '1h30m' (units d, h, m, s) into seconds."""
    seconds = {"d": 86400, "h": 3600, "m": 60, "s": 1}
    total = 0
    number = ""
    for ch in s:
        if ch.isdigit():
            number += ch
        else:
            total += int(number) * seconds[ch]
            number = ""
    return total
