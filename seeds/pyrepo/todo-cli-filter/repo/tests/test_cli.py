from todocli.cli import main


def run(capsys, path, *argv):
    code = main(["--file", str(path), *argv])
    return code, capsys.readouterr().out


def test_add_done_list(tmp_path, capsys):
    path = tmp_path / "todo.json"
    assert run(capsys, path, "add", "Write report", "--tag", "work") == (0, "added 1\n")
    assert run(capsys, path, "add", "Call mum")[0] == 0
    assert run(capsys, path, "done", "2") == (0, "done 2\n")
    code, out = run(capsys, path, "list")
    assert code == 0
    assert out == "[ ] 1 Write report #work\n[x] 2 Call mum\n"


def test_empty_list(tmp_path, capsys):
    assert run(capsys, tmp_path / "todo.json", "list") == (0, "no items\n")


def test_done_unknown(tmp_path, capsys):
    assert main(["--file", str(tmp_path / "t.json"), "done", "7"]) == 1
