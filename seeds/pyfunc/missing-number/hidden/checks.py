import random


def check_examples(candidate):
    assert candidate([3, 0, 1]) == 2
    assert candidate([0]) == 1


def check_edges(candidate):
    assert candidate([1]) == 0
    assert candidate([]) == 0
    assert candidate([0, 1, 2]) == 3
    nums = [x for x in range(101) if x != 57]
    random.Random(3).shuffle(nums)
    assert candidate(nums) == 57
