"""`gym env new`: a bad name or id is refused before anything is written, and what the
manifest writes stays TOML whatever the values hold."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from gym._core._errors import ConfigError
from gym._envs._scaffold import _files, scaffold


@pytest.mark.parametrize(
    ("env_id", "said"),
    [
        ("weird id with spaces", "an id must look like 'namespace/Name-vN'"),
        ('my/Q-v0"\nx = [', "an id must look like 'namespace/Name-vN'"),
        ("boxgym/PyFunc-v0", "already registered by boxgym"),
    ],
)
@pytest.mark.parametrize("family", ["code", "sql"])
def test_an_id_registration_would_refuse_is_refused_before_anything_is_written(
    tmp_path: Path, env_id: str, said: str, family: str
):
    with pytest.raises(ConfigError, match=said):
        scaffold("my_env", family=family, env_id=env_id, root=tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["x", "My_env", "9lives", "a" * 42])
def test_a_bad_name_is_refused_stating_the_real_rule(tmp_path: Path, name: str):
    with pytest.raises(ConfigError) as exc:
        scaffold(name, root=tmp_path)
    assert "2 to 41 characters: a lowercase letter, then lowercase letters, digits or _" in str(
        exc.value
    )


def test_the_manifest_writes_each_value_as_a_toml_string():
    env_id = 'my/Q-v0"\nx = ["\\'
    manifest = tomllib.loads(_files("my_env", env_id)["environments/my_env/boxgym.toml"])
    assert manifest["env"] == [
        {
            "id": env_id,
            "base": "code",
            "tasks": "my_env",
            "image": "my_env",
            "max_steps": 30,
            "max_seconds": 1800,
        }
    ]
    assert set(manifest) == {"env"}
