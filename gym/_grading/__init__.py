"""Grading: exports of final state, trusted runners, trajectory flags, verdicts, code grading."""

from gym._grading._checks import (
    MEMORY_KILLS,
    RUNNER_HASH,
    CheckSpec,
    Finding,
    RunnerReport,
    expected_tests,
    grader_config,
    run_checks,
    tests_component,
)
from gym._grading._code import grade_code, report_flags, workspace_files
from gym._grading._diff import unified_diff
from gym._grading._export import Export, export_workspace, matches
from gym._grading._files import file_component
from gym._grading._judge import Judge, JudgeScore, PairwiseResult
from gym._grading._trajectory import (
    FLAG_KINDS,
    claim_flags,
    code_flags,
    command_flags,
    loop_flags,
    tool_flags,
)
from gym._grading._verdict import compose

__all__ = [
    "MEMORY_KILLS",
    "FLAG_KINDS",
    "RUNNER_HASH",
    "CheckSpec",
    "Finding",
    "claim_flags",
    "file_component",
    "tool_flags",
    "Export",
    "Judge",
    "JudgeScore",
    "PairwiseResult",
    "RunnerReport",
    "code_flags",
    "command_flags",
    "compose",
    "expected_tests",
    "export_workspace",
    "grade_code",
    "grader_config",
    "loop_flags",
    "matches",
    "report_flags",
    "run_checks",
    "tests_component",
    "unified_diff",
    "workspace_files",
]
