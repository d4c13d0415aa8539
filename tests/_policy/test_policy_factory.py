"""policy_from_name: the CLI's way to make a policy from a name and options."""

from __future__ import annotations

import pytest

import gym
import gym.policies
from gym._policy import POLICIES


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("oracle", gym.OraclePolicy),
        ("noop", gym.NoopPolicy),
        ("perturbed-oracle", gym.policies.PerturbedOraclePolicy),
        ("local", gym.LocalPolicy),
    ],
)
def test_known_names(name, kind):
    policy = gym.policies.policy_from_name(name)
    assert type(policy) is kind and policy.name == name


def test_openai_with_options():
    policy = gym.policies.policy_from_name(
        "openai", model="qwen", base_url="http://h:1/v1", temperature=1.0
    )
    assert isinstance(policy, gym.OpenAIPolicy)
    assert policy.params()["temperature"] == 1.0 and policy.base_url == "http://h:1/v1"
    policy.close()


def test_local_with_options():
    policy = gym.policies.policy_from_name("local", max_new_tokens=32, seed=4)
    assert policy.params()["max_new_tokens"] == 32 and policy.params()["seed"] == 4


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(gym.ConfigError) as info:
        gym.policies.policy_from_name("gpt")
    for name in POLICIES:
        assert name in str(info.value)


def test_bad_options_are_config_errors():
    with pytest.raises(gym.ConfigError, match="model"):
        gym.policies.policy_from_name("openai")
    with pytest.raises(gym.ConfigError, match="temperatur"):
        gym.policies.policy_from_name("local", temperatur=1.0)
    with pytest.raises(
        gym.ConfigError, match="unexpected keyword argument .model.; its options: calls"
    ):
        gym.policies.policy_from_name("noop", model="x")
