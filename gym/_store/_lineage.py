"""Where a forked episode comes from: its parent episode and the step it was forked at.

A branch of `ContainerEnv.fork` is a full episode, stored as any other (steps, verdict),
plus a `LineageRow`: a table of its own (``episode_lineage``), so stores written before
it existed keep working. A read-write open creates it; an episode without a row began at
a reset. The parent is named by id, not by a foreign key: the parent may be stored after
its branches, under a run of its own, or not at all.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlmodel import Field, SQLModel

__all__ = ["LineageRow", "lineage_tree"]


class LineageRow(SQLModel, table=True):
    """A forked episode's parent and fork step, written with the episode."""

    __tablename__ = "episode_lineage"

    episode_id: str = Field(foreign_key="episodes.id", primary_key=True)
    """The forked episode (the branch)."""
    parent_id: str = Field(index=True)
    """The episode it was forked from (its stored id)."""
    fork_step: int
    """Steps of the parent the branch shares: its first own step has this index."""
    branch: int = 0
    """Its index among the branches of its fork (0-based)."""


def lineage_tree(rows: Sequence[LineageRow]) -> dict[str, list[LineageRow]]:
    """Parent id -> its branches (by fork step, then branch index), from lineage rows."""
    tree: dict[str, list[LineageRow]] = {}
    for row in sorted(rows, key=lambda r: (r.fork_step, r.branch, r.episode_id)):
        tree.setdefault(row.parent_id, []).append(row)
    return tree
