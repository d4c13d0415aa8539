"""No SQL the grading runs as the server's superuser resolves a name the agent made.

In a task with a database of its own, the agent role may create objects in schema
``public``. A superuser session with the default search path (``"$user", public``) then
picks the agent's operator or function wherever pg_catalog has no exact match of the
argument types (``oid >= 16384`` is ``>=(oid, integer)``: pg_catalog only has it through
a cast), and runs it as the superuser (the CVE-2018-1058 pattern). The export's psql and
pg_dump resolve names in pg_catalog only (`grading._EXPORT`); these tests plant such
objects, let the export run, and read back, as the superuser, who ran them.
"""

from __future__ import annotations

import os
import time

import pytest

import gym
from environments.sql import SQLEnv, runner
from environments.sql.grading import PG_BIN, PG_USER, SOCKET, export_state

RECORDERS = r"""
CREATE TABLE public.rt_seen (tag text, who text, su text);
GRANT ALL ON public.rt_seen TO PUBLIC;
CREATE FUNCTION public.rt_note(tag text) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
  INSERT INTO public.rt_seen
  VALUES (tag, CURRENT_USER::pg_catalog.text, pg_catalog.current_setting('is_superuser'));
END $f$;
GRANT EXECUTE ON FUNCTION public.rt_note(text) TO PUBLIC;

CREATE FUNCTION public.rt_ge(oid, integer) RETURNS boolean LANGUAGE plpgsql AS $f$
BEGIN PERFORM public.rt_note('>=(oid,integer)');
  RETURN $1 OPERATOR(pg_catalog.>=) $2::pg_catalog.oid; END $f$;
CREATE OPERATOR public.>= (LEFTARG = oid, RIGHTARG = integer, FUNCTION = public.rt_ge);

CREATE FUNCTION public.rt_eq(oid, integer) RETURNS boolean LANGUAGE plpgsql AS $f$
BEGIN PERFORM public.rt_note('=(oid,integer)');
  RETURN $1 OPERATOR(pg_catalog.=) $2::pg_catalog.oid; END $f$;
CREATE OPERATOR public.= (LEFTARG = oid, RIGHTARG = integer, FUNCTION = public.rt_eq);

CREATE FUNCTION public.rt_ne(oid, regtype) RETURNS boolean LANGUAGE plpgsql AS $f$
BEGIN PERFORM public.rt_note('<>(oid,regtype)');
  RETURN $1 OPERATOR(pg_catalog.<>) $2::pg_catalog.oid; END $f$;
CREATE OPERATOR public.<> (LEFTARG = oid, RIGHTARG = regtype, FUNCTION = public.rt_ne);

CREATE FUNCTION public.rt_nre(name, name) RETURNS boolean LANGUAGE plpgsql AS $f$
BEGIN PERFORM public.rt_note('!~(name,name)');
  RETURN $1 OPERATOR(pg_catalog.!~) $2::pg_catalog.text; END $f$;
CREATE OPERATOR public.!~ (LEFTARG = name, RIGHTARG = name, FUNCTION = public.rt_nre);

CREATE FUNCTION public.lower(name) RETURNS text LANGUAGE plpgsql AS $f$
BEGIN PERFORM public.rt_note('lower(name)');
  RETURN pg_catalog.lower($1::pg_catalog.text); END $f$;

CREATE FUNCTION public.sum(integer) RETURNS bigint LANGUAGE plpgsql AS $f$
BEGIN PERFORM public.rt_note('sum(integer)'); RETURN $1; END $f$;

CREATE FUNCTION public.rt_count_step(bigint) RETURNS bigint LANGUAGE plpgsql AS $f$
BEGIN PERFORM public.rt_note('count(*)'); RETURN $1 OPERATOR(pg_catalog.+) 1; END $f$;
CREATE AGGREGATE public.count(*) (SFUNC = public.rt_count_step, STYPE = bigint,
                                  INITCOND = '0');
"""
"""Operators and functions in ``public`` that an unqualified name of a superuser's SQL
could resolve to: the first four are exact matches where pg_catalog has none (the
export's census and roles queries write each of them unqualified), the others shadow
built-ins by name. Each records who ran it (`rt_seen`)."""

CANARY = (
    "SELECT public.lower('x'::name), 'a'::name !~ 'b'::name, 1::oid >= 2, 1::oid = 2, "
    "1::oid <> 'pg_catalog.int4'::pg_catalog.regtype"
)
"""Run by the agent itself (default search path): shows that the recorders record."""

