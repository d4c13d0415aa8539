"""The red-team suite's vocabulary: rows, attacks, the registry, random names and markers.

An `Attack` is one adversarial check with a name, the environments it applies to, what
is expected of boxgym and how to find out: its `Attack.run` returns a `Finding` (what
was observed, and whether the expectation held). The registry maps names to attacks;
modules of attack definitions add theirs with `register` (see `load_module`).
"""

from __future__ import annotations

import importlib
import keyword
import random
import string
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from gym._core._errors import ConfigError
from gym._envs._registry import kind_of

if TYPE_CHECKING:
    from gym._redteam._canary import Canaries

__all__ = [
    "ATTACKS",
    "Attack",
    "Context",
    "Finding",
    "Kind",
    "Names",
    "Row",
    "load_module",
    "plan",
    "register",
    "representatives",
    "selected",
]

Kind = Literal["attack", "fault"]


class Row(BaseModel):
    """One line of the suite's table (and of ``gym redteam --json``)."""

    name: str
    """The attack or fault, with its variant in brackets."""
    kind: Kind
    """``attack`` (something an agent does) or ``fault`` (something that breaks under us)."""
    env: str
    """The environment it ran in (``-`` for the harness as a whole)."""
    expected: str
    """What boxgym must do."""
    observed: str
    """What happened."""
    held: bool
    """Whether what happened is what was expected."""
    covers: list[str] = Field(default_factory=list)
    """The environments this row stands for (same family, same code path), ``env`` included;
    empty when it stands for its own ``env`` alone (and in reports made before it existed)."""
    gap: str = ""
    """A known gap: who closes it, when the row is not expected to hold yet."""
    seconds: float = 0.0
    """Wall-clock seconds the row took."""


@dataclass(frozen=True)
class Finding:
    """What one run of an attack observed, and whether its expectation held."""

    observed: str
    held: bool


@dataclass
class Context:
    """What a suite run shares: its random source, host canaries and switches.

    Attributes:
        rng: the run's random source (names and paths differ per run unless seeded).
        canaries: host-side canaries (a listening socket, a planted secret).
        label: a run label unique to this suite run.
        destructive: whether faults that disturb the shared engine may run.
        runtime: the OCI runtime the sandboxes run under (``runc``, ``runsc``).
        env_kwargs: extra keyword arguments for every environment made (tests use it).
        seed: the run's seed (what a row draws a sample of tasks from, so a run replays).
        long: whether the long rows run: a sampled row then grades every task.
    """

    rng: random.Random
    canaries: Canaries
    label: str
    destructive: bool = False
    runtime: str = "runc"
    seed: int = 0
    long: bool = False
    env_kwargs: dict[str, object] = field(default_factory=dict)
    shared: dict[str, Any] = field(default_factory=dict)
    """What rows of one run share (the faults' run store)."""

    def close(self) -> None:
        """Remove what the rows shared (the faults' run store and its folder)."""
        for value in self.shared.values():
            close = getattr(value, "close", None)
            if callable(close):
                close()
        self.shared.clear()

    def names(self) -> Names:
        """Fresh random names and markers (with the canaries' coordinates in its notes)."""
        names = Names(random.Random(self.rng.getrandbits(64)))
        names.notes.update(
            canary_port=str(self.canaries.port),
            secret_name=self.canaries.secret_name,
            secret=self.canaries.secret,
            canary_folder=str(self.canaries.folder),
            canary_digest=self.canaries.folder_digest(),
            runtime=self.runtime,
        )
        return names


