"""The keeper, an agent container's main process (gym/_sandbox/keeper/boxgym_keeper.py).

Against the real engine. It shares the agent's uid, so what keeps the agent from it is
tried here as an agent would: signals, its memory and descriptors through /proc, killing
its helpers. The freeze must leave no process of the agent's behind, whatever the agent
did to survive it, and must list the mounts as the shell script of `manifest_script`
does. Without ``python3`` in the image, sandboxes fall back to ``docker exec``.
"""

from __future__ import annotations

import importlib.util
import marshal
import subprocess
import sys
import time

import pytest

from gym._core._errors import ExecTimeout, ExportTooLarge, SandboxUnavailable, UnreadableState
from gym._sandbox import DockerSandbox, SandboxConfig
from gym._sandbox._docker import _no_keeper, keeps
from gym._sandbox._keeper import KEEPER_COMMAND, boot_input
from gym._sandbox._manifest import manifest_script, new_split, parse_manifest

pytestmark = pytest.mark.docker

AGENT_PROCS = (
    'for p in /proc/[0-9]*; do [ $p != /proc/1 ] && [ "$(stat -c %u $p)" = {uid} ] && echo $p; done'
)


def agent_processes(box: DockerSandbox) -> list[str]:
    """The agent uid's processes but pid 1, seen by another uid (a docker exec)."""
    script = AGENT_PROCS.format(uid=box.config.exec_uid)
    return box.exec(["sh", "-c", script], user="65534:65534").stdout.split()


def boot(data: bytes) -> str:
    """What the keeper's boot line prints, run by this Python, given ``data`` as input."""
    argv = [sys.executable, *KEEPER_COMMAND[1:]]
    done = subprocess.run(argv, input=data, capture_output=True, timeout=60, check=True)
    return done.stdout.decode().strip()


def test_the_boot_line_runs_the_compiled_keeper_only_under_the_same_magic_number():
    code = marshal.dumps(compile("print('compiled')", "keeper", "exec"))
    for magic, ran in ((importlib.util.MAGIC_NUMBER, "compiled"), (b"\x00\x00\r\n", "source")):
        parts = (magic, code, b"print('source')")
        assert boot(b"".join(b"%010d" % len(part) + part for part in parts)) == ran


def test_the_boot_input_runs_its_source_on_the_boot_line():
    assert boot(boot_input(b"import sys\nprint(sys.argv[0], __name__)")) == "-c __main__"


def test_the_keeper_is_pid_1_as_the_agent_and_out_of_its_reach(kept):
    attack = (
        "for s in KILL STOP TERM INT HUP USR1 QUIT ABRT SEGV; do kill -s $s 1; done 2>&1; "
        "kill -9 -1; "
        "cat /proc/1/environ /proc/1/maps 2>&1 | head -c 300; "
        "ls /proc/1/fd /proc/1/cwd/ 2>&1; "
        "python3 -c \"f = open('/proc/1/mem', 'r+b')\" 2>&1 | tail -1; "
        "exec 3</proc/1/fd/0 2>&1"
    )
    out = kept.run(attack, timeout=30)
    status = kept.exec(["sh", "-c", "grep -E '^(Uid|State)' /proc/1/status; cat /proc/1/comm"])
    uid = kept.config.exec_uid
    assert "python3" in status.stdout and f"{uid}\t{uid}\t{uid}\t{uid}" in status.stdout
    assert "environ: Permission denied" in out.stdout
    assert "'/proc/1/fd': Permission denied" in out.stdout
    assert "PermissionError" in out.stdout, out.stdout
    assert "root" not in out.stdout and "0000" not in out.stdout  # no maps, no environ leaked
    assert kept.run("echo still here").stdout == "still here\n"
    assert kept.keeper is not None and kept.exec("true").ok


def test_the_freeze_leaves_no_process_of_the_agent_behind(kept):
    survivors = (
        "setsid sh -c 'trap \"\" TERM HUP INT; while :; do sleep 1; done' >/dev/null 2>&1 & "
        "(sh -c 'sleep 300' &) ; "
        "nohup python3 -c 'import os, time\nwhile True:\n    os.fork() and os._exit(0)\n    time.sleep(0.05)' "
        ">/dev/null 2>&1 & "
        "sleep 0.5; echo started"
    )
    assert kept.run(survivors).stdout == "started\n"
    assert len(agent_processes(kept)) >= 3
    kept.final_diff()
    assert agent_processes(kept) == []
    time.sleep(0.5)
    assert agent_processes(kept) == [], "nothing came back"


