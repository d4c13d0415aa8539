"""Grading, for authors of environments and of graders.

An environment's ``grade`` receives the final state an episode left (`Export`, made
by `export_workspace` from the allowed paths only) and returns a `Verdict` composed
(`compose`) of components: `grade_code` runs hidden checks (`CheckSpec`) with the
trusted in-container grader in a fresh container from the pristine image;
`file_component` and `tests_component` build the usual components; the flag helpers
(`claim_flags`, `code_flags`, `command_flags`, `loop_flags`, `tool_flags`) read a
trajectory for forbidden side effects; `Judge` is the optional, cached LLM judge.

    >>> from gym.grading import export_workspace, grade_code
    >>> verdict = grade_code(task, export, image)  # doctest: +SKIP

docs/graders/ describes each shipped grader (docs/graders/boundary.md: what the
checker and the checked may see of each other).
"""

from gym._grading import (
    FLAG_KINDS,
    MEMORY_KILLS,
    CheckSpec,
    Export,
    Judge,
    JudgeScore,
    PairwiseResult,
    claim_flags,
    code_flags,
    command_flags,
    compose,
    export_workspace,
    file_component,
    grade_code,
    grader_config,
    loop_flags,
    matches,
    tests_component,
    tool_flags,
    unified_diff,
)
from gym._grading._replay import (
    REPLAY_VERSION,
    FileNode,
    FileTree,
    GoldReplay,
    compare_output,
    compare_trees,
    gold_uid,
    normalise_output,
    put_tree,
    read_file_tree,
    replay_gold,
    tree_archive,
    unexpected_changes,
)

__all__ = [
    "FLAG_KINDS",
    "MEMORY_KILLS",
    "REPLAY_VERSION",
    "CheckSpec",
    "Export",
    "FileNode",
    "FileTree",
    "GoldReplay",
    "Judge",
    "JudgeScore",
    "PairwiseResult",
    "claim_flags",
    "code_flags",
    "command_flags",
    "compare_output",
    "compare_trees",
    "compose",
    "export_workspace",
    "file_component",
    "gold_uid",
    "grade_code",
    "grader_config",
    "loop_flags",
    "matches",
    "normalise_output",
    "put_tree",
    "read_file_tree",
    "replay_gold",
    "tests_component",
    "tool_flags",
    "tree_archive",
    "unexpected_changes",
    "unified_diff",
]
