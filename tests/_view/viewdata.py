"""Two stored runs of boxgym/PyFunc-v0 written through the real Store, for viewer tests.

Rows are written directly (no containers): the viewer only reads the store. The tasks
are real PyFunc tasks, so the final-state diff is taken against their real base files.
One episode holds hostile model output: HTML and script, terminal escapes, a lone
surrogate, control characters and a 10 MB line.
"""

from __future__ import annotations

import time
from typing import Any

from gym._sandbox import Change
from gym._store import EpisodeRow, RunRow, StepRow, Store, VerdictRow
from gym.grading import Export

ENV = "boxgym/PyFunc-v0"
TASKS = ["is-prime", "count-vowels", "gcd-of-list", "caesar-shift"]
HOSTILE = "<script>alert(1)</script><img src=x onerror=alert(2)> \x1b[31mred\x1b[0m \udcff end"
WORDS = "I will check small divisors up to the square root of n."
HUGE = 10 * 1024 * 1024
RUN_A, RUN_B = "a0baseline000001", "b0candidate00002"
SOLUTION = (
    "def is_prime(n):\n"
    '    """Return True if the integer n is prime, otherwise False."""\n'
    "    if n < 2:\n        return False\n"
    "    return all(n % d for d in range(2, int(n**0.5) + 1))\n"
)


def _run(run_id: str, label: str, model: str, created: float, env: str = ENV) -> RunRow:
    config = {"envs": [env], "policy": "openai", "policy_params": {"model": model}, "k": 2}
    return RunRow(
        id=run_id,
        created_at=created,
        updated_at=created + 60,
        config=config,
        policy="openai",
        boxgym_version="0.1.0",
        label=label,
    )


def _turn(text: str, name: str, args: dict[str, Any], obs: str, **extra: Any) -> dict[str, Any]:
    return {"text": text, "name": name, "args": args, "obs": obs, **extra}


def _turns(task: str, passed: bool, hostile: bool) -> list[dict[str, Any]]:
    if hostile:
        return [
            _turn(HOSTILE, "bash", {"command": "cat /dev/urandom | head -c 64"}, "x" * HUGE),
            _turn("Done. All tests pass.", "submit", {}, "submitted"),
        ]
    content = SOLUTION if passed else "def is_prime(n):\n    return n > 1\n"
    first = _turn(
        WORDS if task == "is-prime" else f"Writing the solution for {task}.",
        "write_file",
        {"path": "solution.py", "content": content},
        "wrote 1 file",
        reasoning="Trial division is enough for n up to 10**12.",
    )
    tests = _turn("Run the tests.", "bash", {"command": "python3 -m pytest -q"}, "3 passed")
    touch = _turn(
        "Make the tests agree.",
        "write_file",
        {"path": "tests/test_solution.py", "content": "def test_ok():\n    assert True\n"},
        "wrote 1 file",
    )
    end = _turn("The function is done.", "submit", {}, "submitted")
    return [first, tests, end] if passed else [first, touch, end]


def _messages(task: str, turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"role": "system", "content": "You are an autonomous agent."},
        {"role": "user", "content": f"Write the function of task {task} in solution.py."},
    ]
    for i, t in enumerate(turns):
        call = {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": t["name"], "arguments": "{}"},
        }
        message = {"role": "assistant", "content": t["text"], "tool_calls": [call]}
        if "reasoning" in t:
            message["reasoning"] = t["reasoning"]
        out += [message, {"role": "tool", "tool_call_id": f"c{i}", "content": t["obs"][:100]}]
    return out


def _export(turns: list[dict[str, Any]]) -> dict[str, Any]:
    files = {
        t["args"]["path"]: t["args"]["content"].encode() for t in turns if t["name"] == "write_file"
    }
    changes = [Change(path=f"/workspace/{p}", kind="modified") for p in files]
    allowed = {p: d for p, d in files.items() if p == "solution.py"}
    return Export(files=allowed, changes=changes).model_dump(mode="json")  # type: ignore[arg-type]


def _verdict(eid: str, passed: bool) -> VerdictRow:
    flags = (
        []
        if passed
        else [
            {"name": "tests_touched", "detail": "modified tests/test_solution.py", "gating": True}
        ]
    )
    return VerdictRow(
        episode_id=eid,
        created_at=time.time(),
        outcome="pass" if passed else "fail",
        reward=1.0 if passed else 0.0,
        verified=passed,
        reason="all checks passed" if passed else "check_edges failed: is_prime(1) returned True",
        components={
            "tests": {
                "score": 1.0 if passed else 0.33,
                "passed": passed,
                "gated": True,
                "weight": 1.0,
                "explanation": "3/3 checks" if passed else "1/3 checks: check_edges failed",
            }
        },
        flags=flags,
        grader="calls",
        grader_version="1+runner.abc",
        hidden_hash="f" * 64,
        image_digest="sha256:" + "e" * 64,
    )


def _episode(
    run: RunRow, task: str, sample: int, passed: bool, hostile: bool, words: str = ""
) -> tuple:
    eid = f"{run.id[:2]}{task[:6]}{sample}".replace("-", "x")
    turns = _turns(task, passed, hostile)
    if words:
        turns[0]["text"] = words
    episode = EpisodeRow(
        id=eid,
        run_id=run.id,
        env_id=ENV,
        env_version=0,
        task_id=task,
        split="train",
        tags={"family": "pyfunc", "difficulty": "easy"},
        sample_index=sample,
        seed=sample,
        policy="openai",
        policy_params=run.config["policy_params"],
        outcome="pass" if passed else "fail",
        reward=1.0 if passed else 0.0,
        end_reason="submit",
        n_steps=len(turns),
        prompt_tokens=900 * len(turns),
        completion_tokens=120 * len(turns),
        policy_latency_s=1.5 * len(turns),
        duration_s=4.0 + sample,
        started_at=run.created_at,
        messages=_messages(task, turns),
        export=_export(turns),
    )
    steps = [
        StepRow(
            episode_id=eid,
            index=i,
            tool=t["name"],
            arguments=t["args"],
            observation=t["obs"],
            exit_code=0 if t["name"] == "bash" else None,
            env_duration_s=0.05 * (i + 1),
            policy_latency_s=1.5,
            prompt_token_ids=list(range(900)),
            completion_token_ids=list(range(120)),
        )
        for i, t in enumerate(turns)
    ]
    return episode, steps, _verdict(eid, passed)