def test_a_killed_helper_is_not_the_end_of_the_keeper(kept):
    """The keeper's commands run as the agent's uid, which may kill them: the command
    fails, the keeper and the container go on."""
    result = kept.exec(["sh", "-c", "kill -9 $$"])
    assert result.exit_code == 137
    assert kept.exec(["echo", "alive"]).stdout == "alive\n"


def test_the_keepers_listing_is_what_the_manifest_script_lists(kept):
    state = (
        "cd /workspace && mkdir -p d/e && printf x > d/e/f && ln -s /etc/passwd link "
        "&& ln -s missing dangling && mkfifo fifo && printf secret > private "
        "&& chmod 000 private && chmod 4755 d && printf 'é' > 'sp ace\\nnew' && ln d/e/f hard "
        "&& touch -- --BOXGYM-HASHES-- '--BOXGYM-HASHES--0123456789abcdef--'"
    )
    assert kept.run(state).ok
    roots = list(kept.config.tmpfs)
    split = new_split()
    script = manifest_script(roots, split)
    scripted, printed = kept._exec(["sh", "-c", script], 60, max_output=64 << 20)
    assert scripted.ok
    ours = kept.keeper.listing(roots, time.monotonic() + 30, 64 << 20)
    assert ours == parse_manifest(printed, split)
    nodes = ours.nodes
    assert nodes["/workspace/link"].kind == "l" and nodes["/workspace/fifo"].kind == "p"
    assert nodes["/workspace/private"].sha256 == "", "unreadable: listed, not hashed"
    assert len(nodes["/workspace/d/e/f"].sha256) == 64
    named = {n.rsplit("/", 1)[1] for n in nodes if "HASHES" in n}
    assert named == {"--BOXGYM-HASHES--", "--BOXGYM-HASHES--0123456789abcdef--"}
    assert len(nodes["/workspace/hard"].sha256) == 64, "files named like a separator end nothing"


def test_without_python3_a_sandbox_runs_on_docker_exec(engine):
    config = SandboxConfig(image="debian:bookworm-slim", memory_mb=256, pids_limit=64)
    try:
        with DockerSandbox.create(config, run="pytest") as box:
            assert box.keeper is None
            assert not keeps(config)
            assert box.run("echo $((6 * 7))").stdout == "42\n"
            box.run("touch /workspace/made; sleep 300 &")
            changes = box.final_diff()
            assert [c.path for c in changes] == ["/workspace/made"]
    finally:
        _no_keeper.discard(config.image)


def test_a_deep_tree_and_a_sparse_terabyte_do_not_stall_the_freeze(kept):
    made = kept.run(  # 1500 levels: past Python's recursion limit, within PATH_MAX
        "cd /tmp && deep=$(printf 'd/%.0s' $(seq 1500)) && mkdir -p $deep && touch ${deep}deepest "
        "&& truncate -s 1T /workspace/huge && echo made",
        timeout=60,
    )
    assert made.stdout == "made\n", made.stderr
    start = time.monotonic()
    changes = {c.path: c for c in kept.final_diff()}
    assert time.monotonic() - start < 20
    assert changes["/workspace/huge"].kind == "added"
    assert any(p.endswith("/d/deepest") for p in changes), "the keeper went all the way down"


def test_a_background_flood_of_output_waits_in_its_pipe(kept):
    """Between the agent's commands nobody reads its shell's output: a job writing without
    end must block (as on an exec's stream), not fill the keeper or the harness."""
    assert kept.run("echo started; (yes flood &)").stdout.startswith("started")
    for _ in range(20):  # harness commands read the link meanwhile
        assert kept.exec(["echo", "alive"]).stdout == "alive\n"
        time.sleep(0.05)
    held = sum(len(data) for _, data in kept.keeper.shell_frames)
    assert held <= 1 << 20, f"the harness holds {held} bytes of the shell's output"
    status = kept.exec(["grep", "VmRSS", "/proc/1/status"]).stdout.split()
    assert int(status[1]) < 64 * 1024, f"the keeper holds {status[1]} kB"


