def group_anagrams(words):
    """Group the words that are anagrams of each other; groups and their words sorted."""
    raise NotImplementedError
