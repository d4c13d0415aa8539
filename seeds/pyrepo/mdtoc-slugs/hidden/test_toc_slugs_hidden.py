from mdtoc import Slugger, build_toc, parse_headings


def test_slugger_repeats():
    s = Slugger()
    assert [s.slug("Intro"), s.slug("Intro"), s.slug("intro!")] == ["intro", "intro-1", "intro-2"]


def test_slugger_avoids_taken():
    s = Slugger()
    assert [s.slug("A"), s.slug("A"), s.slug("A-1")] == ["a", "a-1", "a-1-1"]
    t = Slugger()
    assert [t.slug("A-1"), t.slug("A"), t.slug("A")] == ["a-1", "a", "a-2"]


def test_toc_unique_anchors():
    doc = "# API\n## Example\n### Notes\n## Example\n#### Notes\n### Notes\n"
    assert build_toc(doc) == [
        "- [API](#api)",
        "  - [Example](#example)",
        "    - [Notes](#notes)",
        "  - [Example](#example-1)",
        "    - [Notes](#notes-2)",
    ]


def test_fenced_code_skipped():
    doc = (
        "# Real\n"
        "```bash\n"
        "# not a heading\n"
        "~~~\n"
        "## still code\n"
        "```\n"
        "## After\n"
        "   ~~~~\n"
        "# code too\n"
        "~~~~\n"
        "### End\n"
    )
    assert parse_headings(doc) == [(1, "Real"), (2, "After"), (3, "End")]


def test_closing_hashes():
    assert parse_headings("## Usage ##\n# C# #\n### Issue #12") == [
        (2, "Usage"),
        (1, "C#"),
        (3, "Issue #12"),
    ]
    assert build_toc("## Usage ##") == ["- [Usage](#usage)"]
