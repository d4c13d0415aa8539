"""A shell's state read as data and replayed as data: real bash on both ends, no container."""

from __future__ import annotations

import random
import subprocess

import pytest

from gym._envs._shell_state import CAPTURE, parse, quote, replay_lines, unquote
from gym.errors import UnreadableState


def bash(script: str, *args: bytes, cwd: str = "/") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        ["bash", "-c", script, "_", *args], capture_output=True, cwd=cwd, timeout=30, check=False
    )


def captured(setup: str, tmp_path) -> subprocess.CompletedProcess[bytes]:
    return bash(f"{setup}\n{CAPTURE}", cwd=str(tmp_path))


def test_every_byte_string_bash_quotes_is_read_back_and_quoted_again():
    rng = random.Random(7)
    values = [b"", b"plain", b"a b", b"it's", b'd"q', b"$x `y`", b"\\", b"\n", b"\xe9", b"\x7f"]
    values += ["é ok ∑".encode(), b"~home", b"#hash", b"-dash", b"\x1b[31m"]
    values += [
        bytes(rng.randrange(1, 256) for _ in range(rng.randrange(1, 40))) for _ in range(200)
    ]
    for value in values:
        printed = bash('printf "%q\\n" "$1"', value).stdout.decode().removesuffix("\n")
        assert unquote(printed) == value, printed
        again = bash(f'v={quote(value)}; printf "%s" "$v"').stdout
        assert again == value, quote(value)
        assert quote(value).isascii()


@pytest.mark.parametrize("word", ["a;b", "$(id)", "`id`", "a b", "x'y", "$'\\q'", "$'a'b'", "a\\"])
def test_a_word_bash_would_not_write_is_refused(word):
    with pytest.raises(ValueError):
        unquote(word)


def test_the_state_replays_values_and_attributes_without_evaluating_them(tmp_path):
    setup = (
        "export M='a[$(echo ran > ran.txt; echo 0)]'; declare -i M; declare -rix K=7; "
        "declare -lx L=MiXeD; export NL=$'two\\nlines' HI=$'\\xe9'"
    )
    state = parse(captured(setup, tmp_path).stdout.decode())
    assert state.cwd == str(tmp_path).encode()
    got = {v.name: v for v in state.variables}
    assert got["M"].value == b"a[$(echo ran > ran.txt; echo 0)]" and "i" in got["M"].attributes
    assert got["K"].attributes == "irx" and got["L"].value == b"mixed"
    assert got["NL"].value == b"two\nlines" and got["HI"].value == b"\xe9"
    probe = 'declare -p M K L NL HI; declare -i N=K+1; echo "$N"'
    replayed = "builtin unset -v $(builtin compgen -e)\n" + "\n".join(replay_lines(state))
    want = bash(f"{setup}\n{probe}", cwd=str(tmp_path)).stdout
    assert bash(f"{replayed}\n{probe}", cwd=str(tmp_path)).stdout == want
    assert not (tmp_path / "ran.txt").exists()  # neither the capture nor the replay ran it


@pytest.mark.parametrize(
    "setup",
    [
        "trap 'echo \"x; touch injected\"' DEBUG; set -T",  # the trap prints a command
        'builtin() { echo "x; touch injected"; }',  # so does a function named builtin
        "enable -n printf",  # a builtin the capture needs, disabled
    ],
    ids=["debug_trap", "builtin_function", "disabled_printf"],
)
def test_a_shell_printing_something_else_is_refused_and_nothing_it_printed_runs(setup, tmp_path):
    done = captured(setup, tmp_path)
    with pytest.raises(UnreadableState):
        if done.returncode != 0:
            raise UnreadableState("the shell failed")  # as `_capture` does
        parse(done.stdout.decode())
    assert not (tmp_path / "injected").exists()


@pytest.mark.parametrize(
    "setup",
    [
        "set -u; declare -ax EMPTY=()",  # under nounset, an empty array
        "declare -nx R='b[$(touch evaluated)0]'",  # a reference whose subscript would run
        "declare -Ax MAP=([k]=v)",
    ],
    ids=["empty_array", "name_reference", "associative_array"],
)
def test_an_exported_array_or_reference_is_refused_by_name_and_never_read(setup, tmp_path):
    done = captured(f"{setup}; export KEPT=1", tmp_path)
    assert done.returncode == 0, done.stderr
    with pytest.raises(UnreadableState, match="array or name reference"):
        parse(done.stdout.decode())
    assert not (tmp_path / "evaluated").exists()


def test_the_shell_s_own_settings_and_variables_are_left_as_they_were(tmp_path):
    setup = "set -eu; declare -x A=1"
    probe = "echo $- ${__n-unset} ${__e-unset}"
    want = bash(f"{setup}; {probe}", cwd=str(tmp_path)).stdout
    got = bash(f"{setup}; {CAPTURE} >/dev/null; {probe}", cwd=str(tmp_path)).stdout
    assert got == want


SPECIAL = ("RANDOM", "SRANDOM", "OPTIND", "HISTCMD", "SECONDS", "LINENO", "UID", "SHELLOPTS")


def test_bash_s_own_variables_get_the_value_as_text_or_nothing_never_run_it(tmp_path):
    """``unset RANDOM; export RANDOM='a[$(cmd)]'`` ran cmd in every branch: a fresh shell's
    RANDOM is an integer again, so the replay's assignment evaluated it (helper J)."""
    value = b"a[$(touch ran)0]"
    state = parse(
        "/\n" + "".join(f"= {name} x {quote(value)}\n" for name in SPECIAL)
    )  # what a parent's shell reports for them
    replayed = "\n".join(replay_lines(state))
    done = bash(f'{replayed}\nprintf \'%s|\' "$RANDOM" "$OPTIND"', cwd=str(tmp_path))
    assert not (tmp_path / "ran").exists(), done.stderr
    assert done.stdout.decode() == f"{value.decode()}|{value.decode()}|"


