"""Search across episodes: one bounded SQL query over tasks, outcomes, flags and messages."""

from __future__ import annotations

import pytest
import viewdata

from gym._store import Store
from gym._view._search import MAX_QUERY, MAX_TERMS, matching_ids, parse_query, search


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('search') / 'runs.db'}"
    writer = Store(url)
    viewdata.fill(writer)
    run = viewdata.add_run(writer, "w0words0000001", {}, planned=3, finished=False)
    viewdata.add_episode(writer, run, "is-prime", 0, words='100% sure: a_b "quoted" Café')
    viewdata.add_episode(writer, run, "is-prime", 1, words="100 percent sure: aXb")
    writer.close()
    reader = Store(url, read_only=True)
    yield reader
    reader.close()


def ids(result) -> set[str]:
    return {h.item.id for h in result.hits}


def test_words_match_messages_ignoring_case_and_all_must_match(store):
    assert ids(search(store, "SQUARE root")) == {"a0isxpri0", "a0isxpri1", "b0isxpri0", "b0isxpri1"}
    assert ids(search(store, "square root outcome:fail")) == {"b0isxpri1"}
    assert ids(search(store, "square nothing-like-it")) == set()


def test_task_outcome_and_flag_words(store):
    assert ids(search(store, "task:GCD run:b0")) == {"b0gcdxof0", "b0gcdxof1"}
    assert ids(search(store, "flag:tests_touched run:a0")) == {
        "a0countx0",
        "a0countx1",
        "a0caesar0",
    }
    assert ids(search(store, "flag:tests")) == set()  # a flag is named whole
    assert ids(search(store, "tests_touched gcd")) == {"b0gcdxof0", "b0gcdxof1"}


def test_like_wildcards_and_json_escapes_are_literal(store):
    assert ids(search(store, "100%")) == {"w0isxpri0"}  # not "100 percent"
    assert ids(search(store, "a_b")) == {"w0isxpri0"}  # not "aXb"
    assert ids(search(store, "Café")) == {"w0isxpri0"}  # stored as \\u00e9 in JSON
    assert ids(search(store, '"sure: a_b"')) == {"w0isxpri0"}


def test_results_are_bounded_and_say_so(store):
    result = search(store, "is-prime", limit=3)
    assert len(result.hits) == 3 and result.more
    everything = search(store, "is-prime")
    assert len(everything.hits) == 2 + 2 + 2 and not everything.more
    terms, note = parse_query("x " * 200)
    assert len(terms) == MAX_TERMS and note
    assert (
        parse_query("y" * (MAX_QUERY + 50))[1] == f"only the first {MAX_QUERY} characters were read"
    )


def test_the_context_shows_where_the_words_are(store):
    (hit,) = search(store, "Café").hits
    assert hit.context == '100% sure: a_b "quoted" Café'
    assert hit.run_id == "w0words0000001" and hit.item.flags == []


def test_only_runs_in_view_are_searched(store):
    assert ids(search(store, "gcd", runs=[viewdata.RUN_A])) == {"a0gcdxof0", "a0gcdxof1"}
    answer = matching_ids(store, "outcome:fail", viewdata.RUN_B)
    assert sorted(answer["ids"]) == ["b0gcdxof0", "b0gcdxof1", "b0isxpri1"]
    assert answer["more"] is False
