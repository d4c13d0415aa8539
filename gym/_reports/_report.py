"""Reports over stored runs: per environment and per slice, comparisons, gates."""

from __future__ import annotations

import tomllib
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gym._core._errors import ConfigError
from gym._reports._stats import (
    TaskCounts,
    bootstrap_ci,
    paired_bootstrap,
    pass_at_k,
    pass_hat_k,
    pass_rate_ci,
    transitions,
)
from gym._store import EpisodeRow, RunStatus, Store

__all__ = [
    "Comparison",
    "GateResult",
    "Group",
    "Metric",
    "Report",
    "build_report",
    "compare",
    "gate",
    "task_scores",
]


class Metric(BaseModel):
    """A statistic with its 95% interval (docs/statistics.md: which interval where)."""

    value: float
    lo: float
    hi: float
    interval: str = "bootstrap"
    """``clopper-pearson`` (pass@1, pass^1: exact binomial) or ``bootstrap`` (over tasks)."""


class Group(BaseModel):
    """Statistics of a set of episodes (an environment, a slice, or everything)."""

    name: str
    """Environment id, ``key=value`` slice, or ``all``."""
    episodes: int
    """Episodes committed (infra errors included)."""
    tasks: int
    """Distinct tasks."""
    passed: int
    failed: int
    infra_error: int
    """Excluded from every rate, always shown."""
    pass_at_1: Metric
    pass_at_k: dict[int, Metric] = Field(default_factory=dict)
    """Unbiased pass@k (Chen et al.) for k = 2..min samples per task."""
    pass_hat_k: dict[int, Metric] = Field(default_factory=dict)
    """pass^k (all of k samples pass) for k = 1..min samples per task."""
    mean_reward: Metric
    verified: int = 0
    """Passed episodes with no flags at all."""
    flags: dict[str, int] = Field(default_factory=dict)
    """Count of each flag kind."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    mean_duration_s: float = 0.0
    """Mean wall-clock seconds per episode."""
    tokens_per_success: float | None = None
    """Total tokens divided by passed episodes (cost per success)."""
    valid_call_rate: float | None = None
    """Steps that were a valid call of an offered tool over all steps (None: no steps)."""


class Report(BaseModel):
    """A run's report."""

    run_id: str
    label: str = ""
    """The run's label (``gym run --label``)."""
    config: dict[str, Any]
    overall: Group
    envs: list[Group]
    slices: list[Group]
    status: RunStatus | None = None
    """Where the run stands: a run in progress or stopped has partial figures."""


def _per_task(episodes: Iterable[EpisodeRow]) -> dict[tuple[str, str], list[EpisodeRow]]:
    out: dict[tuple[str, str], list[EpisodeRow]] = defaultdict(list)
    for e in episodes:
        out[(e.env_id, e.task_id)].append(e)
    return out


def _metric(values: list[float], seed: int) -> Metric:
    if not values:
        return Metric(value=float("nan"), lo=float("nan"), hi=float("nan"))
    lo, hi = bootstrap_ci(values, seed=seed)
    return Metric(value=sum(values) / len(values), lo=lo, hi=hi)


def _rate_metric(counts: list[TaskCounts]) -> Metric:
    """pass@1 with its exact binomial interval (it does not collapse at 0/n or n/n)."""
    value, lo, hi = pass_rate_ci(counts)
    return Metric(value=value, lo=lo, hi=hi, interval="clopper-pearson")


