"""Running and reporting benchmarks from Python, for people who evaluate agents.

What ``gym run``, ``gym report``, ``gym compare``, ``gym gate``, ``gym regrade`` and
``gym env validate`` do on the command line, as functions::

    >>> from gym.runs import RunConfig, Store, build_report, run
    >>> store = Store()              # trajectories/runs.db, or GYM_DB_URL  # doctest: +SKIP
    >>> config = RunConfig(envs=["boxgym/PyRepo-v0"], policy="oracle", k=2)
    >>> progress = run(config, store=store)                         # doctest: +SKIP
    >>> build_report(store, config.run_id).overall.pass_at_k[1]    # doctest: +SKIP

A run is planned (`plan`: one `Job` per episode, ids by hash, so running it again
resumes), its episodes run by an `Executor` (`LocalExecutor` threads here,
`RayExecutor` on a Ray cluster) and committed to the `Store`, which keeps each run's
`RunStatus` (running, stopped, finished, failed, interrupted; `Store.run_status`). A
`Report` gives pass@k, pass^k, bootstrap intervals and slices; `compare` pairs two
runs; `gate` checks a run against `Rule`s; `regrade_run` re-scores stored final
states with today's graders; `write_records` writes training records (never the
eval split); `validate_env` checks an environment's tasks (the oracle passes, noop
fails, perturbation is flagged, grading is deterministic). `run_episode` is one
episode, without a store.
"""

from gym._core._renamed import renamed
from gym._reports._records import write_records
from gym._reports._report import (
    Comparison,
    GateResult,
    Report,
    Rule,
    build_report,
    compare,
    gate,
    load_rules,
)
from gym._reports._stats import bootstrap_ci, paired_bootstrap, pass_at_k, pass_hat_k
from gym._run._executor import EpisodeWork, Executor, Finished, Job, LocalExecutor, NamedPolicy
from gym._run._ray import RayExecutor
from gym._run._ray_cluster import LocalRayCluster
from gym._run._regrade import regrade_run
from gym._run._rollout import SYSTEM_PROMPT, EpisodeResult, run_episode
from gym._run._runner import SUITES, RunConfig, RunProgress, plan, run
from gym._run._validate import TaskCheck, validate_env
from gym._store import RunState, RunStatus, Store, default_url

__all__ = [
    "SUITES",
    "SYSTEM_PROMPT",
    "Comparison",
    "EpisodeResult",
    "EpisodeWork",
    "Executor",
    "Finished",
    "GateResult",
    "Job",
    "LocalExecutor",
    "LocalRayCluster",
    "NamedPolicy",
    "RayExecutor",
    "Report",
    "Rule",
    "RunConfig",
    "RunProgress",
    "RunState",
    "RunStatus",
    "Store",
    "TaskCheck",
    "bootstrap_ci",
    "build_report",
    "compare",
    "default_url",
    "gate",
    "load_rules",
    "paired_bootstrap",
    "pass_at_k",
    "pass_hat_k",
    "plan",
    "regrade_run",
    "run",
    "run_episode",
    "validate_env",
    "write_records",
]

__getattr__ = renamed("gym.runs", {"export_records": "write_records"}, globals())
"""``export_records`` is `write_records` (an export is the final state of an episode)."""
