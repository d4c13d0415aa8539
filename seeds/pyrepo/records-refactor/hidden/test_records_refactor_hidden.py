import pytest

from userdb import Group, RecordError, User, parse_records, read_groups, read_users


def test_parse_records_basic():
    text = "# header\n\na|1\n  # indented comment\nb|2\n"
    assert parse_records(text, ("key", "n"), sep="|", convert={"n": int}) == [
        {"key": "a", "n": 1},
        {"key": "b", "n": 2},
    ]
    assert parse_records("x:y\n", ["a", "b"]) == [{"a": "x", "b": "y"}]
    assert parse_records("", ["a"]) == []


def test_record_error_field_count():
    with pytest.raises(RecordError) as info:
        parse_records("a:b\n\na:b:c\n", ["x", "y"])
    assert info.value.line == 3
    assert str(info.value).startswith("line 3: ")
    assert isinstance(info.value, ValueError)


def test_record_error_conversion():
    with pytest.raises(RecordError) as info:
        parse_records("a:1\nb:two\n", ["name", "n"], convert={"n": int})
    assert info.value.line == 2
    assert str(info.value).startswith("line 2: ")


def test_groups_skip_comments():
    groups = read_groups("# groups\nwheel:10:root\n  # end\n")
    assert [(g.name, g.gid, g.members) for g in groups] == [("wheel", 10, ["root"])]


def test_bad_numbers_have_line_numbers():
    with pytest.raises(RecordError) as info:
        read_users("root:0:0:/root:/bin/sh\nann:x:1000:/home/ann:/bin/sh\n")
    assert info.value.line == 2
    with pytest.raises(RecordError) as info:
        read_groups("a:1:\n\nb:oops:\n")
    assert info.value.line == 3
    with pytest.raises(RecordError):
        read_groups("wheel:10\n")


def test_results_unchanged():
    users = read_users("ann:1000:100:/home/ann:/bin/zsh\n")
    assert [(u.name, u.uid, u.gid, u.home, u.shell) for u in users] == [
        ("ann", 1000, 100, "/home/ann", "/bin/zsh")
    ]
    assert type(users[0].uid) is int and type(users) is list
    groups = read_groups("users:100:\nstaff:50:ann,,bob\n")
    assert [(g.name, g.gid, g.members) for g in groups] == [
        ("users", 100, []),
        ("staff", 50, ["ann", "bob"]),
    ]
    assert type(groups[1].members) is list
