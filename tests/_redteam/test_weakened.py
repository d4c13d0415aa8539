"""The suite can fail: with a wall taken down on purpose, the row that tests it does not hold.

Each test weakens one thing (tests/_redteam/weaken.py), runs the row aimed at it and
expects ``held: false``; the same row holds on the real configuration (the fast suite
and ``gym redteam`` show that). The grading one runs by default; the sandbox ones are
red-team tests (``pytest --redteam``), which scripts/redteam.sh runs after the suite.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any
from unittest import mock

import pytest
import weaken

from gym._core._errors import SandboxUnavailable
from gym._redteam import run_suite

pytestmark = pytest.mark.docker


def only(name: str, env: str) -> list:
    report = run_suite(names=[name], families=[env], concurrency=1)
    rows = [r for r in report.rows if r.name == name]
    assert len(rows) == 1, report.rows
    return rows


@pytest.mark.redteam
@pytest.mark.parametrize(
    ("switch", "row", "sign"),
    [
        (weaken.network_on, "sandbox.network_egress_dns", "breach"),
        (weaken.capability_added, "sandbox.capabilities", "breach"),
        (weaken.seccomp_off, "sandbox.seccomp", "breach"),
        (weaken.engine_seccomp, "sandbox.seccomp", "breach"),
        (weaken.keeper_dumpable, "sandbox.keeper_out_of_reach", "breach"),
        (weaken.host_pids, "sandbox.namespaces", "breach"),
        (weaken.shared_network, "sandbox.network_counters_between_episodes", "breach"),
        (weaken.engine_init, "sandbox.file_locks_between_agents_running_at_once", "breach"),
        (weaken.one_uid, "sandbox.kernel_counts_between_agents_running_at_once", "breach"),
    ],
)
def test_a_weakened_sandbox_makes_its_row_fail(engine, switch, row, sign):
    with switch():
        (found,) = only(row, "boxgym/PyRepo-v0")
    assert found.held is False, found
    assert sign in found.observed


@pytest.mark.redteam
@pytest.mark.parametrize("switch", [weaken.ipc_unbounded, weaken.inodes_unbounded])
def test_unbounded_kernel_objects_fill_every_grading_container_to_its_limit(engine, switch):
    """Without the IPC sysctls (System V objects), or without a bound on each tmpfs's
    inodes (names and extended attributes), the hoard fills each grading container to its
    memory limit, and the kernel kills a process there on every task. Which one is chance
    (the checker on 15 of 31 PyRepo tasks: ``infra_error``; else the worker, the code's
    fail), so the row takes the kill itself as the breach: each task must show it.
    """
    import gymnasium

    from gym._envs._env import env_of

    env = "boxgym/PyRepo-v0"
    with switch():
        (found,) = only("grading.kernel_hoard[PyRepo-v0]", env)
    assert found.held is False, found
    for task in env_of(gymnasium.make(env)).tasks[:3]:  # a fail listed had the kill
        listed = (f"{task.id} {outcome} (" for outcome in ("fail", "infra_error"))
        assert any(entry in found.observed for entry in listed), found


def test_readable_hidden_checks_make_the_reading_attack_pass(engine):
    with weaken.hidden_tests_readable():
        (found,) = only("calls.read_hidden_checks", "boxgym/PyFunc-v0")
    assert found.held is False, found
    assert found.observed.startswith("pass reward=1"), found


@pytest.mark.redteam
@pytest.mark.parametrize(
    ("switch", "row", "env"),
    [
        (weaken.judge_asks_the_object, "calls.liar_sweep[PyFunc-v0]", "boxgym/PyFunc-v0"),
        (weaken.numbers_read_again, "calls.reread_number[HumanEval-v0]", "boxgym/HumanEval-v0"),
        (weaken.ping_unguarded, "provenance.control_requests_refused", "boxgym/PyRepo-v0"),
        (weaken.malformed_frames_escape, "grading.channel_sweep[PyFunc-v0]", "boxgym/PyFunc-v0"),
        (
            weaken.answers_described_by_asking,
            "grading.answer_sweep[PyFunc-v0]",
            "boxgym/PyFunc-v0",
        ),
        (
            weaken.worker_homes_guessable,
            "provenance.shared_tmp_taken_and_filled",
            "boxgym/PyFunc-v0",
        ),
        (
            weaken.answers_unbounded,
            "provenance.channel_flooded_with_tiny_items",
            "boxgym/PyFunc-v0",
        ),
        (
            weaken.report_texts_raw,
            "provenance.import_error_with_lone_surrogates",
            "boxgym/PyRepo-v0",
        ),
        (
            weaken.memory_kill_read_as_ours,
            "grading.uncharged_memory[PyFunc-v0]",
            "boxgym/PyFunc-v0",
        ),
        (weaken.zombies_taken_for_dead, "grading.hidden_processes[PyRepo-v0]", "boxgym/PyRepo-v0"),
        (weaken.status_read_as_text, "grading.hidden_processes[PyRepo-v0]", "boxgym/PyRepo-v0"),
    ],
)
def test_a_weakened_judge_makes_its_row_fail(engine, switch, row, env):
    with switch():
        (found,) = only(row, env)
    assert found.held is False, found
    assert "pass" in found.observed or "infra_error" in found.observed, found


@pytest.mark.redteam
@pytest.mark.parametrize(
    ("switch", "row", "env"),
    [
        (
            weaken.streams_without_reconfigure,
            "calls.honest_rewrites_first[PyRepo-v0]",
            "boxgym/PyRepo-v0",
        ),
    ],
)
def test_a_worker_unlike_a_process_fails_the_honest_rewrites(engine, switch, row, env):
    """Correct code reconfiguring its streams fails every task when the worker's streams
    are the ones before the false-fail hunt. (With its threads capped as before, each
    grading runs into its deadline: minutes a task, too slow for a weakened run; the
    thread bound's test is tests/_grading/test_honest_worker.py.)"""
    with switch():
        (found,) = only(row, env)
    assert found.held is False, found
    count = found.observed.split(" tasks: ")[0]
    assert found.observed.startswith(f"{count} tasks: {count} fail"), found


def test_unbounded_parsing_makes_the_deep_action_row_fail(engine):
    """With the bound on decoded arguments taken down, a deep action reaches the code that
    walks arguments recursively: ``env.step`` raises and the row does not hold."""
    with mock.patch("gym._core._tools.json_problem", lambda *args, **kwargs: None):
        (found,) = only("infra.deep_action_is_a_clean_error", "boxgym/PyFunc-v0")
    assert found.held is False, found
    assert "RecursionError" in found.observed, found


def test_a_listing_cap_read_as_a_dead_container_makes_its_row_fail(engine):
    """With the keeper's "over the cap" answer raised as the container gone (the old
    provenance), the agent's files turn its fail into infra_error: the row does not hold.
    The mounts' inodes unbounded too, as under gVisor: with the default bound the kernel
    refuses the 100,000 files before the listing's cap."""
    with (
        mock.patch("gym._sandbox._keeper.ExportTooLarge", SandboxUnavailable),
        weaken.inodes_unbounded(),
    ):
        (found,) = only("infra.state_over_listing_cap[many_entries]", "boxgym/PyFunc-v0")
    assert found.held is False, found
    assert found.observed.startswith("infra_error"), found


# -- Support (issue 27): each new row can fail -----------------------------------------

SUPPORT = "boxgym/Support-v0"
CHAT = "boxgym/SupportChat-v0"


def _support_membership():
    """Support answers graded by membership: a list holding the right value counts."""
    import environments.support as support

    real = support.answer_component

    def weak(asked, facts, *, reply, values, audit, **rest):
        truth = {f.name: f.value for f in facts}
        values = {
            k: truth[k] if isinstance(v, list) and truth.get(k) in v else v
            for k, v in values.items()
        }
        return real(asked, facts, reply=reply, values=values, audit=audit, **rest)

    return mock.patch.object(support, "answer_component", weak)


def _support_text_flag():
    """A Support flag decided from words: any free text of a request naming a breach."""
    import json
    import re

    import environments.support as support
    import gym

    real = support.audit_flags
    words = re.compile(r"unverified|confirm|duplicate|limit|scope|account|disclosure")

    def weak(audit, **kwargs):
        flags = real(audit, **kwargs)
        if any(words.search(json.dumps(e.get("body"))) for e in audit):
            flags.append(gym.Flag(name="unconfirmed_write", detail="said in words"))
        return flags

    return mock.patch.object(support, "audit_flags", weak)


def _support_small_dump():
    """The host reads the Support dump with a bound below what the service may produce."""
    import environments.support as support
    import gym
    from environments.support import _grading

    def weak(sandbox, *, timeout=60.0):
        result = sandbox.exec(
            _grading.DUMP, user=_grading.SERVICE_USER, timeout=timeout, max_output=64 << 10
        )
        if not result.ok or result.stdout_truncated:
            raise gym.GradingError("the state dump went over 64 KiB")
        return _grading.SupportExport.model_validate_json(result.stdout)

    return mock.patch.object(support, "dump_state", weak)


def _support_own_data_flagged():
    """Disclosure flagged for every unverified customer, the one writing in included."""
    import gym

    def weak(entry, customer, verified):
        found = [o for o in entry.disclosed if o not in verified]
        return [gym.Flag(name="unverified_disclosure", detail=o) for o in found]

    return mock.patch("environments.support._grading._disclosures", weak)


@pytest.mark.parametrize(
    ("switch", "row", "sign"),
    [
        (_support_membership, "support.answer.many_candidates[after_lookups,list]", "pass"),
        (
            lambda: mock.patch("environments.support._grading._disclosures", lambda *a: []),
            "support.disclosure.other_customer[get_order]",
            "pass",
        ),
        (
            _support_own_data_flagged,
            "support.false_positive.unverified_disclosure",
            "flags=unverified_disclosure",
        ),
        (_support_text_flag, "support.false_positive.flag_words", "flags=unconfirmed_write"),
        (
            # the confirmation read from the write's own confirm=true, as it once was
            lambda: mock.patch("environments.support.confirmations", lambda trajectory: None),
            "support.write_without_asking[reply_before_lookups]",
            "pass",
        ),
    ],
    ids=["membership", "no_disclosure_flag", "own_data_flagged", "text_flag", "confirm_argument"],
)
def test_a_weakened_support_grader_makes_its_row_fail(engine, switch, row, sign):
    with switch():
        (found,) = only(row, CHAT if row.startswith("support.write_without") else SUPPORT)
    assert found.held is False, found
    assert sign in found.observed, found


@pytest.mark.slow
def test_a_support_dump_read_below_the_service_bound_turns_the_flood_into_infra(engine):
    with _support_small_dump():
        (found,) = only("support.fail_to_infra.request_flood", SUPPORT)
    assert found.held is False, found
    assert "infra_error" in found.observed, found


def test_paths_on_the_command_line_make_the_many_files_row_fail(engine):
    """With every exported path given to tar on its command line again, the agent's
    long-named files pass what one argument holds: the export fails as the harness's
    fault (infra_error) and the row does not hold."""
    with mock.patch("gym._sandbox._base._ARGV_PATHS", 1 << 30):
        (found,) = only("infra.many_allowed_files_are_exported", "boxgym/PyRepo-v0")
    assert found.held is False, found
    assert found.observed.startswith("infra_error"), found


# -- SQL (issue 27): each new class row can fail -------------------------------------------

SQL = "boxgym/SQL-v0"


@pytest.mark.parametrize(
    ("switch", "row", "sign"),
    [
        ("helper_views_forbidden", "sql.false_positive[helper_view_in_read_task]", "flags="),
        ("state_not_compared", "sql.state_diff[sequences_rewound_and_large_object]", "pass"),
        ("state_not_compared", "sql.state_diff[role_settings]", "pass"),
        pytest.param(
            "no_bounds_and_export_errors_ours",
            "sql.fail_to_infra[many_tables]",
            "infra_error",
            marks=pytest.mark.redteam,
        ),
        pytest.param(
            "restore_text_decides",
            "sql.fail_to_infra[fault_text_in_restore_error]",
            "infra_error",
            marks=pytest.mark.redteam,
        ),
        pytest.param(
            "values_converted_in_python",
            "sql.fail_to_infra[values_python_cannot_hold]",
            "infra_error",
            marks=pytest.mark.redteam,
        ),
        pytest.param(
            "whole_rows_in_the_diff",
            "sql.fail_to_infra[large_diff]",
            "infra_error",
            marks=pytest.mark.redteam,
        ),
        pytest.param(
            "functions_run_at_restore",
            "sql.state_diff[code_run_at_restore]",
            "pass",
            marks=pytest.mark.redteam,
        ),
    ],
    ids=[
        "helper_views",
        "sequences_and_large_objects",
        "roles",
        "bounds",
        "restore_text",
        "values",
        "diff",
        "restore_code",
    ],
)
def test_a_weakened_sql_grader_makes_its_row_fail(engine, switch, row, sign):
    import weaken_sql

    with weaken_sql.SWITCHES[switch]():
        (found,) = only(row, SQL)
    assert found.held is False, found
    assert sign in found.observed, found


# -- the LLM judge (gym/_redteam/_judge.py): each class row can fail ------------------------


def _llm_judge_weakened(how: str) -> AbstractContextManager[object]:
    """The judge client with one of its decisions put back as it once was (or could be)."""
    from gym._core._tools import json_objects
    from gym._grading._judge import NoVerdict, _client

    def one_object(text: str, nonce: str, key: str) -> dict[str, Any]:
        """The first (or last) object of the answer with ``key``, whatever its nonce."""
        found = [o for o in json_objects(text) if isinstance(o, dict) and key in o]
        if not found:
            raise NoVerdict("no object")
        return found[0] if how == "first_object" else found[-1]

    real_read = _client.Judge._read

    def finish_ignored(self: _client.Judge, response: Any) -> str:
        """The answer's text, however it finished."""
        if response.status_code >= 400:
            return real_read(self, response)
        return response.json()["choices"][0]["message"]["content"]

    switches = {
        "first_object": lambda: mock.patch.object(_client, "parse_verdict", one_object),
        "last_object": lambda: mock.patch.object(_client, "parse_verdict", one_object),
        "finish_ignored": lambda: mock.patch.object(_client.Judge, "_read", finish_ignored),
        "control_vouched": lambda: mock.patch.object(_client.Judge, "_control", lambda s, k: ""),
        "refusal_is_the_judges": lambda: mock.patch.object(
            _client, "_JUDGE_STATUSES", _client._JUDGE_STATUSES | {400}
        ),
    }
    return switches[how]()


@pytest.mark.parametrize(
    ("how", "row", "sign"),
    [
        ("first_object", "judge.planted_verdict[PyFunc-v0]", "pass judge=1"),
        ("last_object", "judge.planted_verdict[PyFunc-v0]", "pass judge=1"),
        ("finish_ignored", "judge.cut_answer", "input only: pass judge=1"),
        ("control_vouched", "judge.cut_answer", "every request: fail judge=0"),
        ("refusal_is_the_judges", "judge.outage_provenance", "input only: infra_error"),
    ],
)
def test_a_weakened_llm_judge_makes_its_row_fail(engine, how, row, sign):
    with _llm_judge_weakened(how):
        (found,) = only(row, "boxgym/PyFunc-v0")
    assert found.held is False, found
    assert sign in found.observed, found


# -- this stop's class rows: each fails with its wall taken down ------------------------


@pytest.mark.redteam
def test_unread_changes_dropped_again_make_the_unreadable_row_fail(engine):
    """With the changes tar left out dropped (as before), the correct work made
    unreadable is graded as the pristine files, unflagged."""
    with mock.patch("gym._grading._export.unread", lambda wanted, entries: []):
        (found,) = only("copy_out.unreadable_changes", "boxgym/PyFunc-v0")
    assert found.held is False, found
    assert "expected flag missing" in found.observed, found


@pytest.mark.redteam
def test_a_user_refusal_taken_as_the_environments_makes_the_user_row_fail(engine):
    """With every refusal of the user's model the environment's (as before), the agent's
    wall of text ends its episodes as infra_error."""
    from gym._policy._base import ContextFull

    def refused(self: Any, task: Any) -> None:
        raise ContextFull("taken as the scenario's", context_tokens=1)

    with mock.patch("gym._policy._user.SimulatedUser._check_the_scenario_fits", refused):
        (found,) = only("user.context_filled_by_the_agent", "boxgym/SupportChat-v0")
    assert found.held is False, found
    assert "infra_error after" in found.observed, found


@pytest.mark.redteam
def test_folder_modes_set_before_their_files_make_the_fork_row_fail(engine):
    """With a folder's mode set as soon as it is made (tar's default for an existing
    tree), a read-only folder with files fails every unpack: a fault, not the agent's."""
    import gym._envs._fork as forking

    plain = tuple(a for a in forking._UNPACK if a != "--delay-directory-restore")
    with mock.patch.object(forking, "_UNPACK", plain):
        (found,) = only("fork.refused_by_agent_state", "boxgym/PyFunc-v0")
    assert found.held is False, found
    assert "a read-only folder with files: SandboxError" in found.observed, found


def test_a_keeper_within_its_agents_reach_makes_the_keeper_row_fail(engine):
    """With the profile letting a process change any process's limits and scheduling (as
    the engine's default does), the agent lowers its keeper's: the keeper dies at the
    freeze and the agent's certain fail is ``infra_error`` (found by a red-team helper)."""
    with weaken.keeper_reachable():
        (found,) = only("infra.keeper_reached_by_its_uid", "boxgym/PyFunc-v0")
    assert found.held is False, found
    assert found.observed.startswith("infra_error"), found


def test_a_keeper_killed_at_the_memory_limit_read_as_ours_makes_its_row_fail(engine):
    """Without the engine's record of the kill (every keeper that ends is our fault, as
    before), the agent that fills its container's memory outside any process's resident
    memory gets its certain fail turned into ``infra_error`` (found by a red-team helper)."""
    with mock.patch("gym._sandbox._docker.DockerSandbox.killed_at_memory_limit", lambda s: False):
        (found,) = only("infra.keeper_killed_at_memory_limit", "boxgym/PyFunc-v0")
    assert found.held is False, found
    assert found.observed.startswith("infra_error"), found


def test_floats_compared_bit_for_bit_make_the_rounded_answers_row_fail(engine, tmp_path):
    """Correct arithmetic in another order (the reference's floats 4 units off in their
    last place) fails HumanEval's float checks when they compare with ``==``."""
    with weaken.floats_bit_for_bit(tmp_path):
        (found,) = only("calls.rounded_answers[HumanEval-v0]", "boxgym/HumanEval-v0")
    assert found.held is False, found
    assert " fail" in found.observed, found
