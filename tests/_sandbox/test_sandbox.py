"""The hardened sandbox against the real Docker engine."""

from __future__ import annotations

import http.client
import time

import pytest

from gym import SandboxError
from gym._sandbox import DockerSandbox, Manifest, Sandbox, client
from gym.errors import SandboxUnavailable

pytestmark = pytest.mark.docker

AGENT_PROCS = (
    'for p in /proc/[0-9]*; do [ $p != /proc/1 ] && [ "$(stat -c %u $p)" = {uid} ] && echo $p; done'
)
"""The agent's processes: its uid's, but pid 1 (the container's keeper runs as that uid)."""


def agent_processes(box: Sandbox) -> list[str]:
    out = box.exec(["sh", "-c", AGENT_PROCS.format(uid=box.config.exec_uid)], user="65534:65534")
    return out.stdout.split()


def test_container_is_hardened_as_seen_by_the_engine(sandbox):
    info = sandbox.inspect()
    host, config = info["HostConfig"], info["Config"]
    assert host["NetworkMode"] == "none"
    assert host["CapDrop"] == ["ALL"] and not host["CapAdd"]
    assert "no-new-privileges" in host["SecurityOpt"]
    assert host["PidsLimit"] == 64
    assert host["Memory"] == 256 * 2**20 and host["MemorySwap"] == host["Memory"]
    assert host["NanoCpus"] == 10**9 and host["Init"] is False
    assert host["ReadonlyRootfs"] is True and not host["Privileged"]
    assert config["User"] not in ("", "0", "root") and not config["User"].startswith("0:")
    assert {"boxgym.run", "boxgym.episode", "boxgym.owner"} <= set(config["Labels"])


def test_container_is_hardened_as_seen_from_inside(sandbox):
    result = sandbox.exec(
        "id -u; grep CapEff /proc/self/status; ls /sys/class/net; touch /etc/x 2>&1 || true"
    )
    lines = result.stdout.split("\n")
    assert lines[0] == str(sandbox.config.exec_uid) and sandbox.config.exec_uid >= 1 << 20
    assert lines[1].split()[1] == "0000000000000000"
    assert lines[2] == "lo"
    assert "Read-only file system" in result.stdout


def test_exec_reports_exit_code_streams_cwd_env_and_stdin(sandbox):
    result = sandbox.exec(
        'echo "$GREETING from $(pwd)"; cat; echo oops >&2; exit 3',
        cwd="/tmp",
        env={"GREETING": "hi"},
        stdin=b"piped\n",
    )
    assert result.exit_code == 3 and not result.ok
    assert result.stdout == "hi from /tmp\npiped\n" and result.stderr == "oops\n"
    assert result.duration_s > 0 and not result.timed_out


def test_output_that_beats_the_http_headers_is_kept(sandbox, monkeypatch):
    # Under load the command can answer before the client parses the 101 response, so
    # its first frames land in the HTTP reader's buffer; they must not be lost.
    original = http.client.HTTPConnection.getresponse

    def late(self, *args, **kwargs):
        time.sleep(0.3)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(http.client.HTTPConnection, "getresponse", late)
    result = sandbox.exec("echo hello")
    assert result.exit_code == 0 and result.stdout == "hello\n"


@pytest.mark.parametrize("via", ["exec", "shell"])
def test_timeout_kills_the_whole_process_tree(sandbox, via):
    escapees = "(setsid sleep 300 &); (sleep 301 &); nohup sleep 302 >/dev/null 2>&1 & sleep 303"
    run = sandbox.exec if via == "exec" else sandbox.run
    start = time.monotonic()
    result = run(escapees, timeout=1.5)
    assert result.timed_out and result.exit_code is None
    assert time.monotonic() - start < 15
    assert agent_processes(sandbox) == []
    assert sandbox.run("echo still here").stdout == "still here\n"


def test_huge_output_is_capped_with_a_marker(sandbox):
    result = sandbox.exec("head -c 10000000 /dev/zero | tr '\\0' a", max_output=4096)
    assert result.ok and result.stdout_truncated
    assert "bytes truncated by boxgym" in result.stdout
    assert len(result.stdout) < 5000


def test_binary_output_is_decoded_tolerantly(sandbox):
    result = sandbox.run("head -c 4096 /dev/urandom")
    assert result.ok and isinstance(result.stdout, str)


def test_memory_bomb_is_reported_as_oom(sandbox):
    result = sandbox.run("python3 -c 'x = bytearray(600 * 2**20)'", timeout=30)
    assert result.exit_code == 137 and result.oom_killed
    assert sandbox.run("echo alive").stdout == "alive\n"


