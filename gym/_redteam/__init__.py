"""Red-team suite: adversarial policies and injected faults, judged from the outside.

For people who check that boxgym's containment and grading hold (``gym redteam``). The
public front door for authors of attacks is `gym.redteam`; this package holds the
suite's engine and boxgym's own attacks and faults. The families' own attacks live in
their folders (``environments/sql/attacks.py``), named by their manifests.

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
