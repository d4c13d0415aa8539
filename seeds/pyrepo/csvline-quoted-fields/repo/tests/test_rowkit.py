import pytest

from rowkit import read_records, split_line, to_line, write_records


def test_split_plain():
    assert split_line("a,b,,c") == ["a", "b", "", "c"]
    assert split_line("x;y", sep=";") == ["x", "y"]


def test_to_line_quotes():
    assert to_line(["a", "b,c", 'say "hi"']) == 'a,"b,c","say ""hi"""'


def test_records_roundtrip_plain():
    text = write_records([{"name": "ann", "age": 31}, {"name": "bo"}], ["name", "age"])
    assert text == "name,age\nann,31\nbo,\n"
    assert read_records(text) == [{"name": "ann", "age": "31"}, {"name": "bo", "age": ""}]


def test_records_field_count():
    with pytest.raises(ValueError, match="line 3"):
        read_records("a,b\n1,2\n3\n")
