def lis_length(nums):
    """Return the length of the longest strictly increasing subsequence of nums."""
    import bisect

    tails = []
    for x in nums:
        i = bisect.bisect_left(tails, x)
        if i == len(tails):
            tails.append(x)
        else:
            tails[i] = x
    return len(tails)
