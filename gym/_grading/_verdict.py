"""Combining components and flags into one verdict."""

from __future__ import annotations

from gym._core._models import Component, Flag, Verdict

__all__ = ["compose"]


def compose(
    components: dict[str, Component], flags: list[Flag], *, grader: str, version: str
) -> Verdict:
    """A verdict from named components and flags.

    Gated components must all pass and no gating flag may be raised for ``pass``; the
    reward is then the weighted mean of the non-gated components (1.0 if none). A
    ``fail`` has reward 0.0.
    """
    gates_ok = all(c.passed for c in components.values() if c.gated) and bool(components)
    gating = [f for f in flags if f.gating]
    if not gates_ok or gating:
        why = [n for n, c in components.items() if c.gated and not c.passed]
        why += [f"flag {f.name}" for f in gating]
        return Verdict(
            outcome="fail",
            reward=0.0,
            components=components,
            flags=flags,
            reason="failed: " + ", ".join(why),
            grader=grader,
            grader_version=version,
        )
    partial = [c for c in components.values() if not c.gated]
    weight = sum(c.weight for c in partial)
    reward = sum(c.score * c.weight for c in partial) / weight if weight else 1.0
    return Verdict(
        outcome="pass",
        reward=reward,
        components=components,
        flags=flags,
        reason="all gated components passed",
        grader=grader,
        grader_version=version,
    )
