import random


def check_examples(candidate):
    assert candidate([-2, 1, -3, 4, -1, 2, 1, -5, 4]) == 6
    assert candidate([-3, -1, -2]) == -1


def check_edges(candidate):
    assert candidate([5]) == 5
    assert candidate([-5]) == -5
    assert candidate([1, 2, 3]) == 6
    assert candidate([2, -1, 2]) == 3
    assert candidate([-1, 0, -2]) == 0


def check_random(candidate):
    rng = random.Random(7)
    for _ in range(40):
        nums = [rng.randint(-20, 20) for _ in range(rng.randint(1, 15))]
        best = max(sum(nums[i:j]) for i in range(len(nums)) for j in range(i + 1, len(nums) + 1))
        assert candidate(nums) == best, nums
