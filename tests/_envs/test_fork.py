"""`env.fork(k)`: branches in the parent's state (files, shell, trajectory), independent after.

The toy family (a `CodeEnv` over local folders) checks the mechanics in milliseconds;
the docker-marked tests fork a PyRepo episode on the real engine, as the issue asks.
"""

from __future__ import annotations

import contextlib
import io
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import toy_env
from toy_env import SUBMIT, bash, write

import gym
from gym._envs._fork import Lineage, _files, _fits, can_fork, fork_max_bytes
from gym._sandbox import SandboxConfig
from gym._store import EpisodeRow, RunRow, Store
from gym._store._lineage import LineageRow, lineage_tree


def _toy(task: str = "add") -> toy_env.ToyEnv:
    env = toy_env.ToyEnv()
    env.reset(options={"task": task})
    return env


@pytest.fixture
def forked() -> Iterator[tuple[toy_env.ToyEnv, list[gym.ContainerEnv]]]:
    env = _toy()
    env.step(bash("mkdir -p sub && cd sub && export FORK_VAR='a b'"))
    env.step(write("4"))
    env.step(bash("echo scratch > ../scratch.txt"))
    branches = env.fork(3)
    yield env, branches
    for e in (env, *branches):
        e.close()


def _obs(env: gym.ContainerEnv, command: str) -> str:
    return str(env.step(bash(command))[0])


def test_branches_hold_the_parents_files_shell_and_trajectory(forked):
    env, branches = forked
    want = _obs(env, 'pwd; echo "$FORK_VAR"; cat ../answer.txt; cat ../scratch.txt')
    assert "sub" in want and "a b" in want and "4" in want and "scratch" in want
    for i, branch in enumerate(branches):
        assert [r.call for r in branch.trace] == [r.call for r in env.trace[:3]]
        got = _obs(branch, 'pwd; echo "$FORK_VAR"; cat ../answer.txt; cat ../scratch.txt')
        assert got.replace(branch.sandbox.config.workdir, "W") == want.replace(
            env.sandbox.config.workdir, "W"
        )
        assert branch.lineage == Lineage(parent_id=env.episode_uid, fork_step=3, branch=i)
        assert branch.episode_uid not in (env.episode_uid, "")
    assert len(env.trace) == 4 and all(len(b.trace) == 4 for b in branches)


def test_a_file_written_in_one_branch_is_absent_from_the_others_and_the_parent(forked):
    env, branches = forked
    _obs(branches[0], "echo mine > ../only0.txt")  # the shells are in sub/
    for other in (env, *branches[1:]):
        assert "only0.txt" not in _obs(other, "ls ..")
    assert "only0.txt" in _obs(branches[0], "ls ..")


def test_verdicts_are_independent(forked):
    env, (good, bad, _) = forked
    good.step(bash("cd .. && rm -r sub scratch.txt"))  # outside the allowed paths: flagged
    good.step(write("5"))
    assert good.step(SUBMIT)[4]["verdict"]["outcome"] == "pass"
    assert bad.step(SUBMIT)[4]["verdict"]["outcome"] == "fail"
    assert not env.done  # the parent's episode goes on


def test_a_shell_that_cannot_print_its_state_refuses_the_fork_as_the_agents():
    """Its builtins disabled, the shell reads no directory nor variables: before, the fork
    went on and every branch ran with no exported variable at all (helper E)."""
    env = _toy()
    try:
        env.step(bash("export KEPT=1; enable -n printf declare"))
        with pytest.raises(gym.errors.UnreadableState, match="shell did not print"):
            env.fork(1)
    finally:
        env.close()


def test_a_variable_of_the_parents_cannot_stop_a_branch_reaching_its_directory():
    """The branch's replay names its directory with a variable no parent can know: a
    read-only one of the old fixed name left branches in the workspace (helper E)."""
    env = _toy()
    branches: list[gym.ContainerEnv] = []
    try:
        env.step(bash("mkdir -p sub && cd sub && declare -rx __boxgym_cwd=/etc"))
        branches = env.fork(1)
        assert _obs(branches[0], "pwd").split("\n")[0].endswith("/sub")
    finally:
        for e in (env, *branches):
            e.close()


