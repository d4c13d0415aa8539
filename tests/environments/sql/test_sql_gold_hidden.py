"""The SQL grader: nothing of the gold query's run is readable by the agent's answer query.

Read tasks run the gold query and then the agent's answer query on the same server, one
after the other. The server's own bookkeeping (the query text of every session, the
counters of every table) must not hand the gold's work to the answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

import gym
import gym.sandbox
from environments.sql import grading

MARK = "gold_mark_7f3a"

PROBE = f"""
import json, subprocess, sys, time
sys.path.insert(0, "/grade")
import runner

gold = subprocess.Popen([sys.executable, "-I", "-c", '''
import json, sys
sys.path.insert(0, "/grade")
import runner
print(json.dumps(runner.answer(
    "SELECT current_user::text, session_user::text, current_setting('search_path'), "
    "current_setting('statement_timeout'), count(*), pg_sleep(4)::text, '{MARK}' "
    "FROM shop.customers", 7, gold=True)))
'''], stdout=subprocess.PIPE)
time.sleep(1.5)  # the gold's session is now inside pg_sleep
AGENT_VIEWS = '''SELECT 'activity', pid::text, coalesce(query, '') FROM pg_stat_activity
UNION ALL SELECT 'get_activity', pid::text, coalesce(query, '') FROM pg_stat_get_activity(NULL)
UNION ALL SELECT 'backend_activity', b::text, coalesce(pg_stat_get_backend_activity(b), '')
          FROM pg_stat_get_backend_idset() b
UNION ALL SELECT 'prepared', name, statement FROM pg_prepared_statements
UNION ALL SELECT 'cursors', name, statement FROM pg_cursors
UNION ALL SELECT 'role', r, pg_has_role('agent', r, 'USAGE')::text
          FROM unnest(ARRAY['pg_read_all_stats', 'pg_monitor', 'postgres']) r'''
during = runner.answer(AGENT_VIEWS, 30)
admin = runner.connect("shop", search_path="pg_catalog")
seen_by_superuser = runner.query(
    admin, "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%{MARK}%'"
    " AND pid <> pg_backend_pid()")[0][0]
preload = runner.query(admin, "SELECT current_setting('shared_preload_libraries')")[0][0]
admin.close()
gold_answer = json.loads(gold.communicate(timeout=60)[0])
runner.forget_gold()
after = runner.answer('''SELECT 'counters', coalesce(sum(seq_scan + coalesce(idx_scan, 0)), 0)::text
FROM pg_stat_user_tables
UNION ALL SELECT 'tuples', tup_returned::text FROM pg_stat_database
WHERE datname = current_database()
UNION ALL SELECT 'sessions', count(*)::text FROM pg_stat_activity
WHERE pid <> pg_backend_pid() AND datname IS NOT NULL''', 30)
print(json.dumps({{"during": during, "seen_by_superuser": seen_by_superuser,
                  "preload": preload, "gold": gold_answer, "after": after}}))
"""


@pytest.fixture(scope="module")
def probe(engine: None) -> Iterator[dict[str, Any]]:
    """The probe's findings, from a fresh grading container with the current runner."""
    image = gym.images.ensure_image("postgres")
    provider = gym.sandbox.default_sandboxes()
    sandbox = provider.grader(grading.grading_config(image))
    try:
        files = {"runner.py": grading.RUNNER_PATH.read_bytes(), "probe.py": PROBE.encode()}
        sandbox.put_files("/grade", files, timeout=60)
        result = sandbox.exec(
            ["/usr/bin/python3", "-I", "/grade/probe.py"], user=grading.PG_USER, timeout=120
        )
        assert result.ok, result.stderr[-2000:]
        yield json.loads(result.stdout.strip().splitlines()[-1])
    finally:
        provider.release(sandbox)


@pytest.mark.docker
def test_the_gold_runs_as_the_agent_role_with_its_settings(probe: dict[str, Any]) -> None:
    # The gold's privileges and settings are the agent's login's: its role settings
    # (search_path), with the grader's own statement timeout over the role's 30 s.
    gold = probe["gold"]
    assert gold["error"] is None, gold
    user, session, path, timeout, count, _, mark = gold["rows"][0]
    assert (user, session, path, timeout, mark) == ("agent", "agent", "shop, public", "7s", MARK)
    assert int(count) > 0


@pytest.mark.docker
def test_the_answer_query_cannot_read_the_gold_while_it_runs(probe: dict[str, Any]) -> None:
    # The superuser sees the gold's session running while the agent role looks: the
    # agent role sees the session listed but never its text, in any view.
    assert probe["seen_by_superuser"] == 1
    during = probe["during"]
    assert during["error"] is None, during
    rows = during["rows"]
    assert rows and not [r for r in rows if MARK in json.dumps(r)]
    hidden = [r for r in rows if r[0] == "activity" and r[2] == "<insufficient privilege>"]
    assert hidden, rows  # the gold's session (and others) listed, their text withheld
    assert sorted(r[1] for r in rows if r[0] == "role" and r[2] == "true") == []
    assert [r for r in rows if r[0] in ("prepared", "cursors")] == []
    assert "pg_stat_statements" not in probe["preload"]


@pytest.mark.docker
def test_nothing_of_the_gold_is_left_for_the_answer_query(probe: dict[str, Any]) -> None:
    # Once the gold is done: its session is gone and shop's counters (which tables it
    # read, how many rows) are zeroed before the answer query runs. The database's row
    # counter then holds only the catalog reads of the grader's own sessions since,
    # fewer than the customers the gold alone read.
    after = probe["after"]
    assert after["error"] is None, after
    found = dict(map(tuple, after["rows"]))
    assert (found["counters"], found["sessions"]) == ("0", "0")
    assert int(found["tuples"]) < int(probe["gold"]["rows"][0][4])


@pytest.fixture(scope="module")
def env(engine: None) -> Iterator[gym.ContainerEnv]:
    made = gym.make("boxgym/SQL-v0")
    yield made
    made.close()


BOOKKEEPING = {
    "activity_as_xml": "SELECT coalesce(query_to_xml((SELECT query FROM pg_stat_activity "
    "WHERE query ILIKE '%select%' AND pid <> pg_backend_pid() LIMIT 1), true, false, '')"
    "::text, '<none>'), 'x'",
    "activity_polled": """WITH RECURSIVE p(i, q) AS (
  SELECT 0, NULL::text
  UNION ALL
  SELECT i + 1, (SELECT string_agg(a.query, ' | ') FROM pg_stat_get_activity(NULL) a
                 WHERE a.pid <> pg_backend_pid() AND a.query ILIKE '%select%')
  FROM p, LATERAL (SELECT pg_stat_clear_snapshot(), pg_sleep(0.01)) z
  WHERE i < 100 AND q IS NULL)
SELECT coalesce(max(q), '<none>'), max(i)::text FROM p""",
}
"""Answers that look for the gold's text in the server's bookkeeping (two columns)."""


@pytest.mark.docker
@pytest.mark.parametrize("how", sorted(BOOKKEEPING))
def test_an_answer_reading_the_servers_bookkeeping_fails(env: Any, how: str) -> None:
    task = "customers-per-country"
    env.reset(options={"task": task})
    env.step({"name": "submit", "arguments": {"answer_query": "SELECT 1"}})
    export = env.unwrapped.last_export.model_copy(update={"answer_query": BOOKKEEPING[how]})
    verdict = env.unwrapped.regrade(task, export.model_dump(mode="json"), [])
    assert verdict.outcome == "fail"
    explanation = verdict.components["answer"].explanation
    assert "1 unexpected rows" in explanation and "<none>" in explanation, explanation
