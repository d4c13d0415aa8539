import re

from typeset import justify


def test_extra_spaces_go_left():
    lines = justify("aa bb cc dd zzzzzzzzzzzzzz", 16)
    assert lines[0] == "aa   bb   cc  dd"


def test_last_line_left_aligned():
    lines = justify("the quick brown fox jumps over the lazy dog", 16)
    assert lines == [
        "the  quick brown",
        "fox  jumps  over",
        "the lazy dog    ",
    ]


def test_single_word_lines():
    assert justify("a extraordinary b c", 5) == ["a    ", "extraordinary", "b c  "]
    assert justify("alone", 8) == ["alone   "]


def test_every_line_full_width():
    text = "Lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor"
    for width in (12, 17, 20, 31):
        lines = justify(text, width)
        assert all(len(line) == width for line in lines)
        assert " ".join(" ".join(lines).split()) == text
        for line in lines[:-1]:
            if len(line.split()) > 1:
                assert line[0] != " " and line[-1] != " "


def test_gap_sizes_non_increasing():
    lines = justify("a b c d e f g h i j k l m n o p", 12)
    for line in lines[:-1]:
        gaps = [len(g) for g in re.findall(r" +", line)]
        assert gaps == sorted(gaps, reverse=True)
        assert max(gaps) - min(gaps) <= 1


def test_empty():
    assert justify("", 8) == []
    assert justify("   ", 8) == []