# Per run, each task's samples: P pass, F fail. B fixes count-vowels, breaks gcd-of-list.
OUTCOMES = {
    RUN_A: {"is-prime": "PP", "count-vowels": "FF", "gcd-of-list": "PP", "caesar-shift": "FP"},
    RUN_B: {"is-prime": "PF", "count-vowels": "PP", "gcd-of-list": "FF", "caesar-shift": "PP"},
}


def fill(store: Store) -> None:
    """Write the two runs, both finished (B's caesar-shift #1 is the hostile episode)."""
    now = time.time()
    runs = {
        RUN_A: _run(RUN_A, "baseline", "qwen-small", now - 7200),
        RUN_B: _run(RUN_B, "candidate <b>bold</b>", "qwen-large", now - 3600),
    }
    for run_id, outcomes in OUTCOMES.items():
        store.start_run(runs[run_id], planned=8)
        for task, marks in outcomes.items():
            for sample, mark in enumerate(marks):
                hostile = run_id == RUN_B and (task, sample) == ("caesar-shift", 1)
                episode = _episode(runs[run_id], task, sample, mark == "P", hostile)
                store.commit_episode(*episode)
        store.end_run(run_id, "finished")


def add_run(
    store: Store,
    run_id: str,
    outcomes: dict[str, str],
    *,
    label: str = "",
    env: str = ENV,
    created: float | None = None,
    planned: int | None = None,
    finished: bool = True,
) -> RunRow:
    """Store a run of ``outcomes`` (task -> marks, P or F per sample), with its status.

    Episode ids are the run id's first two characters, the task's first six and the
    sample (as in `fill`): give each run its own two first characters.
    """
    run = _run(run_id, label, "m", time.time() if created is None else created, env)
    store.start_run(run, planned=sum(map(len, outcomes.values())) if planned is None else planned)
    for task, marks in outcomes.items():
        for sample, mark in enumerate(marks):
            store.commit_episode(*_episode(run, task, sample, mark == "P", False))
    if finished:
        store.end_run(run_id, "finished")
    return run


def add_episode(
    store: Store, run: RunRow, task: str, sample: int, *, passed: bool = True, words: str = ""
) -> str:
    """Store one more episode of a run (``words``: its first assistant message); its id."""
    episode, steps, verdict = _episode(run, task, sample, passed, False, words)
    store.commit_episode(episode, steps, verdict)
    return episode.id


BIDI = "\u202eevil\u2066 \u200fmark\x07bell \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\"
"""Bidirectional controls, a bell and a terminal hyperlink: none may reach a page."""
BAD_ARGUMENTS = '{"command": "ls -la /workspace", <oops>'
"""The raw argument text of a call the model got wrong (not JSON)."""


def add_hostile_labels(store: Store, run_id: str) -> RunRow:
    """A run whose label, task id and messages hold bidi controls, with one episode whose
    only call was invalid (the model's raw arguments text is `BAD_ARGUMENTS`)."""
    run = _run(run_id, f"label {BIDI}", "m", time.time())
    store.start_run(run, planned=1)
    episode, _, verdict = _episode(run, "is-prime", 0, False, False, f"said {BIDI}")
    episode.task_id = f"is-prime{BIDI}"
    call = {"id": "c0", "type": "function", "function": {"name": "bsh", "arguments": BAD_ARGUMENTS}}
    episode.messages[2]["tool_calls"] = [call]
    error = "unknown tool 'bsh'; tools are: bash, read_file, write_file, submit"
    step = StepRow(
        episode_id=episode.id, index=0, tool="", observation=f"Error: {error}", error=error
    )
    episode.n_steps = 1
    store.commit_episode(episode, [step], verdict)
    store.end_run(run_id, "finished")
    return run


def new_run(run_id: str) -> RunRow:
    """A run that is not stored (to try a write)."""
    return _run(run_id, "new", "m", time.time())


def hostile_id() -> str:
    return f"{RUN_B[:2]}caesar1"


CROWD = [f"s{i:02d}sqlrun000{i:02d}" for i in range(13)]
"""13 runs of another environment, newer than the two runs (issue 28, defect 4)."""
ONE_A, ONE_B = "c0onetask0000a", "d0onetask0000b"
"""Two runs sharing one task only: the paired difference has no interval (defect 8)."""
HOSTILE_RUN = "h0bidi00000003"
TRAIN = "t0train0000001"


def add_train_steps(store: Store) -> None:
    """Three steps of the training run `TRAIN` over `RUN_A`."""
    from gym._store import TrainStepRow

    for step, (reward, hidden) in enumerate([(0.1, 0.25), (0.3, 0.5), (0.6, 0.75)]):
        store.add_train_step(
            TrainStepRow(
                train_id=TRAIN,
                step=step,
                run_id=RUN_A,
                created_at=time.time() + step,
                episodes=9,
                infra_errors=1,
                mean_reward=reward,
                hidden_pass_rate=hidden,
                flag_rates={"tests_touched": 0.125 * (2 - step)},
                loss=0.5 - 0.1 * step,
            )
        )
