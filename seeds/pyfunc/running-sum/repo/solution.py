def running_sum(nums):
    """Return the list of prefix sums of nums."""
    raise NotImplementedError