def group_stats(
    name: str,
    episodes: list[EpisodeRow],
    flags: dict[str, list[str]],
    seed: int = 0,
    calls: dict[str, tuple[int, int]] | None = None,
) -> Group:
    """Statistics of one group of episodes (``calls``: `Store.call_counts`)."""
    graded = [e for e in episodes if e.outcome != "infra_error"]
    tasks = _per_task(graded)
    counts = [(len(v), sum(e.outcome == "pass" for e in v)) for v in tasks.values()]
    min_n = min((n for n, _ in counts), default=0)
    passed = sum(c for _, c in counts)
    tokens = sum(e.prompt_tokens + e.completion_tokens for e in episodes)
    flag_counts = Counter(f for e in episodes for f in flags.get(e.id, []))
    group = Group(
        name=name,
        episodes=len(episodes),
        tasks=len(_per_task(episodes)),
        passed=passed,
        failed=len(graded) - passed,
        infra_error=len(episodes) - len(graded),
        pass_at_1=_rate_metric(counts),
        mean_reward=_metric(
            [sum(e.reward or 0.0 for e in v) / len(v) for v in tasks.values()], seed
        ),
        verified=sum(1 for e in graded if e.outcome == "pass" and not flags.get(e.id)),
        flags=dict(sorted(flag_counts.items())),
        prompt_tokens=sum(e.prompt_tokens for e in episodes),
        completion_tokens=sum(e.completion_tokens for e in episodes),
        mean_duration_s=sum(e.duration_s for e in episodes) / max(len(episodes), 1),
        tokens_per_success=tokens / passed if passed and tokens else None,
        valid_call_rate=_valid_call_rate(episodes, calls or {}),
    )
    for k in range(1, min_n + 1):
        if k == 1:
            group.pass_hat_k[k] = group.pass_at_1  # the same rate, the same interval
            continue
        group.pass_at_k[k] = _metric([pass_at_k(n, c, k) for n, c in counts], seed)
        group.pass_hat_k[k] = _metric([pass_hat_k(n, c, k) for n, c in counts], seed)
    return group


def _valid_call_rate(episodes: list[EpisodeRow], calls: dict[str, tuple[int, int]]) -> float | None:
    counts = [calls[e.id] for e in episodes if e.id in calls]
    steps = sum(n for _, n in counts)
    return sum(ok for ok, _ in counts) / steps if steps else None


def build_report(store: Store, run_id: str, *, seed: int = 0) -> Report:
    """The report of a stored run (by id or unique prefix), read in one `Store.snapshot`."""
    with store.snapshot():  # a live run: its episodes, verdicts and status of one moment
        run = store.run(run_id)
        episodes = store.episodes(run.id)
        verdicts = store.verdicts(run.id)
        calls = store.call_counts(run.id)
        status = store.run_status(run.id)
    flags = {eid: [f["name"] for f in v.flags] for eid, v in verdicts.items()}
    by_env: dict[str, list[EpisodeRow]] = defaultdict(list)
    by_slice: dict[str, list[EpisodeRow]] = defaultdict(list)
    for e in episodes:
        by_env[e.env_id].append(e)
        for key, value in sorted({**e.tags, "split": e.split}.items()):
            by_slice[f"{key}={value}"].append(e)
    return Report(
        run_id=run.id,
        label=run.label,
        config=run.config,
        overall=group_stats("all", episodes, flags, seed, calls),
        envs=[group_stats(k, v, flags, seed, calls) for k, v in sorted(by_env.items())],
        slices=[group_stats(k, v, flags, seed, calls) for k, v in sorted(by_slice.items())],
        status=status,
    )


class Comparison(BaseModel):
    """Run B against run A on the tasks both ran."""

    run_a: str
    run_b: str
    tasks: int
    """Shared (environment, task) pairs."""
    pass_at_1_a: float
    pass_at_1_b: float
    difference: Metric
    """Mean per-task pass@1 of B minus A, with a paired bootstrap interval."""
    transitions: dict[str, int]
    """maintained, improved, regressed, persistent_failure (a task passes if pass@1 >= 0.5)."""
    regressed: list[str] = Field(default_factory=list)
    """``env task`` of each regressed task."""


def _task_scores(episodes: list[EpisodeRow]) -> dict[tuple[str, str], float]:
    """(env, task) -> pass@1 over the graded episodes (infra errors left out)."""
    graded = [e for e in episodes if e.outcome != "infra_error"]
    return {
        key: sum(e.outcome == "pass" for e in v) / len(v) for key, v in _per_task(graded).items()
    }


def task_scores(store: Store, run_id: str) -> dict[tuple[str, str], float]:
    """(env, task) -> pass@1 of a run's graded episodes, the per-task score `compare` pairs."""
    with store.snapshot():
        return _task_scores(store.episodes(store.run(run_id).id))


