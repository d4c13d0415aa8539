def running_sum(nums):
    """Return the list of prefix sums of nums."""
    out = []
    total = 0
    for x in nums:
        total += x
        out.append(total)
    return out