def test_a_branch_replays_integer_variables_without_running_their_text():
    """``declare -px`` wrote ``declare -ix M="a[$(cmd)]"``, whose replay ran the agent's
    command in the branch, recorded by no step (helper G); the attribute is kept."""
    env = _toy()
    branches: list[gym.ContainerEnv] = []
    setup = "export M='a[$(echo ran > ran.txt; echo 0)]'; declare -i M; declare -rix K=7"
    probe = (
        'ls ran.txt 2>&1 | grep -c "No such"; echo "${M@a}:$M ${K@a}:$K"; declare -i N=K+1; echo $N'
    )
    try:
        env.step(bash(setup))
        branches = env.fork(1)
        want = "1\nix:a[$(echo ran > ran.txt; echo 0)] irx:7\n8\n[exit code: 0]"
        assert _obs(env, probe).strip() == want
        assert _obs(branches[0], probe).strip() == want
    finally:
        for e in (env, *branches):
            e.close()


def test_fork_before_any_command_gives_the_tasks_files():
    env = _toy()
    (branch,) = env.fork(1)
    try:
        assert "answer.txt" in _obs(branch, "ls")
    finally:
        env.close()
        branch.close()


def test_fork_refuses_what_it_cannot_do():
    env = toy_env.ToyEnv()
    with pytest.raises(gym.ConfigError, match="no episode is running"):
        env.fork(2)
    env.reset(options={"task": "add"})
    try:
        with pytest.raises(gym.ConfigError, match="k >= 1"):
            env.fork(0)
    finally:
        env.close()
    held_out = _toy("greet")  # the eval split
    try:
        with pytest.raises(gym.errors.HeldOutError, match="greet"):
            held_out.fork(2, training=True)
    finally:
        held_out.close()


def test_the_fork_cap_is_what_the_mounts_hold_as_far_as_a_branch_can_take_it_in():
    big = SandboxConfig(image="x", memory_mb=1 << 16)  # 256m + 256m + 64m of mounts
    headers = 100_000 * 3 * 512 + 1024  # each entry's header and long name; the end
    assert fork_max_bytes(big) == 576 * 2**20 + headers
    assert fork_max_bytes(big, entries=10) == 576 * 2**20 + 10 * 1536 + 1024
    units = {"/a": "size=3k", "/b": "mode=0755,size=2G,uid=1000", "/c": "size=4096"}
    assert fork_max_bytes(big.model_copy(update={"tmpfs": units}), entries=0) == (
        3 * 2**10 + 2 * 2**30 + 4096 + 1024
    )
    # a default sandbox (1 GiB): its branch's keeper holds the archive three times over,
    # beside its files; so does one with a mount of no limit (its memory holds it)
    assert fork_max_bytes(SandboxConfig(image="x")) == 256 * 2**20
    unlimited = big.model_copy(update={"tmpfs": {"/a": "size=0", "/b": "size=1m"}})
    assert fork_max_bytes(unlimited) == 2**34


def _tar(members: list[tarfile.TarInfo], form: int = tarfile.GNU_FORMAT) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:", format=form) as tar:
        for info in members:
            tar.addfile(info, io.BytesIO(bytes(info.size)) if info.isreg() else None)
    return buf.getvalue()


def _member(name: str, size: int = 0, kind: bytes = tarfile.REGTYPE) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.type = size, kind
    info.linkname = "w/a" if kind in (tarfile.LNKTYPE, tarfile.SYMTYPE) else ""
    return info