def compare(store: Store, run_a: str, run_b: str, *, seed: int = 0) -> Comparison:
    """Pair the tasks two runs share and compare their pass@1."""
    with store.snapshot():
        a_id, b_id = store.run(run_a).id, store.run(run_b).id
        a, b = _task_scores(store.episodes(a_id)), _task_scores(store.episodes(b_id))
    shared = sorted(set(a) & set(b))
    if not shared:
        raise ConfigError(f"runs {a_id} and {b_id} share no graded tasks")
    sa, sb = [a[k] for k in shared], [b[k] for k in shared]
    diff, lo, hi = paired_bootstrap(sa, sb, seed=seed)
    pa, pb = [s >= 0.5 for s in sa], [s >= 0.5 for s in sb]
    return Comparison(
        run_a=a_id,
        run_b=b_id,
        tasks=len(shared),
        pass_at_1_a=sum(sa) / len(sa),
        pass_at_1_b=sum(sb) / len(sb),
        difference=Metric(value=diff, lo=lo, hi=hi),
        transitions=transitions(pa, pb),
        regressed=[f"{k[0]} {k[1]}" for k, x, y in zip(shared, pa, pb, strict=True) if x and not y],
    )


class Rule(BaseModel):
    """One gate rule (from a TOML file's ``[[rule]]`` tables)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["min_pass_rate", "max_drop", "no_regression", "max_infra_rate"]
    value: float = 0.0
    env: str | None = None
    """Restrict to one environment: its id, or the name a report prints (``PyFunc-v0``)."""
    slice: str | None = None
    """Restrict to one ``key=value`` slice (for no_regression and rates)."""
    blocking: bool = True


class GateResult(BaseModel):
    """The outcome of one rule."""

    rule: Rule
    passed: bool
    detail: str


def load_rules(path: Path) -> list[Rule]:
    """Rules from a TOML file with ``[[rule]]`` tables.

    Raises:
        ConfigError: the file cannot be read, has no ``[[rule]]`` table, has another
            top-level key, or a rule has an unknown key or a wrong value.
    """
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read gate rules {path}: {exc}") from exc
    rules = []
    for number, table in enumerate(_rule_tables(path, data), 1):
        try:
            rules.append(Rule.model_validate(table))
        except ValidationError as exc:
            raise _rule_problem(path, number, exc) from None
    return rules


_RULE_HELP = (
    'each rule is a [[rule]] table: kind = "min_pass_rate", "max_drop", "no_regression" '
    'or "max_infra_rate", value, and optionally env, slice, blocking (docs/statistics.md, '
    "'Gate rules')"
)


def _rule_tables(path: Path, data: dict[str, Any]) -> list[Any]:
    """The file's ``[[rule]]`` tables; anything else at the top level is refused."""
    unknown = sorted(set(data) - {"rule"})
    if unknown:
        raise ConfigError(
            f"gate rules {path}: unknown top-level key {', '.join(unknown)}; {_RULE_HELP}"
        )
    tables = data.get("rule")
    if not isinstance(tables, list) or not tables:
        raise ConfigError(f"gate rules {path}: no [[rule]] table; {_RULE_HELP}")
    return tables


def _rule_problem(path: Path, number: int, exc: ValidationError) -> ConfigError:
    """A rule the model refused, said by its place in the file and its key."""
    parts = []
    for err in exc.errors(include_url=False):
        key = ".".join(str(p) for p in err["loc"]) or "the rule"
        if err["type"] == "extra_forbidden":
            parts.append(f"{key}: unknown key (allowed: {', '.join(Rule.model_fields)})")
        elif err["type"] == "missing":
            parts.append(f"{key}: missing, a required key")
        else:
            parts.append(f"{key} = {err.get('input')!r}: {err['msg']}")
    return ConfigError(f"gate rules {path}: [[rule]] number {number}: " + "; ".join(parts))


def _env_matches(rule_env: str, env_id: str) -> bool:
    """A rule's ``env`` names an episode's environment by id or by its short name."""
    return rule_env in (env_id, env_id.removeprefix("boxgym/"))


