import gym


def test_all_is_sorted_and_unique():
    assert gym.__all__ == sorted(set(gym.__all__))


def test_every_exported_name_exists():
    missing = [name for name in gym.__all__ if not hasattr(gym, name)]
    assert missing == []


def test_no_private_names_exported():
    assert [n for n in gym.__all__ if n.startswith("_") and n != "__version__"] == []