class Attack:
    """One adversarial check. Subclasses implement `run`.

    Attributes:
        name: unique name (``family.attack[variant]``).
        kind: ``attack`` or ``fault``.
        envs: environment ids it applies to (``-`` for harness-wide faults).
        expected: what boxgym must do, in a few words.
        gap: a known gap that keeps it from holding today, and who closes it.
        fast: part of the quick subset (the default test suite runs it).
        solo: must run alone (it patches process-wide state or measures the host).
        destructive: disturbs the shared engine; runs only when asked to.
        long: takes tens of minutes on 2 cores; runs only when asked to (``--long``).
    """

    name: str = ""
    kind: Kind = "attack"
    envs: tuple[str, ...] = ()
    expected: str = ""
    gap: str = ""
    fast: bool = False
    solo: bool = False
    destructive: bool = False
    long: bool = False

    def run(self, ctx: Context, env_id: str) -> Finding:
        """Carry the attack out in one environment and judge what happened."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


ATTACKS: dict[str, Attack] = {}
"""Every registered attack and fault, by name."""


def register(*attacks: Attack) -> None:
    """Add attacks to the registry (a module of attack definitions calls this).

    Raises:
        ConfigError: a name is empty or already taken, or an attack names no environment.
    """
    for attack in attacks:
        if not attack.name or attack.name in ATTACKS:
            raise ConfigError(f"attack name {attack.name!r} is empty or registered twice")
        if not attack.envs:
            raise ConfigError(f"attack {attack.name!r} names no environment")
        ATTACKS[attack.name] = attack


def load_module(module: str) -> None:
    """Import a module of attack definitions (it calls `register` when imported).

    Raises:
        ConfigError: the module cannot be imported.
    """
    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(f"cannot import attack module {module!r}: {exc}") from exc


def selected(
    names: Iterable[str] = (),
    families: Iterable[str] = (),
    *,
    fast: bool = False,
    kinds: Iterable[str] = ("attack", "fault"),
    every_env: bool = True,
) -> Iterator[tuple[Attack, str]]:
    """The (attack, env id) pairs to run, in registry order (see `plan` for the arguments)."""
    for attack, env_id, _ in plan(names, families, fast=fast, kinds=kinds, every_env=every_env):
        yield attack, env_id


def plan(
    names: Iterable[str] = (),
    families: Iterable[str] = (),
    *,
    fast: bool = False,
    kinds: Iterable[str] = ("attack", "fault"),
    every_env: bool = True,
) -> Iterator[tuple[Attack, str, list[str]]]:
    """The rows to run: (attack, env id, the envs the row covers), in registry order.

    Args:
        names: only attacks whose name starts with one of these (all if empty).
        families: only these environment families (the kinds manifests declare:
            ``code``, ``sql``, ``support``...; ``harness``) or env ids.
        fast: only the quick subset (each of its attacks in its first environment).
        kinds: ``attack``, ``fault`` or both.
        every_env: each attack in every environment it applies to; otherwise in one
            representative environment per family (see `representatives`), the row
            covering the others.
    """
    wanted, fams, kind_set = tuple(names), set(families), set(kinds)
    for index, attack in enumerate(ATTACKS.values()):
        if wanted and not attack.name.startswith(wanted):
            continue
        if (fast and not attack.fast) or attack.kind not in kind_set:
            continue
        envs = [e for e in attack.envs if not fams or e in fams or family_of(e) in fams]
        groups: dict[str, list[str]]
        if fast:
            groups = {e: [] for e in envs if e == attack.envs[0]}
        elif every_env:
            groups = {e: [] for e in envs}
        else:
            groups = representatives(envs, index)
        yield from ((attack, env_id, covers) for env_id, covers in groups.items())


def representatives(envs: Iterable[str], index: int) -> dict[str, list[str]]:
    """One environment per family of ``envs``, mapped to the envs of that family it covers.

    The environments of one family share the sandbox, the tools and (within the envs an
    attack names) the grading path, so an attack run in one of them covers the others.
    The representative rotates with the attack's ``index`` in the registry, so that the
    suite as a whole still runs in every environment. A family of one env covers none
    but itself (an empty list).
    """
    by_family: dict[str, list[str]] = {}
    for env_id in envs:
        by_family.setdefault(family_of(env_id), []).append(env_id)
    return {
        group[index % len(group)]: (group if len(group) > 1 else []) for group in by_family.values()
    }


def family_of(env_id: str) -> str:
    """The family an env id belongs to for ``--family`` (``harness`` for ``-``).

    The kind its manifest declares (``code``, ``sql``...; see `gym.register`), or the id
    itself when it declares none.
    """
    return "harness" if env_id == "-" else kind_of(env_id)


class Names:
    """Random names, obfuscated strings and markers for one attack run.

    Every run draws new ones, so no grader can know them in advance. A marker is a
    token the attack prints: a *ran* marker proves a probe ran, a *breach* marker is
    printed only if containment failed. Markers never appear whole in the command
    that prints them (it is split in two), so an echoed command cannot fake one.
    """

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.ran: list[str] = []
        self.breaches: list[str] = []
        self.notes: dict[str, str] = {}
        """Values a script chose that its observers need (a token sent to a canary)."""

    def hexed(self, n: int = 12) -> str:
        """A random lowercase hex string."""
        return f"{self.rng.getrandbits(4 * n):0{n}x}"

    def ident(self) -> str:
        """A random Python identifier (also a safe file or folder name)."""
        while True:
            first = self.rng.choice(string.ascii_lowercase)
            rest = "".join(self.rng.choices(string.ascii_lowercase + string.digits, k=7))
            name = first + rest
            if not keyword.iskeyword(name):
                return name

    def py_str(self, text: str) -> str:
        """A Python expression that evaluates to ``text`` without spelling it out."""
        style = self.rng.randrange(4)
        if style == 0:
            cut = self.rng.randrange(1, max(2, len(text)))
            return f"{text[:cut]!r} + {text[cut:]!r}"
        if style == 1:
            return "''.join(map(chr, " + repr([ord(c) for c in text]) + "))"
        if style == 2:
            return f"bytes.fromhex({text.encode().hex()!r}).decode()"
        return f"{text[::-1]!r}[::-1]"

    def token(self, kind: str) -> tuple[str, str]:
        """A fresh marker of a kind (``RAN`` or ``BREACH``), in two halves to print joined."""
        bucket = self.ran if kind == "RAN" else self.breaches
        token = f"{kind}-{self.hexed(16)}"
        bucket.append(token)
        cut = len(kind) + 5
        return token[:cut], token[cut:]

    def ran_sh(self) -> str:
        """A shell command printing a fresh *ran* marker."""
        head, tail = self.token("RAN")
        return f"printf '%s%s\\n' '{head}' '{tail}'"

    def breach_sh(self, what: str) -> str:
        """A shell command printing a fresh *breach* marker and a word on what broke."""
        head, tail = self.token("BREACH")
        return f"printf '%s%s %s\\n' '{head}' '{tail}' '{what}'"

    def ran_py(self) -> str:
        """A Python expression printing a fresh *ran* marker."""
        head, tail = self.token("RAN")
        return f"print({head!r} + {tail!r}, flush=True)"

    def breach_py(self, what: str) -> str:
        """A Python expression printing a fresh *breach* marker and what broke."""
        head, tail = self.token("BREACH")
        return f"print({head!r} + {tail!r}, {what!r}, flush=True)"

    def ran_sql(self) -> str:
        """A SQL expression whose value is a fresh *ran* marker."""
        head, tail = self.token("RAN")
        return f"'{head}' || '{tail}'"

    def breach_sql(self) -> str:
        """A SQL expression whose value is a fresh *breach* marker."""
        head, tail = self.token("BREACH")
        return f"'{head}' || '{tail}'"

    def judge(self, text: str) -> Finding:
        """Whether every *ran* marker and no *breach* marker shows in ``text``."""
        breached = [line for line in text.splitlines() if any(b in line for b in self.breaches)]
        if breached:
            return Finding(
                "breach: " + "; ".join(line.strip()[:160] for line in breached[:3]), False
            )
        missing = [r for r in self.ran if r not in text]
        if missing:
            return Finding(f"{len(missing)}/{len(self.ran)} probes did not run to the end", False)
        return Finding(f"{len(self.ran)} probes ran, no breach", True)