def test_the_header_walk_reads_the_files_tarfile_reads_in_each_format():
    deep = "w/" + "d" * 120 + "/" + "f" * 90  # a GNU long name; a ustar prefix
    members = [
        _member("w/d", kind=tarfile.DIRTYPE),
        _member("w/a", 5000),
        _member(deep, 3),
        _member("w/link", kind=tarfile.LNKTYPE),
        _member("w/sym", kind=tarfile.SYMTYPE),
        _member("w/empty"),
    ]
    for form in (tarfile.GNU_FORMAT, tarfile.PAX_FORMAT, tarfile.USTAR_FORMAT):
        data = _tar(members, form)
        read = [(m.name, m.size) for m in tarfile.open(fileobj=io.BytesIO(data)) if m.isreg()]
        assert list(_files(data)) == read == [("w/a", 5000), (deep, 3), ("w/empty", 0)]
    pax = tarfile.TarInfo("w/p")
    pax.size, pax.pax_headers = 7, {"path": "w/é/long\nname", "size": "7"}
    assert list(_files(_tar([pax], tarfile.PAX_FORMAT))) == [("w/é/long\nname", 7)]


def test_a_fork_whose_files_one_mount_cannot_take_in_is_the_agents_state():
    """Files are summed per mount in whole pages, each in the deepest mount it is under;
    a sum over that mount's size= is refused, whatever the archive's total."""
    config = SandboxConfig(
        image="x", tmpfs={"/w": "size=12k", "/w/sub": "size=4k", "/t": "size=1m"}
    )
    fits = [_member("w/a", 4096), _member("w/b", 1), _member("w/sub/c", 4096)]
    linked = [*fits, _member("w/sub/l", kind=tarfile.LNKTYPE)]  # a link takes no page
    _fits(_tar([*linked, _member("t/big", 1 << 20)]), config)
    _fits(b"", config)  # a parent that never ran
    with pytest.raises(gym.errors.ExportTooLarge, match=r"/w/sub are 8192 bytes.* 4096"):
        _fits(_tar([*fits, _member("w/sub/d", 1)]), config)  # one page more in /w/sub
    with pytest.raises(gym.errors.ExportTooLarge, match=r"under /w are 16384 bytes"):
        _fits(_tar([*fits, _member("w/e", 4097)]), config)  # two pages more in /w
    with pytest.raises(gym.errors.SandboxError, match="could not read"):
        _fits(b"x" * 1024, config)


def test_links_whose_targets_tmpfs_keeps_in_a_page_count_a_page():
    """A symbolic link's target of 128 bytes or more takes a page of its mount: a sparse
    file written out beside many of them passed the sum and filled the branch's mount
    (an unpack that failed as ours; found by a red-team helper)."""
    config = SandboxConfig(image="x", tmpfs={"/h": "size=16k"})
    short, long = _member("h/s", kind=tarfile.SYMTYPE), _member("h/l", kind=tarfile.SYMTYPE)
    other = _member("h/l2", kind=tarfile.SYMTYPE)
    short.linkname, long.linkname, other.linkname = "t" * 127, "t" * 128, "u" * 300
    assert list(_files(_tar([short, long]))) == [("h/l", 1)]
    _fits(_tar([_member("h/big", 12288), short]), config)
    with pytest.raises(gym.errors.ExportTooLarge, match="under /h are 20480 bytes"):
        _fits(_tar([_member("h/big", 12288), long, other]), config)


def test_a_family_with_services_refuses_to_fork():
    sql = gym.make("boxgym/SQL-v0").unwrapped  # its state includes a database server
    assert can_fork(sql) is False and can_fork(toy_env.ToyEnv()) is True
    sql.task, sql.sandbox, sql._done = sql.tasks[0], object(), False  # as mid-episode
    with pytest.raises(gym.ConfigError, match="cannot fork yet"):
        sql.fork(2)


