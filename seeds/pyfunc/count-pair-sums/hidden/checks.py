import random


def check_examples(candidate):
    assert candidate([1, 5, 7, -1, 5], 6) == 3
    assert candidate([3, 3, 3], 6) == 3


def check_edges(candidate):
    assert candidate([], 0) == 0
    assert candidate([1, 2], 4) == 0
    assert candidate([2], 4) == 0
    assert candidate([0, 0, 0, 0], 0) == 6


def check_random(candidate):
    rng = random.Random(11)
    for _ in range(30):
        nums = [rng.randint(-5, 5) for _ in range(rng.randint(0, 12))]
        target = rng.randint(-6, 6)
        want = sum(
            1 for i in range(len(nums)) for j in range(i + 1, len(nums))
            if nums[i] + nums[j] == target
        )
        assert candidate(nums, target) == want, (nums, target)
