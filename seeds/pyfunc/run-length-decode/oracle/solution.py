def rle_decode(s):
    """Decode a run-length string such as '3a1b2c' (a count, then one non-digit character)."""
    out = []
    count = ""
    for ch in s:
        if ch.isdigit():
            count += ch
        else:
            out.append(ch * int(count))
            count = ""
    return "".join(out)