def test_lineage_is_stored_with_the_branch_and_read_back(tmp_path: Path):
    store = Store(f"sqlite:///{tmp_path / 'runs.db'}")
    run = RunRow(id="r", created_at=0, updated_at=0, config={}, policy="p", boxgym_version="0")
    store.ensure_run(run)
    for eid in ("parent", "b0", "b1"):
        row = EpisodeRow(
            id=eid, run_id="r", env_id="toy/Answer-v0", env_version=0, task_id="add",
            split="train", sample_index=0, seed=0, policy="scripted", outcome="pass",
        )  # fmt: skip
        lineage = None if eid == "parent" else LineageRow(
            episode_id="", parent_id="parent", fork_step=3, branch=int(eid[1])
        )  # fmt: skip
        store.commit_episode(row, [], None, lineage=lineage)
    assert store.lineage("parent") is None
    assert store.lineage("b1") == LineageRow(
        episode_id="b1", parent_id="parent", fork_step=3, branch=1
    )
    assert [r.episode_id for r in store.branches("parent")] == ["b0", "b1"]
    assert list(lineage_tree(store.branches("parent"))) == ["parent"]
    assert store.delete_runs(["r"])["episode_lineage"] == 2


# -- the real engine: PyRepo, as the done-when asks ------------------------------


Parent = tuple[gym.ContainerEnv, list[gym.ContainerEnv]]


@contextlib.contextmanager
def _parent(env_id: str, task: str) -> Iterator[Parent]:
    """An episode begun, and the list its test puts its branches in (all closed after)."""
    env = gym.make(env_id, run="pytest-fork").unwrapped
    env.reset(options={"task": task})
    branches: list[gym.ContainerEnv] = []
    try:
        yield env, branches
    finally:
        for e in (env, *branches):
            e.close()


@pytest.fixture
def pyrepo(engine) -> Iterator[Parent]:
    with _parent("boxgym/PyRepo-v0", "calc-precedence") as made:
        yield made


@pytest.fixture
def pyfunc(engine) -> Iterator[Parent]:
    with _parent("boxgym/PyFunc-v0", "alnum-palindrome") as made:
        yield made


@pytest.mark.docker
def test_pyrepo_fork_at_step_3_branches_equal_the_parent_then_diverge(engine):
    env = gym.make("boxgym/PyRepo-v0", run="pytest-fork").unwrapped
    env.reset(options={"task": "calc-precedence"})
    task = env.task
    oracle = (task.folder() / "oracle" / "arith" / "parser.py").read_text()
    branches: list[gym.ContainerEnv] = []
    try:
        env.step(bash("cd arith && export FORK_VAR=forty-two"))
        env.step(bash("echo '# a note' >> errors.py"))
        env.step(bash("echo scratch > /tmp/scratch.txt"))
        branches = env.fork(4)
        probe = 'pwd; echo "$FORK_VAR"; git diff; cat /tmp/scratch.txt'
        want = _obs(env, probe)
        assert "/workspace/arith" in want and "forty-two" in want and "+# a note" in want
        assert [_obs(b, probe) for b in branches] == [want] * 4
        _obs(branches[1], "echo mine > /workspace/only1.txt")
        for other in (env, branches[0], branches[2], branches[3]):
            assert "only1.txt" not in _obs(other, "ls /workspace")
        branches[0].step(write(oracle, path="arith/parser.py"))
        assert "could not" not in branches[0].trace[-1].observation
        passed = branches[0].step(SUBMIT)[4]["verdict"]
        failed = branches[2].step(SUBMIT)[4]["verdict"]
        assert (passed["outcome"], failed["outcome"]) == ("pass", "fail"), (passed, failed)
        assert not env.done and branches[0].lineage.fork_step == 3
    finally:
        for e in (env, *branches):
            e.close()


@pytest.mark.docker
@pytest.mark.parametrize(
    "setup",
    [
        "trap 'echo \"x; touch /workspace/injected\"' DEBUG",
        "builtin() { if [[ $1 == printf ]]; then command printf '%s\\n' "
        "'x; touch /workspace/injected'; return 0; fi; command builtin \"$@\"; }",
    ],
    ids=["debug_trap", "builtin_function"],
)
def test_a_shell_printing_a_command_for_its_state_runs_it_nowhere(pyfunc, setup):
    """What the parent's shell printed was replayed as bash: the command ran in every
    branch, recorded by no step (helper I). Now the fork is refused as the agent's state."""
    env, branches = pyfunc
    env.step(bash(setup))
    with pytest.raises(gym.errors.UnreadableState):
        branches += env.fork(1)
    assert "NOT-THERE" in _obs(env, "[ -e /workspace/injected ] || echo NOT-THERE")


