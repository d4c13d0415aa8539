import random


def _slow(nums):
    best = [1] * len(nums)
    for i in range(len(nums)):
        for j in range(i):
            if nums[j] < nums[i]:
                best[i] = max(best[i], best[j] + 1)
    return max(best, default=0)


def check_examples(candidate):
    assert candidate([10, 9, 2, 5, 3, 7, 101, 18]) == 4
    assert candidate([2, 2, 2]) == 1


def check_edges(candidate):
    assert candidate([]) == 0
    assert candidate([5]) == 1
    assert candidate([1, 2, 3, 4]) == 4
    assert candidate([4, 3, 2, 1]) == 1
    assert candidate([0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15]) == 6


def check_random(candidate):
    rng = random.Random(5)
    for _ in range(30):
        nums = [rng.randint(-10, 10) for _ in range(rng.randint(0, 25))]
        want = _slow(nums)  # before the call: what the code does to nums comes back here
        assert candidate(nums) == want, nums