def _subset(episodes: list[EpisodeRow], rule: Rule) -> list[EpisodeRow]:
    out = []
    for e in episodes:
        if rule.env and not _env_matches(rule.env, e.env_id):
            continue
        if rule.slice:
            key, _, value = rule.slice.partition("=")
            if {**e.tags, "split": e.split}.get(key) != value:
                continue
        out.append(e)
    return out


def _rate(episodes: list[EpisodeRow]) -> float:
    graded = [e for e in episodes if e.outcome != "infra_error"]
    return sum(e.outcome == "pass" for e in graded) / len(graded) if graded else 0.0


def gate(
    store: Store, run_id: str, rules: list[Rule], baseline: str | None = None
) -> list[GateResult]:
    """Check a run against rules (and a baseline run where a rule needs one).

    A rule whose ``env`` and ``slice`` match no episode of the run (or of the baseline,
    where it reads one) fails: it checked nothing.
    """
    with store.snapshot():
        run_eps = store.episodes(store.run(run_id).id)
        base_eps = store.episodes(store.run(baseline).id) if baseline else None
    return [_check_rule(rule, run_eps, base_eps) for rule in rules]


def _check_rule(
    rule: Rule, run_eps: list[EpisodeRow], base_eps: list[EpisodeRow] | None
) -> GateResult:
    """One rule over a run's episodes (and the baseline's, for the rules that compare)."""
    mine = _subset(run_eps, rule)
    if not mine:
        return GateResult(rule=rule, passed=False, detail=_no_match(rule, "the run"))
    if rule.kind != "max_infra_rate" and not _graded(mine):
        return GateResult(rule=rule, passed=False, detail=_none_graded("the run"))
    if rule.kind == "min_pass_rate":
        rate = _rate(mine)
        return GateResult(
            rule=rule, passed=rate >= rule.value, detail=f"pass rate {rate:.3f} (min {rule.value})"
        )
    if rule.kind == "max_infra_rate":
        rate = sum(e.outcome == "infra_error" for e in mine) / len(mine)
        return GateResult(
            rule=rule,
            passed=rate <= rule.value,
            detail=f"infra error rate {rate:.3f} (max {rule.value})",
        )
    if base_eps is None:
        raise ConfigError(f"rule {rule.kind} needs --baseline RUN")
    base = _subset(base_eps, rule)
    if not base:
        return GateResult(rule=rule, passed=False, detail=_no_match(rule, "the baseline"))
    if not _graded(base):
        return GateResult(rule=rule, passed=False, detail=_none_graded("the baseline"))
    if rule.kind == "max_drop":
        drop = _rate(base) - _rate(mine)
        return GateResult(
            rule=rule,
            passed=drop <= rule.value,
            detail=f"pass rate dropped {drop:.3f} (max {rule.value})",
        )
    regressed = _regressions(base, mine)
    return GateResult(
        rule=rule,
        passed=not regressed,
        detail=f"{len(regressed)} regressed: {', '.join(regressed[:5])}",
    )


def _no_match(rule: Rule, where: str) -> str:
    """Why a rule checked nothing: its filters, and what to fix."""
    filters = [f"{k} = {v!r}" for k, v in (("env", rule.env), ("slice", rule.slice)) if v]
    said = f" ({', '.join(filters)})" if filters else ""
    return (
        f"matched no episode of {where}{said}; `gym report RUN` lists its environments and slices"
    )


def _graded(episodes: list[EpisodeRow]) -> bool:
    return any(e.outcome != "infra_error" for e in episodes)


def _none_graded(where: str) -> str:
    return f"no episode of {where} it matched was graded (each an infra_error): it checked nothing"


def _regressions(base: list[EpisodeRow], run: list[EpisodeRow]) -> list[str]:
    """Tasks passing in the baseline that fail now, or that no graded episode checked now.

    A task the run has only infra errors of is not known to pass: a gate counts it.
    """
    a, b = _task_scores(base), _task_scores(run)
    ran = {(e.env_id, e.task_id) for e in run}
    failed = [f"{k[0]} {k[1]}" for k in sorted(set(a) & set(b)) if a[k] >= 0.5 > b[k]]
    unchecked = [f"{k[0]} {k[1]} (not graded)" for k in sorted(ran - set(b)) if a.get(k, 0) >= 0.5]
    return failed + unchecked
