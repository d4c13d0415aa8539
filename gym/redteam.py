"""The red team, for authors of attacks: an environment family's, or a project's own.

An attack is one adversarial check: what it does (usually one scripted episode through an
environment's normal tools), what boxgym must do about it, and how to find out. `gym
redteam` runs every registered attack and prints one `Row` per attack and environment::

    >>> from gym.redteam import Expect, ScriptAttack, register, write
    >>> attack = ScriptAttack(
    ...     name="mypkg.plant_conftest",
    ...     envs=("boxgym/PyRepo-v0",),
    ...     tasks={"*": "wordstats-top-n"},
    ...     script=lambda names, task, env: [write("conftest.py", "import os")],
    ...     expect=Expect(flags=frozenset({"planted_hook"})),
    ... )
    >>> attack.expected
    'fail, flag planted_hook'
    >>> register(attack)                                  # doctest: +SKIP

A family ships its attacks in a module that calls `register` when imported, and names
it in its ``boxgym.toml`` (``attacks = "attacks"``, a module of the folder) or in
``gym.register(..., attacks="mypkg.attacks")``; `gym redteam` loads the attacks of every
registered family with boxgym's own. An attack that is not one scripted episode
subclasses `Attack` and implements `Attack.run`, returning a `Finding`. `Names` draws
the random names and the markers a probe prints (a fresh set per run, so that no grader
can know them in advance); docs/security.md has the rules every attack keeps.
"""

from gym._redteam._core import ATTACKS, Attack, Context, Finding, Names, Row, register
from gym._redteam._episode import (
    AnyTask,
    AttackPolicy,
    Expect,
    ScriptAttack,
    bash,
    observations,
    sql,
    write,
)
from gym._redteam._suite import Report, registered, run_suite

__all__ = [
    "ATTACKS",
    "AnyTask",
    "Attack",
    "AttackPolicy",
    "Context",
    "Expect",
    "Finding",
    "Names",
    "Report",
    "Row",
    "ScriptAttack",
    "bash",
    "observations",
    "register",
    "registered",
    "run_suite",
    "sql",
    "write",
]