def test_history_settings_replay_without_truncating_a_file(tmp_path):
    """HISTFILE was given before HISTFILESIZE=0, which truncated the file it named (J)."""
    kept = tmp_path / "solution.py"
    kept.write_text("def f():\n    return 1\n")
    lines = f"= HISTFILE x {quote(str(kept).encode())}\n= HISTFILESIZE x 0\n"
    bash("\n".join(replay_lines(parse("/\n" + lines))))
    assert kept.read_text() == "def f():\n    return 1\n"


def test_characters_bash_prints_as_they_are_are_read_as_they_are():
    """A no-break space in a value refused the fork (isprintable is not bash's rule; J)."""
    for text in ["bonjour\u00a0!", "soft\u00adhyphen", "zero\u200bwidth", "wide\u3000space"]:
        printed = bash('printf "%q\\n" "$1"', text.encode()).stdout.decode().removesuffix("\n")
        assert unquote(printed) == text.encode(), printed


@pytest.mark.parametrize("word", ["$'\\U80000000'", "$'\\U110000'", "$'\\x'"])
def test_an_escape_of_no_character_is_the_agent_s_odd_state_not_a_crash(word):
    """``$'\\U80000000'`` raised OverflowError, which made the parent infra_error (J)."""
    with pytest.raises(UnreadableState):
        parse(f"/\n= V x {word}\n")


def test_a_value_near_the_cap_is_read_in_linear_time():
    """Each escape copied the rest of the value: 512 KiB took 26 s, 8 MiB minutes (J)."""
    import time

    word = "$'" + "\\351" * (1 << 20) + "'"  # 1 MiB of bytes, 4 MiB of text
    started = time.monotonic()
    assert unquote(word) == b"\xe9" * (1 << 20)
    assert time.monotonic() - started < 20  # about 0.5 s; quadratic, minutes


@pytest.mark.parametrize(
    "setup",
    [
        "export IFS=, __n=hello __e=two __a=three",  # the old capture's own names
        "shopt -s nocasematch; export groups=x",  # made every name match the arrays
        "declare -irx __n=5; export IFS=$'\\n'",
    ],
    ids=["helper_names", "nocasematch", "readonly_helper"],
)
def test_what_the_capture_uses_is_carried_as_the_shell_had_it(setup, tmp_path):
    """An exported IFS or __n came back as the capture's own values (helper K)."""
    probe = "declare -p IFS groups __n __e __a 2>/dev/null"
    state = parse(captured(setup, tmp_path).stdout.decode())
    replayed = "builtin unset -v $(builtin compgen -e)\n" + "\n".join(replay_lines(state))
    want = bash(f"{setup}\n{probe}", cwd=str(tmp_path)).stdout
    assert bash(f"{replayed}\n{probe}", cwd=str(tmp_path)).stdout == want


def test_a_variable_printed_twice_is_refused():
    """Unset before each assignment, BASH_XTRACEFD twice closed the shell's output (K)."""
    with pytest.raises(UnreadableState, match="printed twice"):
        parse("/\n= BASH_XTRACEFD x 1\n= BASH_XTRACEFD x 1\n")


def test_a_shell_whose_compgen_fails_is_refused(tmp_path):
    done = captured("enable -n compgen; export KEPT=1", tmp_path)
    assert done.returncode != 0  # `_capture` refuses the fork on it


def test_attributes_are_read_in_linear_time():
    """``[irlutx]*x[irlutx]*`` backtracked: 64,000 characters took 11 s (helper K)."""
    import time

    started = time.monotonic()
    with pytest.raises(UnreadableState):
        parse("/\n= V " + "x" * (1 << 20) + "q v\n")
    assert time.monotonic() - started < 20  # milliseconds; quadratic, days at the cap


def test_read_only_variables_bash_keeps_stay_exported():
    state = parse("/\n= UID irx 1000\n")
    done = bash(
        "builtin unset -v $(builtin compgen -e)\n"
        + "\n".join(replay_lines(state))
        + "\ndeclare -p UID"
    )
    assert b"declare -irx UID=" in done.stdout


def test_a_variable_printed_twice_is_found_in_linear_time():
    """Counting each name again took 16 s for 40,000 lines, hours at the cap (helper L)."""
    import time

    lines = "".join(f"= V{i} x ''\n" for i in range(200_000)) + "= V0 x ''\n"
    started = time.monotonic()
    with pytest.raises(UnreadableState, match="printed twice"):
        parse("/\n" + lines)
    assert time.monotonic() - started < 20  # about a second; counting, an hour


@pytest.mark.parametrize(
    ("setup", "where"),
    [
        ("unset -v $(compgen -e)", "."),  # nothing exported: compgen -e fails, refused before
        ("unset PWD", "."),  # the directory read from $PWD alone: none
        ("mkdir a && cd a && mv ../a ../b", "b"),  # $PWD names a folder that moved
    ],
    ids=["nothing_exported", "pwd_unset", "folder_renamed"],
)
def test_the_directory_is_the_one_the_shell_is_in(setup, where, tmp_path):
    done = captured(setup, tmp_path)
    assert done.returncode == 0, done.stderr
    assert parse(done.stdout.decode()).cwd == str((tmp_path / where).resolve()).encode()


def test_a_directory_that_no_longer_exists_is_none(tmp_path):
    state = parse(captured("mkdir gone && cd gone && rmdir ../gone", tmp_path).stdout.decode())
    assert state.cwd == b""  # the branch starts where a fresh shell does
