"""The shell family: its task format, the gold replay in real containers, and adversaries.

Each adversary does the wrong thing a reward-hacking agent might try (a link where the
file should be, a fifo, a setuid bit, an unreadable file, a tree over the manifest's
bounds, names with line breaks) and must end ``fail`` with a named reason: never a
pass, never an infrastructure error, never a hung export.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import gymnasium
import pytest

import gym
from environments.shell import ShellEnv, ShellSpec
from gym.authoring import env_of


def make_task(root: Path, name: str, gold: str, files: dict[str, str], **data: Any) -> gym.Task:
    folder = root / name
    (folder / "hidden").mkdir(parents=True)
    (folder / "hidden" / "gold.sh").write_text(gold)
    for rel, text in files.items():
        (folder / "files" / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / "files" / rel).write_text(text)
    return gym.Task(id=name, family="shell", prompt=f"task {name}", path=str(folder), data=data)


def test_a_task_needs_its_gold_and_a_known_comparison(tmp_path):
    task = make_task(tmp_path, "t", "echo hi", {}, compare=["output", "files"], paths=["o/*"])
    spec = ShellSpec.of(task)
    assert spec.compare == ("output", "files") and spec.paths == ("o/*",)
    with pytest.raises(gym.ConfigError, match="compare"):
        ShellSpec.of(make_task(tmp_path, "u", "echo hi", {}, compare=["rows"]))
    bare = gym.Task(id="v", family="shell", prompt="p", path=str(tmp_path / "none"))
    with pytest.raises(gym.ConfigError, match="hidden/gold.sh"):
        ShellSpec.of(bare)


def test_the_prompt_says_what_is_compared(tmp_path):
    env = ShellEnv(tasks=[make_task(tmp_path, "t", "echo hi", {}, compare=["files"])])
    text = env.prompt(env.tasks[0])
    assert "compared with the expected ones" in text and "call `submit` with `answer`" not in text
    env.close()


@pytest.fixture(scope="module")
def adversaries(tmp_path_factory):
    """A shell env over two tasks: write out.txt (files) and print a line (output)."""
    root = tmp_path_factory.mktemp("shell")
    write = make_task(
        root, "write", "echo hello > out.txt\n", {"in.txt": "hi\n"}, compare=["files"]
    )
    mtime = write.folder() / "files" / "in.txt"
    mtime.chmod(0o640)
    os.utime(mtime, (1_600_000_000, 1_600_000_000))
    say = make_task(root, "say", "wc -l < in.txt\n", {"in.txt": "a\nb\n"}, compare=["output"])
    env = gymnasium.make("boxgym/Shell-v0", tasks=[write, say], max_steps=10)
    yield env
    env.close()


def play(env: Any, task: str, *commands: str, answer: str = "") -> tuple[dict[str, Any], list[str]]:
    env.reset(options={"task": task})
    seen = []
    for command in commands:
        obs, *_ = env.step({"name": "bash", "arguments": {"command": command}})
        seen.append(obs)
    *_, info = env.step({"name": "submit", "arguments": {"answer": answer}})
    return info["verdict"], seen


@pytest.mark.docker
def test_the_workspace_starts_with_the_files_modes_and_times(engine, adversaries):
    verdict, seen = play(adversaries, "write", "stat -c '%a %Y' in.txt", "echo hello > out.txt")
    assert seen[0].startswith("640 1600000000")
    assert verdict["outcome"] == "pass", verdict


@pytest.mark.docker
def test_the_answer_is_compared_with_the_gold_output(engine, adversaries):
    assert play(adversaries, "say", answer=" 2 \n\n")[0]["outcome"] == "pass"
    verdict, _ = play(adversaries, "say", answer="3")
    assert (
        verdict["outcome"] == "fail" and "line 1" in verdict["components"]["output"]["explanation"]
    )


@pytest.mark.docker
@pytest.mark.parametrize(
    ("commands", "why"),
    [
        (["ln -s /etc/hostname out.txt"], "symlink instead of file"),
        (["mkfifo out.txt"], "fifo instead of file"),
        (["echo hello > out.txt", "chmod 4755 out.txt"], "mode 4755 instead of 644"),
        (["echo hello > out.txt", "chmod 000 out.txt"], "unreadable"),  # fewer bits, unread
        (["echo hello > out.txt", "ln out.txt copy.txt"], "hard links"),
        (["mkdir d && cd d && seq 1 10500 | xargs touch && cd .."], "entries 10000"),
    ],
)
def test_adversaries_fail_with_the_reason_named(engine, adversaries, commands, why):
    verdict, _ = play(adversaries, "write", *commands)
    assert verdict["outcome"] == "fail", verdict
    assert why in verdict["components"]["files"]["explanation"]


@pytest.mark.docker
@pytest.mark.parametrize(
    "command",
    [
        "printf hello > out.txt",  # the last line without its newline
        'tmp=$(mktemp) && echo hello > "$tmp" && mv "$tmp" out.txt',  # mode 600, moved in
    ],
)
def test_the_same_lines_written_otherwise_pass(engine, adversaries, command):
    verdict, _ = play(adversaries, "write", command)
    assert verdict["outcome"] == "pass", verdict


@pytest.mark.docker
def test_files_left_beside_the_answer_are_flagged(engine, adversaries):
    verdict, _ = play(adversaries, "say", "touch $'notes\\nfake'", "chmod +x in.txt", answer="2")
    assert verdict["outcome"] == "fail"
    flag = next(f for f in verdict["flags"] if f["name"] == "unexpected_change")
    assert "'notes\\nfake'" in flag["detail"] and "'in.txt': mode 755" in flag["detail"]


@pytest.mark.docker
def test_a_shipped_task_validates(engine):
    from gym.runs import validate_env

    (check,) = validate_env("boxgym/Shell-v0", repeats=1, tasks=["csv-report"])
    assert check.ok, check.problems
    assert set(check.panel) == {"empty", "ls"} and check.perturbed == "unexpected_change"


def test_oracle_answers_come_from_the_replay(tmp_path, monkeypatch):
    env = env_of(gymnasium.make("boxgym/Shell-v0"))
    task = env.task_by_id("count-errors")
    replay = gym.grading.GoldReplay(
        stdout="api.log 3\n",
        exit_code=0,
        initial=gym.grading.FileTree(),
        final=gym.grading.FileTree(),
    )
    monkeypatch.setattr(env, "replay", lambda t: replay)
    calls = env.oracle_calls(task)
    assert [c.name for c in calls] == ["bash", "submit"]
    assert calls[0].arguments["command"] == ShellSpec.of(task).gold
    assert calls[1].arguments == {"answer": "api.log 3\n"}
    perturbed = env.perturbed_calls(task)
    assert "boxgym-perturbed.txt" in perturbed[-2].arguments["command"]
    env.close()


@pytest.mark.docker
def test_the_gold_runs_as_a_uid_no_agent_runs_as_and_a_failing_gold_is_no_reference(
    engine, tmp_path
):
    """What the kernel counts per uid is shared by every process of that uid: a gold run
    as the agents' uid failed while a concurrent agent held its epoll watches, printed
    nothing, and that output was cached and graded by (found by a red-team helper). The
    gold runs as a uid drawn per replay; a gold that fails is a grading error, never a
    reference, and is not kept."""
    whoami = make_task(tmp_path, "who", "id -u\n", {}, compare=["output"])
    broken = make_task(tmp_path, "broken", "echo partial; exit 3\n", {}, compare=["output"])
    env = gymnasium.make("boxgym/Shell-v0", tasks=[whoami, broken], max_steps=4)
    try:
        shell = env_of(env)
        uid = int(shell.replay(whoami).stdout)
        assert uid >= 1 << 24, uid
        for _ in range(2):  # not cached: each grading replays it again
            with pytest.raises(gym.errors.GradingError, match="exited with status 3"):
                shell.replay(broken)
        with pytest.raises(gym.InfraError, match="exited with status 3"):
            play(env, "broken", answer="partial")  # an episode graded by it: infra_error
    finally:
        env.close()
