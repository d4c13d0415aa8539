def lis_length(nums):
    """Return the length of the longest strictly increasing subsequence of nums."""
    raise NotImplementedError
