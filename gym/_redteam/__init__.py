"""Red-team suite: adversarial policies and injected faults, judged from the outside.

For people who check that boxgym's containment and grading hold (``gym redteam``), and
for modules of attack definitions that extend the suite::

    from gym._redteam import Expect, ScriptAttack, register, write

    register(ScriptAttack(name="pytest.my_hack", envs=("boxgym/PyRepo-v0",),
                          tasks={"*": "wordstats-top-n"},
                          script=lambda names, task, env: [write("x.py", "...")],
                          expect=Expect(flags=frozenset({"planted_hook"}))))

Every attack acts only through an environment's normal tools, runs through the normal
rollout, and is judged by the episode's outcome, reward and flags, the markers its
probes print, and what the host sees (``docker inspect``, canaries, the run store).
"""

from gym._redteam._core import ATTACKS, Attack, Context, Finding, Names, Row, load_module, register
from gym._redteam._episode import AttackPolicy, Expect, ScriptAttack, bash, sql, write
from gym._redteam._suite import Report, load_builtin, registered, run_suite

__all__ = [
    "ATTACKS",
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
    "load_builtin",
    "load_module",
    "register",
    "registered",
    "run_suite",
    "sql",
    "write",
]
