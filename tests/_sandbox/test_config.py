import os

import pytest

from gym.errors import UnsafeConfig
from gym.sandbox import SandboxConfig


def test_defaults_are_hardened():
    kwargs = SandboxConfig(image="img").create_kwargs({"boxgym.run": "r"}, ["cat"])
    assert kwargs["network_mode"] == "none"
    assert kwargs["cap_drop"] == ["ALL"] and "cap_add" not in kwargs
    assert kwargs["security_opt"] == ["no-new-privileges"]
    assert kwargs["privileged"] is False and kwargs["read_only"] is True
    assert kwargs["init"] is False and kwargs["pids_limit"] == 256
    assert kwargs["mem_limit"] == kwargs["memswap_limit"] == "1024m"
    assert kwargs["user"] == "65534:65534"
    assert all("size=" in opts for opts in kwargs["tmpfs"].values())


@pytest.mark.parametrize("network", ["host", "bridge", "container:abc"])
def test_networks_with_a_route_out_are_refused(network):
    with pytest.raises(UnsafeConfig, match="route out"):
        SandboxConfig(image="img", network=network)


def test_dangerous_capabilities_are_refused():
    with pytest.raises(UnsafeConfig, match="SYS_ADMIN"):
        SandboxConfig(image="img", cap_add=("SYS_ADMIN",))


def test_tmpfs_without_size_is_refused():
    with pytest.raises(UnsafeConfig, match="size="):
        SandboxConfig(image="img", tmpfs={"/tmp": "mode=1777"})


def test_exec_user_must_differ_from_main_user_unless_disposable():
    with pytest.raises(UnsafeConfig, match="differ"):
        SandboxConfig(image="img", main_user="1000:1000", exec_user="1000:1000")
    assert SandboxConfig(image="img", main_user="0:0", exec_user="0:0", disposable=True)


def test_key_changes_with_settings():
    assert SandboxConfig(image="a").key != SandboxConfig(image="a", memory_mb=512).key
    assert SandboxConfig(image="a").key == SandboxConfig(image="a").key


def test_the_cgroup_namespace_is_private():
    assert SandboxConfig(image="img").create_kwargs({}, ["cat"])["cgroupns"] == "private"


def test_the_runtime_comes_from_the_environment_and_must_be_a_name(monkeypatch):
    monkeypatch.delenv("GYM_RUNTIME", raising=False)
    assert SandboxConfig(image="img").runtime is None
    assert "runtime" not in SandboxConfig(image="img").create_kwargs({}, ["cat"])
    monkeypatch.setenv("GYM_RUNTIME", "runsc")
    config = SandboxConfig(image="img", pids_limit=64)
    assert config.runtime == "runsc" and config.key != SandboxConfig(image="img", runtime=None).key
    kwargs = config.create_kwargs({}, ["cat"])
    assert kwargs["runtime"] == "runsc"
    assert kwargs["pids_limit"] > 64  # headroom for gVisor's own threads
    assert kwargs["ulimits"] == [{"name": "nproc", "soft": 16, "hard": 16}]
    with pytest.raises(UnsafeConfig, match="runtime"):
        SandboxConfig(image="img", runtime="runsc --debug")


def test_every_tmpfs_and_dev_shm_get_a_bound_on_their_inodes():
    config = SandboxConfig(
        image="x", tmpfs={"/a": "size=256m,mode=1777", "/b": "size=1m", "/c": "size=8m,nr_inodes=9"}
    )
    mounts = config.create_kwargs({}, ["true"])["tmpfs"]
    assert mounts["/a"] == "size=256m,mode=1777,nr_inodes=16384"  # one per 16 KiB
    assert mounts["/b"] == "size=1m,nr_inodes=1024"  # at least 1,024
    assert mounts["/c"] == "size=8m,nr_inodes=9"  # a bound given is kept
    assert mounts["/dev/shm"] == "size=64m,nr_inodes=4096,mode=1777"
    assert config.tmpfs["/a"] == "size=256m,mode=1777"  # the settings themselves unchanged


def test_under_gvisor_the_mounts_are_left_as_given():
    config = SandboxConfig(image="x", runtime="runsc", tmpfs={"/a": "size=1m"})
    assert config.create_kwargs({}, ["true"])["tmpfs"] == {"/a": "size=1m"}


def test_each_sandbox_draws_an_exec_uid_of_its_own_everywhere_the_exec_user_appears():
    config = SandboxConfig(
        image="img",
        tmpfs={"/workspace": "size=1m,uid=1000,gid=1000,mode=0755", "/tmp": "size=1m,mode=1777"},
        boot=(("1000:1000", "true"), ("999:999", "true")),
    )
    first, second = config.drawn(), config.drawn()
    assert first.exec_uid != second.exec_uid  # at random: equal one time in 2**24 - 2**20
    assert all((1 << 20) <= c.exec_uid < (1 << 24) for c in (first, second))
    uid = first.exec_uid
    assert first.exec_user == f"{uid}:{uid}" and not first.own_uid
    assert first.tmpfs == {
        "/workspace": f"size=1m,uid={uid},gid={uid},mode=0755",
        "/tmp": "size=1m,mode=1777",
    }
    assert first.boot == ((f"{uid}:{uid}", "true"), ("999:999", "true"))
    assert first.drawn() is first  # drawn once: a sandbox's own settings keep their uid
    named = config.model_copy(update={"own_uid": False})
    assert named.drawn() is named
    root = SandboxConfig(image="img", main_user="0:0", exec_user="0:0", disposable=True)
    assert root.drawn() is root


def test_a_process_forked_after_import_draws_other_uids_than_its_parent():
    """Drawn at random, not in turn: a sequence forked with a process (gymnasium's vector
    envs fork their workers) gave parent and child the same uids in the same order."""
    config = SandboxConfig(image="img")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(write, " ".join(str(config.drawn().exec_uid) for _ in range(4)).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    child = [int(uid) for uid in os.read(read, 4096).split()]
    os.close(read)
    ours = [config.drawn().exec_uid for _ in range(4)]
    assert len(child) == 4 and not set(child) & set(ours)
