def move_zeros(nums):
    """Return a new list with every zero of nums moved to the end, other items in order."""
    kept = [x for x in nums if x != 0]
    return kept + [0] * (len(nums) - len(kept))