def test_fork_bomb_is_contained_and_the_sandbox_recovers(sandbox):
    result = sandbox.run(":(){ :|:& };:; sleep 100", timeout=3)
    assert result.timed_out
    assert agent_processes(sandbox) == []
    assert sandbox.run("echo recovered").stdout == "recovered\n"


_HOARD = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmget.restype = ctypes.c_int
libc.shmget.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
libc.shmat.restype = ctypes.c_void_p
libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
libc.shmdt.argtypes = [ctypes.c_void_p]
held = 0
for size in [16 << 20] * 40 + [1 << 20] * 64:
    segment = libc.shmget(0, size, 0o1600)
    if segment < 0:
        continue
    address = libc.shmat(segment, None, 0)
    ctypes.memset(address, 1, size)
    libc.shmdt(address)
    held += size
print(held >> 20)
"""


def test_system_v_shared_memory_outliving_its_processes_is_bounded(sandbox):
    """Segments outlive their processes and no process limit counts them, but their pages
    are the container's memory: in all they get what /dev/shm gets (64 MiB), well under
    this 256 MiB sandbox's limit, however many processes ask."""
    held = [int(sandbox.run(f"python3 -c '{_HOARD}'", timeout=60).stdout) for _ in range(3)]
    assert 0 < sum(held) <= 64
    assert sandbox.run("echo alive").stdout == "alive\n"


_NAMES = """
import os, sys
made = attributes = 0
for top in ("/tmp", "/dev/shm"):
    for i in range(100000):
        path = f"{top}/{i:06d}" + "n" * 240
        try:
            open(path, "w").close()
            made += 1
            os.setxattr(path, "user.a", bytes(65000))
            attributes += 65000
        except OSError:
            if not os.path.exists(path):
                break
print(made, attributes >> 20)
"""


def test_names_and_attributes_outliving_their_processes_are_bounded(sandbox):
    """A tmpfs's size caps its files' bytes, not the inodes, names and extended attributes
    the kernel keeps for them, which are the container's memory too and outlive their
    processes: empty files with 64 KiB attributes filled a grading container until the
    kernel killed the checker (found by a red-team helper). Each mount's inodes are
    bounded, and attributes are charged to them (1 KiB each)."""
    hoard = sandbox.run(f"python3 -c '{_NAMES}'", timeout=60)
    assert hoard.exit_code == 0 and not hoard.oom_killed, f"the hoard filled the memory: {hoard}"
    made, mib = map(int, hoard.stdout.split())
    inodes = {
        path: sandbox.run(f"df --output=itotal {path} | tail -1").stdout
        for path in ("/tmp", "/dev/shm")
    }
    assert 0 < made <= sum(int(n) for n in inodes.values())
    assert 0 < mib <= sum(int(n) for n in inodes.values()) >> 10
    assert sandbox.run("echo alive").stdout == "alive\n"


def test_orphans_of_the_agent_leave_no_zombies_to_fill_the_pids_limit(sandbox):
    """The main process is the container's init (no engine init: a shared host file). It
    must reap the agent's orphans: 90 of them would fill this sandbox's limit of 64."""
    for _ in range(3):
        assert sandbox.run("for i in $(seq 30); do (sleep 0.05 &); done", timeout=10).ok
    time.sleep(1)
    states = sandbox.exec(["sh", "-c", "cat /proc/[0-9]*/stat"], user="65534:65534").stdout
    assert [line.split(") ")[1][0] for line in states.splitlines()].count("Z") == 0
    assert sandbox.run("echo alive").stdout == "alive\n"


def test_a_dead_container_raises_sandbox_unavailable_not_a_failed_command(sandbox):
    sandbox.run("true")
    client().containers.get(sandbox.container.id).kill()
    time.sleep(0.5)
    with pytest.raises(SandboxUnavailable):
        sandbox.run("true")
    with pytest.raises(SandboxUnavailable):
        sandbox.exec("true")


def test_close_is_idempotent_and_removes_the_container(sandbox):
    container_id = sandbox.container.id
    sandbox.close()
    sandbox.close()
    assert sandbox.closed
    assert not client().containers.list(all=True, filters={"id": container_id})
    with pytest.raises(SandboxUnavailable):
        sandbox.run("true")


def test_shell_keeps_directory_and_variables_between_commands(sandbox):
    sandbox.run("cd /tmp && export X=42")
    result = sandbox.run('echo "$X $PWD"')
    assert result.stdout == "42 /tmp\n" and not result.shell_restarted


def test_shell_restarts_in_its_last_directory_after_exit(sandbox):
    sandbox.run("cd /tmp")
    assert sandbox.run("exit 7").exit_code == 7
    result = sandbox.run("pwd")
    assert result.stdout == "/tmp\n" and result.shell_restarted


