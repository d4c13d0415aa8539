def group_anagrams(words):
    """Group the words that are anagrams of each other; groups and their words sorted."""
    groups = {}
    for word in words:
        groups.setdefault("".join(sorted(word)), []).append(word)
    return sorted(sorted(g) for g in groups.values())