@pytest.mark.docker
def test_a_branch_keeps_the_parents_previous_directory(pyfunc):
    """The replay's own cd came last and set OLDPWD to the parent's directory (helper K)."""
    env, branches = pyfunc
    env.step(bash("cd /usr && cd /tmp"))
    branches += env.fork(1)
    probe = 'echo "$OLDPWD|$PWD"; pwd'
    assert _obs(branches[0], probe) == _obs(env, probe)
    assert _obs(env, probe).startswith("/usr|/tmp\n/tmp")


@pytest.mark.docker
def test_pyrepo_fork_carries_odd_variables_unset_ones_modes_and_links(engine):
    env = gym.make("boxgym/PyRepo-v0", run="pytest-fork").unwrapped
    env.reset(options={"task": "calc-precedence"})
    branches: list[gym.ContainerEnv] = []
    setup = (
        "export ODD=$'two\\nlines \"q\" \\'s\\' $HOME' && unset -v TERM && "
        "mkdir -m 700 ~/secret && ln -s /workspace/arith ~/link && cd /tmp"
    )
    probe = (
        'printf "%q|%s|" "$ODD" "${TERM-unset}"; pwd; stat -c "%a" ~/secret; '
        "[ -O ~/secret ] && echo ours; readlink ~/link"
    )  # each branch has a uid of its own: the folder is its, not the parent's
    try:
        env.step(bash(setup))
        branches = env.fork(2)
        want = _obs(env, probe)
        assert "unset|/tmp" in want and "700\nours" in want and "/workspace/arith" in want
        assert [_obs(b, probe) for b in branches] == [want, want]
        assert len({_obs(e, "id -u") for e in (env, *branches)}) == 3
    finally:
        for e in (env, *branches):
            e.close()


@pytest.mark.docker
def test_pyrepo_forks_variables_up_to_the_kernels_limit_and_refuses_files_over_the_cap(pyrepo):
    """Exported variables any program can still start with (1.8 MiB of control bytes,
    7 MiB as ``declare -px`` writes them) fork; files over the fork cap, or a sparse
    file that under it overflows its mount in a branch, are refused as the agent's state
    (`ExportTooLarge`), whatever the mounts could hold."""
    env, branches = pyrepo
    fill = "for i in $(seq 15); do export V$i=$(head -c 122880 /dev/zero | tr '\\0' '\\1'); done"
    probe = "env | grep '^V[0-9]' | md5sum; /bin/true && echo started"
    env.step(bash(fill))
    want = _obs(env, probe)
    assert "started" in want
    branches += env.fork(1)
    assert _obs(branches[0], probe) == want
    env.step(bash("truncate -s 64M ~/hole && head -c 1 /dev/zero > ~/more"))
    with pytest.raises(gym.errors.ExportTooLarge, match="/home/agent are 67112960 bytes"):
        env.fork(1)  # a sparse file, in full, over its mount: not a failed unpack
    half = (fork_max_bytes(env.sandbox.config) >> 1) + 1
    env.step(bash(f"rm ~/hole; head -c {half} /dev/zero | tee /tmp/a > /workspace/a"))
    with pytest.raises(gym.errors.ExportTooLarge, match="over the fork cap"):
        env.fork(1)