FORGER = r"""
CREATE FUNCTION public.rt_forge(oid, integer) RETURNS boolean LANGUAGE plpgsql AS $f$
BEGIN
  IF pg_catalog.current_setting('is_superuser') = 'on'
     AND pg_catalog.current_setting('rt.done', true) IS DISTINCT FROM '1' THEN
    PERFORM pg_catalog.set_config('rt.done', '1', false);
    EXECUTE $c$COPY (SELECT 1) TO PROGRAM 'for d in /proc/[0-9]*; do case "$(tr "\000" " " < $d/cmdline 2>/dev/null)" in *bin/psql*-At*) printf "%s\n%s\n" "dump {\"rt\":1}" "{\"roles\":[]}" > $d/fd/1;; esac; done'$c$;
  END IF;
  RETURN $1 OPERATOR(pg_catalog.>=) $2::pg_catalog.oid;
END $f$;
CREATE OPERATOR public.>= (LEFTARG = oid, RIGHTARG = integer, FUNCTION = public.rt_forge);
"""
"""The red-team helper's hook: as the superuser, it writes a forged census into the
export's output (COPY ... TO PROGRAM), which made an agent's fail an infra_error."""


def step(env: SQLEnv, name: str, **arguments: str) -> tuple[str, gym.Verdict | None]:
    obs, _, terminated, truncated, info = env.step({"name": name, "arguments": arguments})
    verdict = gym.Verdict.model_validate(info["verdict"]) if terminated or truncated else None
    return str(obs), verdict


def seen_as_superuser(env: SQLEnv) -> list[tuple[str, ...]]:
    """``rt_seen``, read by the superuser (qualified, pg_catalog only): (tag, who, su)."""
    assert env.sandbox is not None
    result = env.sandbox.exec(
        [
            f"{PG_BIN}/psql",
            "-X",
            "-q",
            "-At",
            "-F",
            "|",
            "-v",
            "ON_ERROR_STOP=1",
            "-h",
            SOCKET,
            "-d",
            "shop",
            "-c",
            "SELECT tag, who, su FROM public.rt_seen",
        ],
        user=PG_USER,
        timeout=30,
        env={"PGOPTIONS": "-c search_path=pg_catalog"},
    )
    assert result.ok, result.stderr
    return [tuple(line.split("|")) for line in result.stdout.splitlines() if line]


@pytest.mark.docker
def test_objects_planted_in_public_never_run_as_the_superuser(env: SQLEnv) -> None:
    env.reset(options={"task": "own-write"})
    obs, _ = step(env, "sql", query=RECORDERS)
    assert "ERROR" not in obs, obs
    obs, _ = step(env, "sql", query=CANARY)
    assert "ERROR" not in obs, obs
    tags = {"lower(name)", "!~(name,name)", ">=(oid,integer)", "=(oid,integer)", "<>(oid,regtype)"}
    assert {(tag, "agent", "off") for tag in tags} <= set(seen_as_superuser(env))

    assert env.sandbox is not None
    state = export_state(env.sandbox, "write", "")  # what submit runs, read back below
    assert not state.problem and state.dump_b64, state.problem
    seen = seen_as_superuser(env)
    assert [row for row in seen if row[1:] != ("agent", "off")] == []

    _, verdict = step(env, "submit")
    assert verdict is not None and verdict.outcome == "fail", verdict
    assert verdict.components["tables"].score == 0.0


@pytest.mark.docker
def test_a_hook_that_would_forge_the_export_leaves_the_agents_fail(env: SQLEnv) -> None:
    env.reset(options={"task": "own-write"})
    obs, _ = step(env, "sql", query=FORGER)
    assert "ERROR" not in obs, obs
    try:
        _, verdict = step(env, "submit")
    except gym.errors.InfraError as exc:  # how an infra_error reaches a direct caller
        pytest.fail(f"the agent's hook made the grading an infra_error: {exc}")
    assert verdict is not None and verdict.outcome == "fail", verdict
    assert verdict.reason == "failed: tables"


# -- the runner's answer: a child that does not answer in time is slow, not too large ----


def test_an_answer_that_does_not_come_back_in_time_is_too_slow(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The query itself can lift its statement_timeout; the runner's wait is the bound.
    monkeypatch.setattr(runner, "_run_answer", lambda *_: time.sleep(60))
    result = runner.answer("SELECT 1", -29.8)  # the runner waits timeout + 30 s: 0.2 s
    assert "did not finish within its time limit" in result["error"], result
    assert "memory" not in result["error"]
    assert (result["columns"], result["rows"]) == ([], [])


def test_an_answer_whose_child_dies_is_too_large(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "_run_answer", lambda *_: os._exit(3))
    result = runner.answer("SELECT 1", 5.0)
    assert "does not fit in" in result["error"] and "memory" in result["error"], result
