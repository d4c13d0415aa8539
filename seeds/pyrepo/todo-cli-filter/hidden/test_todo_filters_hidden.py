import pytest

from todocli.cli import main


@pytest.fixture
def todo(tmp_path, capsys):
    path = tmp_path / "todo.json"
    for argv in (
        ["add", "Write report", "--tag", "work"],
        ["add", "Buy milk", "--tag", "shop", "--tag", "home"],
        ["add", "Fix sink", "--tag", "home"],
        ["add", "Read book"],
        ["done", "2"],
        ["done", "4"],
    ):
        assert main(["--file", str(path), *argv]) == 0
    capsys.readouterr()

    def run(*argv):
        code = main(["--file", str(path), "list", *argv])
        return code, capsys.readouterr().out

    return run


def test_done_only(todo):
    assert todo("--done") == (0, "[x] 2 Buy milk #home #shop\n[x] 4 Read book\n")


def test_pending_only(todo):
    assert todo("--pending") == (0, "[ ] 1 Write report #work\n[ ] 3 Fix sink #home\n")


def test_tag(todo):
    assert todo("--tag", "home") == (0, "[x] 2 Buy milk #home #shop\n[ ] 3 Fix sink #home\n")


def test_every_tag_required(todo):
    assert todo("--tag", "home", "--tag", "shop") == (0, "[x] 2 Buy milk #home #shop\n")


def test_filters_combine(todo):
    assert todo("--pending", "--tag", "home") == (0, "[ ] 3 Fix sink #home\n")
    assert todo("--done", "--tag", "work") == (0, "no items\n")


def test_no_filter_unchanged(todo):
    code, out = todo()
    assert code == 0 and len(out.splitlines()) == 4


def test_done_and_pending_rejected(todo):
    with pytest.raises(SystemExit) as info:
        todo("--done", "--pending")
    assert info.value.code == 2
