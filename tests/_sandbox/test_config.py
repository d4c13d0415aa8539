import pytest

from gym.errors import UnsafeConfig
from gym.sandbox import SandboxConfig


def test_defaults_are_hardened():
    kwargs = SandboxConfig(image="img").create_kwargs({"boxgym.run": "r"})
    assert kwargs["network_mode"] == "none"
    assert kwargs["cap_drop"] == ["ALL"] and "cap_add" not in kwargs
    assert kwargs["security_opt"] == ["no-new-privileges"]
    assert kwargs["privileged"] is False and kwargs["read_only"] is True
    assert kwargs["init"] is True and kwargs["pids_limit"] == 256
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
