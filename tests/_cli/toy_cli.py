"""A `gym` command line with the toy family registered and a slowed oracle, for CLI tests
that watch a run while it runs (``python -c TOY_GYM run toy/Answer-v0 --policy slow-oracle``,
with ``PYTHONPATH`` holding tests/ and ``TOY_SLOW_S`` the seconds per step)."""

TOY_GYM = """
import os, sys, time
import toy_env
import gym, gym.policies
from gym._cli import main

class SlowOracle(gym.OraclePolicy):
    name = "slow-oracle"

    def act(self, messages, tools):
        time.sleep(float(os.environ.get("TOY_SLOW_S", "0.2")))
        return super().act(messages, tools)

gym.policies.POLICIES["slow-oracle"] = SlowOracle
sys.argv[0] = "gym"
main()
"""
"""`gym` with the toy family registered and a slowed oracle (``--policy slow-oracle``)."""