@pytest.mark.docker
def test_pyrepo_fork_takes_one_archive_and_one_shell_read_then_one_command_a_branch(
    engine, monkeypatch
):
    """What makes a fork cost about a reset: no process in the parent (its keeper archives
    its mounts while its shell state is read), one command of each branch's fresh shell."""
    from gym._sandbox import DockerSandbox
    from gym._sandbox._keeper import KeeperLink
    from gym._sandbox._shell import Shell

    calls: list[tuple[str, str]] = []  # (container or sandbox id, what)
    run_exec, run_shell, archive = DockerSandbox._exec, Shell._run, KeeperLink.archive

    def counted_exec(self, cmd, *args, **kwargs):
        calls.append((self.id, "exec"))
        return run_exec(self, cmd, *args, **kwargs)

    def counted_shell(self, body, *args, **kwargs):
        if body != "eval $'true' </dev/null":  # a cold container's readiness check (pool)
            calls.append((self.sandbox.id, "shell"))
        return run_shell(self, body, *args, **kwargs)

    def counted_archive(self, *args, **kwargs):
        calls.append((self.container_id, "archive"))
        return archive(self, *args, **kwargs)

    env = gym.make("boxgym/PyRepo-v0", run="pytest-fork").unwrapped
    env.reset(options={"task": "calc-precedence"})
    branches: list[gym.ContainerEnv] = []
    try:
        env.step(bash("cd arith && echo '# a note' >> errors.py"))
        monkeypatch.setattr(DockerSandbox, "_exec", counted_exec)
        monkeypatch.setattr(Shell, "_run", counted_shell)
        monkeypatch.setattr(KeeperLink, "archive", counted_archive)
        branches = env.fork(2)
        monkeypatch.undo()
        parent = env.sandbox.inner()
        mine = {parent.id, parent.container.id}
        assert sorted(c for box, c in calls if box in mine) == ["archive", "shell"]
        for branch in branches:  # unpack and replay: one command of its fresh shell
            assert [c for box, c in calls if box == branch.sandbox.id] == ["shell"]
        assert len(calls) == 4, calls
        assert "+# a note" in _obs(branches[1], "pwd; git diff")
    finally:
        for e in (env, *branches):
            e.close()


@pytest.mark.docker
def test_the_unpack_alone_decides_whether_a_branch_was_seeded(engine):
    import io
    import tarfile

    from gym._envs._fork import _seed
    from gym._sandbox import DockerSandbox

    config = gym.make("boxgym/PyRepo-v0").unwrapped.sandbox_config()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("tmp/seeded.txt")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"ok"))
    boxes = [DockerSandbox.create(config, run="pytest-fork") for _ in range(2)]
    try:
        fake = "echo __boxgym_unpacked_; exit 0"  # a replay may print anything, even end
        with pytest.raises(gym.errors.SandboxError, match="could not unpack"):
            _seed(boxes[0], b"not a tar archive" * 64, "/", fake)
        assert boxes[0].run("echo alive").stdout.strip() == "alive"
        _seed(boxes[1], buf.getvalue(), "/", "echo noise; exit 3")
        assert boxes[1].run("cat /tmp/seeded.txt").stdout == "ok"
    finally:
        for box in boxes:
            box.close()


@pytest.mark.docker
def test_pyrepo_forks_a_read_only_folder_and_refuses_what_the_agent_cannot_read(pyrepo):
    """A folder made read-only with files in it is copied (its mode set once they are
    written: before, every unpack failed as ours); a file or folder the agent made
    unreadable to itself cannot be copied, and a fork without it would not be the
    parent's state: refused as the agent's doing (found by a red-team helper). The fork's
    seconds are left out of the parent's clock, as out of each branch's."""
    env, branches = pyrepo
    ro = "/workspace/ro"
    env.step(bash(f"mkdir {ro} && echo kept > {ro}/a && chmod 555 {ro}"))
    started = env._started
    branches += env.fork(1)
    assert env._started > started
    assert _obs(branches[0], f"cat {ro}/a; stat -c %a {ro}").startswith("kept\n555\n")
    for hidden in (f"chmod 000 {ro}/a", f"chmod 555 {ro}/a && chmod 300 {ro}"):
        env.step(bash(f"chmod 755 {ro} && {hidden}"))
        with pytest.raises(gym.errors.UnreadableState, match="unreadable"):
            env.fork(1)
