from mdtoc import build_toc, parse_headings

DOC = """# Project

Intro text.

## Install

### From source

#### Details

## Usage
"""


def test_parse_headings():
    assert parse_headings(DOC)[:2] == [(1, "Project"), (2, "Install")]
    assert parse_headings("#NoSpace\n####### seven") == []


def test_toc():
    assert build_toc(DOC) == [
        "- [Project](#project)",
        "  - [Install](#install)",
        "    - [From source](#from-source)",
        "  - [Usage](#usage)",
    ]


def test_toc_max_level():
    assert build_toc(DOC, max_level=1) == ["- [Project](#project)"]
    assert build_toc("no headings") == []
