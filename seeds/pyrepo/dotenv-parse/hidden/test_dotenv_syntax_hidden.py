import pytest

from envfile import load, parse


def test_export_prefix():
    assert parse("export A=1\n  export   B = two\n") == {"A": "1", "B": "two"}


@pytest.mark.parametrize(
    "text, line",
    [("A=1\n1BAD=2\n", 2), ("\n\nNOEQUALS\n", 3), ("A-B=1", 1)],
    ids=["digit-key", "no-equals", "dash-key"],
)
def test_bad_lines(text, line):
    with pytest.raises(ValueError, match=f"line {line}"):
        parse(text)


def test_inline_comments_unquoted():
    assert parse("A=1 # one\nB=a#b\nC=x\t# tab\nD= # only comment\n") == {
        "A": "1", "B": "a#b", "C": "x", "D": "",
    }


def test_single_quotes_literal():
    text = "A='${HOME} # not a comment \\n'  # real comment\nB=''\n"
    assert parse(text, {"HOME": "/root"}) == {"A": "${HOME} # not a comment \\n", "B": ""}


def test_double_quotes_escapes():
    text = 'A="line1\\nline2\\ttab \\"q\\" back\\\\slash # kept"\nB="x" # c\n'
    assert parse(text) == {"A": 'line1\nline2\ttab "q" back\\slash # kept', "B": "x"}


@pytest.mark.parametrize(
    "text", ['A="open\n', "A='open\n", 'A="x" trailing\n'], ids=["double", "single", "trailing"]
)
def test_quote_errors(text):
    with pytest.raises(ValueError, match="line 1"):
        parse(text)


def test_expansion():
    text = "USER_DIR=/home/${USER}\nDATA=${USER_DIR}/data\nQ=\"${DATA} ok\"\nNONE=${NOPE}x\n"
    assert parse(text, {"USER": "ann"}) == {
        "USER_DIR": "/home/ann",
        "DATA": "/home/ann/data",
        "Q": "/home/ann/data ok",
        "NONE": "x",
    }


def test_file_values_win_over_environ():
    assert parse("USER=file\nX=${USER}\n", {"USER": "env"})["X"] == "file"
    assert parse("X=${USER}\nUSER=file\n", {"USER": "env"})["X"] == "env"


def test_load_passes_environ(tmp_path):
    path = tmp_path / ".env"
    path.write_text("export BIN=${HOME}/bin\n", encoding="utf-8")
    env = {"HOME": "/home/bo"}
    assert load(path, env) == ["BIN"]
    assert env["BIN"] == "/home/bo/bin"