def test_the_memory_limit_takes_the_agents_processes_not_the_keeper(kept):
    """The agent's processes are the kernel's first choice under the memory limit, even
    ones smaller than the keeper; many of them over the limit leave the keeper alive."""
    adj = kept.run("cat /proc/self/oom_score_adj /proc/1/oom_score_adj").stdout.split()
    assert adj == ["1000", "0"]
    bomb = (
        "for i in $(seq 40); do python3 -c "
        "\"import time; b = bytearray(12 << 20); b[::4096] = b'x' * len(b[::4096]); "
        'time.sleep(20)" & done; wait; echo done'
    )
    kept.run(bomb, timeout=60)
    assert kept.exec(["grep", "python3", "/proc/1/comm"]).ok, "the keeper is still pid 1"
    assert kept.run("echo alive").stdout == "alive\n"


# -- what the agent left is over the listing's cap: the keeper's answer, not a fault ----------


def test_a_listing_over_its_cap_is_a_structured_answer_and_the_link_stays_in_step(kept):
    assert kept.run("cd /tmp && seq 300 | sed 's/^/file-/' | xargs touch && echo ok").ok
    roots = list(kept.config.tmpfs)
    for cap, entries in ((4096, 100_000), (64 << 20, 50)):
        with pytest.raises(ExportTooLarge, match="over the listing cap"):
            kept.keeper.listing(roots, time.monotonic() + 30, cap, entries)
        nodes = kept.keeper.listing(roots, time.monotonic() + 30).nodes  # the next one reads
        assert sum(p.startswith("/tmp/file-") for p in nodes) == 300
        assert kept.exec(["echo", "alive"]).stdout == "alive\n"


def test_after_a_control_answer_timed_out_no_later_one_reads_its_frames(kept):
    roots = list(kept.config.tmpfs)
    with pytest.raises(ExecTimeout):  # given up on at once: its answer comes later
        kept.keeper.listing(roots, time.monotonic())
    assert kept.run("touch /tmp/made-after && echo ok").ok
    time.sleep(0.5)  # the late answer is on the link by now
    # the next listing would read the late one's frames (no /tmp/made-after): refused
    with pytest.raises(SandboxUnavailable, match="timed out"):
        kept.keeper.listing(roots, time.monotonic() + 30)
    with pytest.raises(SandboxUnavailable):
        kept.keeper.archive("/", ["tmp"], time.monotonic() + 30, 1 << 20)
    assert kept.run("echo alive").stdout == "alive\n", "the shell's line is not affected"


def test_ten_thousand_files_under_a_deep_path_are_too_large_not_a_fault(kept):
    made = kept.run(
        "cd /tmp && for i in $(seq 15); do d=$(printf 'a%.0s' $(seq 250)); mkdir $d && cd $d; "
        "done && seq 10000 | xargs touch && ls | wc -l",
        timeout=120,
    )
    assert made.stdout.strip() == "10000", made.stderr
    start = time.monotonic()
    with pytest.raises(ExportTooLarge, match="over the listing cap"):
        kept.final_diff()
    assert time.monotonic() - start < 60
    assert kept.exec(["echo", "alive"]).stdout == "alive\n", "the container is fine"


def test_a_container_gone_during_the_freeze_is_a_fault_not_too_large(kept):
    assert kept.run("cd /tmp && seq 100 | xargs touch").ok
    kept.container.kill()
    with pytest.raises(SandboxUnavailable):
        kept.final_diff()


# -- the keeper's archive of the mounts (a fork's copy): what tar -c makes, no process ------


TRICKY_TREE = (
    "cd /workspace && mkdir -p d/e && printf x > d/e/f && ln d/e/f hard && ln -s /etc/passwd link "
    "&& ln -s $(printf 't%.0s' $(seq 150)) longlink && mkfifo fifo && printf secret > private "
    "&& chmod 000 private && chmod 4755 d && printf 'é' > 'sp ace\\nnew' && touch empty "
    "&& printf 'b\\xff' > \"$(printf 'n\\xffm')\" && mkdir -m 700 shut && touch -d @0 old "
    "&& d=$(printf 'a%.0s' $(seq 120)) && mkdir -p $d/$d && seq 5000 > $d/$d/long.txt "
    "&& python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind(\"sock\")' "
    "&& head -c 300000 /dev/urandom > /tmp/big && echo ok"
)