def test_shell_survives_unbalanced_quotes_and_stdin_readers(sandbox):
    assert sandbox.run("echo 'unbalanced").exit_code != 0
    assert sandbox.run("cat").exit_code == 0  # stdin is /dev/null, no hang
    assert sandbox.run("printf 'no newline'").stdout == "no newline"


def test_files_round_trip_binary_exactly(sandbox):
    blob = bytes(range(256)) * 4
    sandbox.put_files("/workspace", {"pkg/data.bin": blob, "a.txt": b"hi"})
    sandbox.put_files("/workspace", {"fast.bin": blob}, via_shell=True)
    assert sandbox.read_file("pkg/data.bin") == blob
    assert sandbox.read_file("fast.bin") == blob
    assert sandbox.list_files(".", max_depth=2) == ["a.txt", "fast.bin", "pkg/", "pkg/data.bin"]
    entries = {e.path: e for e in sandbox.get_files("/workspace", ["pkg"])}
    assert entries["pkg/data.bin"].data == blob


def test_reading_a_too_large_or_missing_file_raises(sandbox):
    sandbox.put_files("/workspace", {"big": b"x" * 5000})
    with pytest.raises(SandboxError, match="larger than"):
        sandbox.read_file("big", max_bytes=1000)
    with pytest.raises(SandboxError, match="not a file"):
        sandbox.read_file("missing")


def test_diff_reports_changes_against_the_baseline(sandbox):
    files = {"keep.py": b"1", "edit.py": b"2", "drop.py": b"3"}
    sandbox.put_files("/workspace", files, via_shell=True)
    sandbox.baseline = Manifest.of_files("/workspace", files)
    sandbox.run("echo changed > edit.py; rm drop.py; echo new > /tmp/new.txt; ln -s /etc x")
    changes = {(c.path, c.kind) for c in sandbox.diff()}
    assert changes == {
        ("/workspace/edit.py", "modified"),
        ("/workspace/drop.py", "deleted"),
        ("/tmp/new.txt", "added"),
        ("/workspace/x", "added"),
    }


_INOTIFY = (
    "import ctypes, resource, sys, time\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "n = 0\n"
    "while libc.inotify_init1(0) >= 0: n += 1\n"
    "print(n, resource.getrlimit(resource.RLIMIT_NOFILE)[0], flush=True)\n"
    "if sys.argv[1] == 'hold': time.sleep(120)\n"
)
"""Opens inotify instances until the kernel refuses one; prints how many, and the fd limit."""


def test_two_sandboxes_of_one_config_share_no_host_uid(small_config):
    """The kernel counts some things per uid for the whole machine (inotify instances,
    pipe pages, processes...): one sandbox holding them all leaves another its own."""
    holder, other = (DockerSandbox.create(small_config, run="pytest") for _ in range(2))
    try:
        holder.write_file("/tmp/inotify.py", _INOTIFY.encode())
        holder.run("python3 /tmp/inotify.py hold > /tmp/held 2>&1 &")
        deadline = time.monotonic() + 30
        while not holder.exec(["test", "-s", "/tmp/held"]).ok and time.monotonic() < deadline:
            time.sleep(0.1)
        held, fd_limit = map(int, holder.exec(["cat", "/tmp/held"]).stdout.split())
        assert 0 < held < fd_limit  # control: stopped by the count of its uid, not its fds
        other.write_file("/tmp/inotify.py", _INOTIFY.encode())
        opened = int(other.run("python3 /tmp/inotify.py probe").stdout.split()[0])
        assert opened == held  # the whole budget, none of it taken by the holder
        seen = [
            box.run("id -u; stat -c %u /workspace /home/agent").stdout.split()
            for box in (holder, other)
        ]
        assert seen[0][0] != seen[1][0]
        for box, ids in zip((holder, other), seen, strict=True):
            assert ids == [str(box.config.exec_uid)] * 3
    finally:
        holder.close()
        other.close()


def test_a_uid_held_by_a_container_of_the_engine_is_drawn_again(small_config, monkeypatch):
    """The container's name holds its uid on the engine, for every process that uses it:
    a draw of a uid another container runs as is refused by the engine, and drawn again."""
    from gym._sandbox import _config

    draws = iter([7, 7, 8])
    monkeypatch.setattr(_config.secrets, "randbelow", lambda n: next(draws))
    first = DockerSandbox.create(small_config, run="pytest")
    try:
        second = DockerSandbox.create(small_config, run="pytest")
        try:
            assert first.config.exec_uid == (1 << 20) + 7
            assert second.config.exec_uid == (1 << 20) + 8
            names = [box.inspect()["Name"] for box in (first, second)]
            assert names == [f"/boxgym-uid-{(1 << 20) + n}" for n in (7, 8)]
        finally:
            second.close()
    finally:
        first.close()