def members(archive: bytes) -> dict[str, tuple]:
    """Each member of a tar: (type, mode, mtime, contents or link target); the mounts' own
    folders left out, and a hard link read as the file it is."""
    import hashlib
    import io
    import tarfile

    out: dict[str, tuple] = {}
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        infos = tar.getmembers()
        for info in infos:
            name = info.name.rstrip("/")
            if name in ("workspace", "tmp", "home/agent"):
                continue
            what = info.linkname if info.issym() else ""
            if info.isfile() or info.islnk():
                source = tar.getmember(info.linkname) if info.islnk() else info
                data = tar.extractfile(source)
                what = hashlib.sha256(data.read() if data else b"").hexdigest()
            kind = tarfile.REGTYPE if info.islnk() else info.type
            out[name] = (kind, info.mode, info.mtime, what)
    return out


def test_the_keepers_archive_is_what_tar_makes_of_the_mounts(kept):
    assert kept.run(TRICKY_TREE, timeout=60).stdout.strip() == "ok"
    mounts = [m.lstrip("/") for m in kept.config.tmpfs]
    with pytest.raises(UnreadableState, match="1 of the files"):  # private: not the state
        kept.keeper.archive("/", mounts, time.monotonic() + 30, 64 << 20)
    assert kept.run("chmod 644 /workspace/private").ok
    ours = kept.keeper.archive("/", mounts, time.monotonic() + 30, 64 << 20)
    argv = ["tar", "-c", "--ignore-failed-read", "-C", "/", "--", *mounts]
    made, theirs = kept._exec(argv, 60, max_output=64 << 20)
    assert made.exit_code == 0, made.stderr
    got, want = members(ours), members(theirs)
    assert got == want
    assert "workspace/sock" not in got, "as tar leaves out"
    assert got["workspace/old"][2] == 0 and got["workspace/longlink"][3] == "t" * 150
    assert any(len(name) > 240 for name in got), "names past 100 bytes"


def test_the_keepers_archive_unpacks_with_tar_into_the_same_files(kept, small_config):
    assert kept.run(TRICKY_TREE + " && chmod 644 /workspace/private", timeout=60).ok
    mounts = [m.lstrip("/") for m in kept.config.tmpfs]
    ours = kept.keeper.archive("/", mounts, time.monotonic() + 30, 64 << 20)
    other = DockerSandbox.create(small_config, run="pytest")
    try:
        excludes = [f"--exclude={m}" for m in mounts]
        unpack = ["tar", "-x", "-p", "--no-same-owner", "--no-recursion", "--anchored"]
        done = other.exec([*unpack, "--no-wildcards", *excludes, "-C", "/"], stdin=ours)
        assert done.ok, done.stderr
        want = {p: n for p, n in kept.snapshot().nodes.items() if not p.endswith("/sock")}
        assert other.snapshot().nodes == want
        links = other.run("stat -c %h /workspace/hard /workspace/d/e/f").stdout.split()
        assert links == ["2", "2"], "a hard link stays one"
    finally:
        other.close()


def test_an_archive_over_its_cap_is_too_large_and_the_link_stays_in_step(kept):
    assert kept.run("head -c 300000 /dev/urandom > /tmp/big && touch /tmp/small").ok
    for cap in (100_000, 301_500):  # the big file over the cap; then only the end block
        with pytest.raises(ExportTooLarge, match="over the archive cap"):
            kept.keeper.archive("/", ["tmp"], time.monotonic() + 30, cap)
    whole = kept.keeper.archive("/", ["tmp"], time.monotonic() + 30, 64 << 20)
    assert {"tmp/big", "tmp/small"} <= set(members(whole))
    assert kept.exec(["echo", "alive"]).stdout == "alive\n"


def test_entries_left_out_of_an_archive_still_count_against_its_entries_cap(kept, monkeypatch):
    """Unreadable files add no bytes; the keeper's walk is bounded all the same, and the
    archive without them is refused (it is not the state)."""
    made = kept.run("cd /tmp && seq 300 | sed 's/^/locked-/' | xargs touch && chmod 0 locked-*")
    assert made.ok, made.stderr
    monkeypatch.setattr(kept.keeper, "listing_entries", 50)
    with pytest.raises(ExportTooLarge, match=r"over the archive cap \(50 entries\)"):
        kept.keeper.archive("/", ["tmp"], time.monotonic() + 30, 64 << 20)
    monkeypatch.setattr(kept.keeper, "listing_entries", 100_000)
    with pytest.raises(UnreadableState, match="300 of the files"):
        kept.keeper.archive("/", ["tmp"], time.monotonic() + 30, 64 << 20)
    assert kept.exec(["echo", "alive"]).stdout == "alive\n"
