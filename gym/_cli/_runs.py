"""`gym run`, `report`, `compare`, `gate`, `view`, `export`, `regrade` and `runs`."""

from __future__ import annotations

import contextlib
import math
import os
import signal
import sys
import textwrap
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from gym._cli._app import (
    DbOpt,
    JsonFlag,
    RuntimeOpt,
    app,
    console,
    err,
    one_of,
    print_json,
    tasks_option,
    use_runtime,
)
from gym._cli._tables import fits, number, print_table, text, words
from gym._core._errors import ConfigError, StoreError
from gym._core._json import dumps
from gym._core._progress import RunEvents, progress
from gym._policy import POLICIES, USERS

if TYPE_CHECKING:
    from gym._run._runner import RunConfig
    from gym._store import RunRow, Store

__all__: list[str] = []


def make_executor(
    name: str,
    address: str | None,
    concurrency: int | None,
    *,
    stop: threading.Event | None = None,
    events: Callable[[dict[str, Any]], None] | None = None,
) -> Any:
    """The executor `gym run --executor` names: local threads or a Ray cluster.

    Args:
        name: ``local`` or ``ray``.
        address: the Ray cluster (ray only).
        concurrency: episodes at once; None: adaptive (local) or the cluster's CPUs (ray).
        stop: set to stop a local run (nothing new starts, finished episodes commit).
        events: receives a local run's scheduled and finished events.
    """
    if name == "local":
        from gym._run._executor import LocalExecutor

        return LocalExecutor(concurrency, stop=stop, events=events)
    if name == "ray":
        from gym._run._ray import RayExecutor

        return RayExecutor(address, workers=concurrency)
    raise ConfigError(f"--executor must be local or ray, not {name!r}")


def _policy_params(
    policy: str,
    model: str | None,
    base_url: str | None,
    temperature: float | None,
    replay: str | None,
    db: str | None,
    constrained: bool | None = None,
) -> dict[str, Any]:
    params: dict[str, Any] = {
        "model": model,
        "base_url": base_url,
        "temperature": temperature,
        "constrained": constrained,
    }
    if policy == "replay":
        if not replay:
            raise ConfigError("--policy replay needs --replay RUN[/EPISODE]")
        given = [_POLICY_FLAGS[k] for k, v in params.items() if v is not None]
        _refuse(given, "--policy replay: it acts the stored calls again, whatever model made them")
        params = {"source": replay, "db": _password_to_environment(db)}
    elif replay:
        raise ConfigError(f"--replay is read by --policy replay only (this run's is {policy})")
    params = {k: v for k, v in params.items() if v is not None}
    if policy != "replay":
        _check_policy_flags(policy, params)
    return params


_POLICY_FLAGS = {
    "model": "--model",
    "base_url": "--base-url",
    "temperature": "--temperature",
    "constrained": "--constrained/--unconstrained",
}
"""The flags of `gym run` that set a policy's options, by option."""


def _check_policy_flags(policy: str, params: dict[str, Any]) -> None:
    """Refuse, in the command's words, the flags a policy does not take and those it needs."""
    import inspect

    taken = inspect.signature(POLICIES[policy].__init__).parameters
    _refuse([_POLICY_FLAGS[k] for k in params if k not in taken], f"--policy {policy}")
    needed = [
        _POLICY_FLAGS[k]
        for k, p in taken.items()
        if k in _POLICY_FLAGS and p.default is inspect.Parameter.empty and k not in params
    ]
    if needed:
        raise ConfigError(f"--policy {policy} needs {' and '.join(needed)}")


def _refuse(flags: list[str], what: str) -> None:
    """Refuse the flags given that do not apply to ``what`` (none given: nothing)."""
    if flags:
        verb = "does" if len(flags) == 1 else "do"
        raise ConfigError(f"{', '.join(flags)} {verb} not apply to {what}")


def _env_ids(names: list[str], tasks: list[str] | None) -> list[str]:
    """The run's env ids (`expand_envs`); an unknown one after ``--tasks`` says why it is one."""
    from gym._core._errors import EnvNotFound
    from gym._run._runner import expand_envs

    try:
        return expand_envs(names)
    except EnvNotFound as exc:
        if not tasks or len(names) < 2:
            raise
        raise EnvNotFound(
            f"{exc} (an id after `--tasks ID` is read as an environment: repeat --tasks for "
            "each task id, or separate them with commas: --tasks a,b)"
        ) from None


def _user_params(
    user: str | None, model: str | None, base_url: str | None, seed: int | None
) -> dict[str, Any]:
    """The ``--user-*`` options as the user's settings (`gym.policies.user_from_name`)."""
    given = {"model": model, "base_url": base_url, "seed": seed}
    if user in (None, "scripted") and any(v is not None for v in given.values()):
        raise ConfigError(
            "--user-model, --user-base-url and --user-seed need --user local or openai"
        )
    return {k: v for k, v in given.items() if v is not None}


def _check_users(config: RunConfig) -> None:
    """Refuse a run whose tasks have a simulated user when ``--user`` names nobody to play it."""
    from gym._run._runner import plan

    if config.user is not None:
        return
    needing = sorted({job.task.id for job in plan(config) if job.task.user})
    if needing:
        more = f" and {len(needing) - 5} more" if len(needing) > 5 else ""
        shown = ", ".join(needing[:5]) + more
        raise ConfigError(
            f"{shown}: a simulated user answers the agent in these tasks (a `user` scenario); "
            "choose who plays it: --user local (a model on this CPU), --user openai "
            "--user-model NAME [--user-base-url URL], or --user scripted (their scripted "
            "turns only; the customer never answers)"
        )


def _summary(report: Any) -> dict[str, Any]:
    envs = {}
    for g in report.envs:
        envs[g.name] = {
            "episodes": g.episodes,
            "pass": g.passed,
            "fail": g.failed,
            "infra_error": g.infra_error,
            "pass@1": {"value": g.pass_at_1.value, "lo": g.pass_at_1.lo, "hi": g.pass_at_1.hi},
            "valid_call_rate": g.valid_call_rate,
        }
    status = report.status.model_dump(mode="json") if report.status else None
    return {"run_id": report.run_id, "status": status, "envs": envs}


_RUN_FLAGS = {
    "k": "-k",
    "seed": "--seed",
    "split": "--split",
    "limit": "--limit",
    "max_steps": "--max-steps",
    "runtime": "--runtime",
}
"""The flags of `gym run` that set a run's config, by key (those left at their default
are not written: ``k`` 1, ``seed`` 0, the others None)."""

_USER_FLAGS = {"model": "--user-model", "base_url": "--user-base-url", "seed": "--user-seed"}
"""The flags of `gym run` that set the simulated user's settings, by key."""


def run_command(run: RunRow, db: str | None) -> str | None:
    """The `gym run` command that makes the run, and so finishes it (same config, same id).

    Args:
        run: the stored run.
        db: the store's URL as the user gave it (``--db``, ``GYM_DB_URL``); None: the
            default store, which the command then leaves unnamed.

    Returns:
        The command, quoted for a POSIX shell, without ``--label`` when the label holds a
        character the terminal must not get raw (`clean`: the run keeps its stored label,
        which no id depends on), ``--db`` as the user typed it but for a
        password, which is never printed (`store_arg`); None for a run a training made
        (`gym train` resumes those) or one whose config no `gym run` gives (another
        program's).
    """
    import shlex

    from gym._core._text import clean

    config, params = run.config, dict(run.config.get("policy_params") or {})
    user = config.get("user_params") or {}
    if _by_training(run) or not _given_by_flags(config, params, user):
        return None
    args = ["gym", "run", *config["envs"], "--policy", run.policy]
    if "source" in params:  # --policy replay: its store is the run's (`_policy_params`)
        args += ["--replay", params.pop("source")]
        db = params.pop("db", None) or db  # the replayed store is the run's
    if "constrained" in params:
        args.append("--constrained" if params.pop("constrained") else "--unconstrained")
    args += [f for k, v in params.items() for f in (_POLICY_FLAGS[k], str(v))]
    if config.get("user"):
        args += ["--user", config["user"]]
        args += [f for k, v in user.items() for f in (_USER_FLAGS[k], str(v))]
    for key, flag in _RUN_FLAGS.items():
        if config.get(key) not in (None, {"k": 1, "seed": 0}.get(key)):
            args += [flag, str(config[key])]
    if config.get("tasks"):
        args += ["--tasks", ",".join(config["tasks"])]
    args += ["--label", run.label] if run.label and clean(run.label) == run.label else []
    return shlex.join(args + (["--db", store_arg(db)] if db else []))


def view_command(run_id: str, db: str | None) -> str:
    """The `gym view` command that opens the run, quoted for a POSIX shell (as `run_command`)."""
    import shlex

    return shlex.join(["gym", "view", run_id, *(["--db", store_arg(db)] if db else [])])


def store_arg(url: str) -> str:
    """The store's URL as the user typed it, its password (if any) left out.

    Not SQLAlchemy's rendering: that percent-encodes (``$`` as ``%24``), which is not
    what the user typed. The password is never printed; the database client takes it
    from ``PGPASSWORD`` or ``~/.pgpass`` (`finish_note` says so).
    """
    return _without_password(url)[0]


def _without_password(url: str) -> tuple[str, str | None]:
    """``url`` as typed with its password left out, and that password (None: it has none)."""
    scheme, sep, rest = url.partition("://")
    netloc, slash, path = rest.partition("/")
    userinfo, at, host = netloc.rpartition("@")
    if not sep or not at or ":" not in userinfo:
        return url, None
    user, _, password = userinfo.partition(":")
    return f"{scheme}://{user}@{host}{slash}{path}", urllib.parse.unquote(password)


def _password_to_environment(db: str | None) -> str | None:
    """``db`` without its password, which this process's database client reads from ``PGPASSWORD``.

    The replay policy's parameters are stored with the run and each of its episodes
    (shown by the viewer, exported), and a secret has no place there.
    """
    if db is None:
        return None
    url, password = _without_password(db)
    if password is not None:
        os.environ["PGPASSWORD"] = password
    return url


def finish_note(command: str, db: str | None) -> str:
    """The command (that finishes a run, or views it), and where the store's password comes from.

    Said only when the command leaves a password out: the database client reads it there.
    """
    if db is None or store_arg(db) == db:
        return command
    return f"{command} (with the store's password in PGPASSWORD or ~/.pgpass: it is not shown)"


def _given_by_flags(config: dict[str, Any], params: dict[str, Any], user: dict[str, Any]) -> bool:
    """Whether `gym run`'s flags give every setting of the run's config."""
    known = {"envs", "policy", "policy_params", "user", "user_params", "tasks", *_RUN_FLAGS}
    return (
        bool(config.get("envs"))
        and set(config) <= known
        and set(params) <= {*_POLICY_FLAGS, "source", "db"}
        and set(user) <= set(_USER_FLAGS)
    )


@app.command()
def run(
    envs: Annotated[list[str], typer.Argument(help="Environment ids or suites (e.g. bundled).")],
    policy: Annotated[
        str,
        typer.Option(
            "--policy",
            "-p",
            callback=one_of(*POLICIES, "replay"),
            help=f"Who acts: {', '.join([*POLICIES, 'replay'])} (README.md#policies).",
        ),
    ] = "local",
    model: Annotated[str | None, typer.Option("--model", help="Model name (openai/local).")] = None,
    base_url: Annotated[
        str | None, typer.Option("--base-url", help="OpenAI-compatible URL.")
    ] = None,
    temperature: Annotated[
        float | None,
        typer.Option("--temperature", min=0.0, help="Sampling temperature (the policy's default)."),
    ] = None,
    constrained: Annotated[
        bool | None,
        typer.Option(
            "--constrained/--unconstrained",
            help="Constrain decoding to a valid tool call (local, tiny, openai; on by default).",
        ),
    ] = None,
    replay: Annotated[
        str | None, typer.Option("--replay", help="RUN or RUN/EPISODE to replay.")
    ] = None,
    user: Annotated[
        str | None,
        typer.Option(
            "--user",
            callback=one_of(*USERS),
            help="Who answers the agent in tasks with a simulated user: scripted (the "
            "task's turns), local or openai (a model plays the task's user scenario).",
        ),
    ] = None,
    user_model: Annotated[
        str | None, typer.Option("--user-model", help="The simulated user's model.")
    ] = None,
    user_base_url: Annotated[
        str | None, typer.Option("--user-base-url", help="OpenAI-compatible URL of the user.")
    ] = None,
    user_seed: Annotated[
        int | None,
        typer.Option("--user-seed", help="The simulated user's seed (default: each episode's)."),
    ] = None,
    k: Annotated[int, typer.Option("-k", min=1, help="Samples per task.")] = 1,
    concurrency: Annotated[
        str,
        typer.Option(
            "--concurrency",
            "-c",
            callback=_concurrency_opt,
            help="Episodes at once: a number, or auto (local: adapts to the machine's load; "
            "ray: the cluster's CPUs).",
        ),
    ] = "auto",
    executor: Annotated[
        str,
        typer.Option(
            "--executor", callback=one_of("local", "ray"), help="Where episodes run: local or ray."
        ),
    ] = "local",
    address: Annotated[
        str | None,
        typer.Option(
            "--address", help="Ray cluster HOST:PORT (default: RAY_ADDRESS, else this machine's)."
        ),
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="At most N tasks per env.")
    ] = None,
    tasks: Annotated[list[str] | None, tasks_option("Only these task ids")] = None,
    split: Annotated[
        str | None, typer.Option("--split", help="Only this split (train, eval, or any declared).")
    ] = None,
    seed: Annotated[
        int, typer.Option("--seed", min=0, max=2**63 - 1, help="Seed of the tasks' episodes.")
    ] = 0,
    max_steps: Annotated[
        int | None, typer.Option("--max-steps", min=1, help="Step budget override.")
    ] = None,
    retry_infra: Annotated[
        bool, typer.Option("--retry-infra", help="Rerun stored infra errors.")
    ] = False,
    label: Annotated[str, typer.Option("--label", help="A name for this run.")] = "",
    runtime: RuntimeOpt = None,
    events: Annotated[
        Path | None,
        typer.Option("--events", help="Append the run's events to this file (JSON lines)."),
    ] = None,
    db: DbOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Run a benchmark (resumable: the same command skips committed episodes).

    Ctrl-C or SIGTERM stops a local run: nothing new starts, every finished episode is
    committed, containers are removed, and the same command later finishes the run. A
    second signal (or any signal on Ray) leaves at once; what was committed stays.
    """
    from gym._policy import NamedUser, SimulatedUser
    from gym._reports._report import build_report
    from gym._run._executor import NamedPolicy
    from gym._run._runner import RunConfig
    from gym._run._runner import run as run_benchmark
    from gym._store import Store

    use_runtime(runtime)
    params = _policy_params(policy, model, base_url, temperature, replay, db, constrained)
    if address and executor != "ray":
        raise ConfigError("--address names a Ray cluster: add --executor ray")
    config = RunConfig(
        envs=_env_ids(envs, tasks),
        policy=policy,
        policy_params=params,
        k=k,
        seed=seed,
        split=split,
        limit=limit,
        tasks=tasks,
        max_steps=max_steps,
        runtime=runtime,
        label=label,
        user=user,
        user_params=_user_params(user, user_model, user_base_url, user_seed),
    )
    factory = NamedPolicy(policy, params)
    factory().close()  # fail fast on a bad policy before any container starts
    if isinstance(made := NamedUser(user or "scripted", config.user_params)(), SimulatedUser):
        made.close()  # and on a bad user
    _check_users(config)
    limit = _concurrency(concurrency)
    store = Store(db)
    where = f"run [bold]{config.run_id}[/] -> {escape(store._safe_url())}"
    url = db  # as the user gave it: the commands printed below name it so
    with _stop_on_signals(graceful=executor == "local") as stop, _event_log(events) as log:
        with RunEvents("run", also=_announcing(where, log), console=err) as shown:
            with make_executor(executor, address, limit, stop=stop, events=shown) as runner:
                with _finish_note(store, config.run_id, url):
                    state = run_benchmark(
                        config,
                        store=store,
                        policy_factory=factory,
                        executor=runner,
                        retry_infra=retry_infra,
                        events=shown,
                    )
    if state.skipped:
        err.print(f"resumed: {state.skipped} episodes were already committed")
    report = build_report(store, config.run_id)
    if as_json:
        print_json(_summary(report) | {"stopped": state.stopped, "containers": state.containers})
    else:
        render_report(report)
    if report.overall.infra_error:
        infra_note(store, config.run_id, retried=retry_infra)
    view = finish_note(view_command(config.run_id, url), url)
    err.print(f"open it in the viewer: {view}", markup=False, highlight=False, soft_wrap=True)
    if state.stopped:
        finish = finish_note(str(run_command(store.run(config.run_id), url)), url)
        err.print(
            f"stopped: {state.done} episodes committed; to finish the run: {finish}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(128 + stop.signum)


@contextlib.contextmanager
def _finish_note(store: Store, run_id: str, url: str | None) -> Iterator[None]:
    """Say on stderr how to finish the run when it ends part-way, before its error.

    An error (or a signal that leaves at once) after the run was stored leaves it failed
    or stopped; one before (a refusal), or while another process runs it, says nothing.
    """
    try:
        yield
    except (Exception, KeyboardInterrupt):
        with contextlib.suppress(Exception):  # not stored, or no store to read
            if store.run_status(run_id).state in _UNFINISHED:
                finish = finish_note(str(run_command(store.run(run_id), url)), url)
                err.print(
                    f"the run keeps what it committed; to finish it: {finish}",
                    markup=False,
                    highlight=False,
                    soft_wrap=True,
                )
        raise


_UNFINISHED = ("stopped", "failed", "interrupted")
"""The states of a run that its `run_command` finishes (not running, not finished)."""


def _announcing(
    line: str, log: Callable[[dict[str, Any]], None] | None
) -> Callable[[dict[str, Any]], None]:
    """An event sink printing ``line`` once the run is planned (checked and stored), then ``log``.

    A run refused before (a task that does not exist, the engine down) prints its error
    alone.
    """

    def sink(event: dict[str, Any]) -> None:
        if event.get("event") == "planned" and line:
            err.print(line)
        if log is not None:
            log(event)

    return sink


def _concurrency_opt(value: str) -> str:
    """--concurrency checked as it is read, before anything is stored or started."""
    _concurrency(value)
    return value


def _concurrency(value: str) -> int | None:
    if value == "auto":
        return None
    if not value.isdigit() or int(value) < 1:
        raise ConfigError(f"--concurrency must be a positive number or auto, not {value!r}")
    return int(value)


class _Stop(threading.Event):
    """Set by SIGINT or SIGTERM; remembers which (a second one leaves at once)."""

    signum = signal.SIGTERM

    @property
    def reason(self) -> str:
        """Who stopped the run (``Ctrl-C``, ``SIGTERM``): the runner records it in its status."""
        return "Ctrl-C" if self.signum == signal.SIGINT else signal.Signals(self.signum).name


@contextlib.contextmanager
def _stop_on_signals(*, graceful: bool) -> Iterator[_Stop]:
    """An event that SIGINT and SIGTERM set while inside.

    A second signal (or the first when not ``graceful``) raises SystemExit instead,
    which ends what runs; its containers leave with the process.
    """
    stop = _Stop()

    def handle(signum: int, _frame: Any) -> None:
        if stop.is_set() or not graceful:
            raise SystemExit(128 + signum)
        stop.signum = signal.Signals(signum)
        stop.set()

    previous = {s: signal.signal(s, handle) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


@contextlib.contextmanager
def _event_log(path: Path | None) -> Iterator[Callable[[dict[str, Any]], None] | None]:
    if path is None:
        yield None
        return
    lock = threading.Lock()
    with path.open("a") as fh:

        def write(event: dict[str, Any]) -> None:
            line = dumps(event, default=str)
            with lock:
                fh.write(line + "\n")
                fh.flush()

        yield write


def plot_path(value: Path | None) -> Path | None:
    """A ``--plot`` file whose extension names a format we write (checked before any work)."""
    if value is not None:
        from gym._reports._plot import plot_format

        plot_format(value)
    return value


def _ci(m: Any, sep: str = " ", sign: str = "") -> str:
    """``0.50 [0.12, 0.88]``: the value and its 95% interval (``sep`` between them).

    A value over nothing (NaN: no graded episode) is ``-``; one without an interval is
    shown alone.
    """
    if not math.isfinite(m.value):
        return "-"
    if not (math.isfinite(m.lo) and math.isfinite(m.hi)):
        return f"{m.value:{sign}.2f}"
    return f"{m.value:{sign}.2f}{sep}[{m.lo:{sign}.2f}, {m.hi:{sign}.2f}]"


def _rate(value: float | None, digits: int = 2) -> str:
    """The number with ``digits`` decimals, or ``-`` when there is none (None, NaN)."""
    return "-" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def render_report(report: Any, *, slices: bool = True) -> None:
    """Print a report as tables (pass/fail/infra counts; rates exclude infra errors).

    A run that is not finished says so first (``12 of 16 planned; stopped by Ctrl-C``).
    """
    if report.status is not None and report.status.state != "finished":
        console.print(report.status.summary(), markup=False, highlight=False)
    print_table(_narrowest(report, _report_table), console, drop=_REPORT_DROPS)
    if slices and report.slices:
        print_table(_narrowest(report, _slice_table), console)


_REPORT_DROPS = ("valid calls", "tokens", "flags", "pass@k, pass^k")
"""The report's columns that leave, in this order, when the terminal is too narrow for the
others (an environment's name is never broken)."""


def _narrowest(report: Any, build: Callable[..., Table]) -> Table:
    """The table with intervals beside their values, or below them when that is too wide."""
    table = build(report, stacked=False)
    return table if fits(table, console.width) else build(report, stacked=True)


def _report_table(report: Any, *, stacked: bool) -> Table:
    """One row per environment and one for the run; ``stacked``: intervals below values."""
    table = Table(
        number("env", justify="left"),
        number("tasks"),
        number("pass/\nfail/\ninfra" if stacked else "pass/fail/infra"),
        number("pass@1\n[95% CI]" if stacked else "pass@1 [95% CI]"),
        text("pass@k, pass^k"),
        text("flags"),
        number("valid calls"),
        number("tokens"),
        title=f"run {report.run_id}",
    )
    for g in [*report.envs, report.overall]:
        ks = [f"@{k}={_rate(m.value)}" for k, m in g.pass_at_k.items()]
        ks += [f"^{k}={_rate(m.value)}" for k, m in g.pass_hat_k.items() if k > 1]
        flags = " ".join(f"{k}:{v}" for k, v in g.flags.items()) or "-"
        table.add_row(
            Text(g.name.removeprefix("boxgym/")),
            str(g.tasks),
            f"{g.passed}/{g.failed}/{g.infra_error}",
            _ci(g.pass_at_1, "\n" if stacked else " "),
            " ".join(ks) or "-",
            Text(flags),
            _rate(g.valid_call_rate),
            _count(g.prompt_tokens + g.completion_tokens, short=stacked),
        )
    return table


def _count(n: int, *, short: bool) -> str:
    """``18,644,418``, or ``18.6M`` when ``short`` (and ``12.4k``, ``950``)."""
    if not short or n < 10_000:
        return f"{n:,}"
    return f"{n / 1e6:.1f}M" if n >= 1_000_000 else f"{n / 1e3:.1f}k"


def _slice_table(report: Any, *, stacked: bool) -> Table:
    head = "pass@1\n[95% CI]" if stacked else "pass@1 [95% CI]"
    table = Table(
        words("slice"), number("episodes"), number("pass/fail/infra"), number(head), title="slices"
    )
    for g in report.slices:
        table.add_row(
            Text(g.name),
            str(g.episodes),
            f"{g.passed}/{g.failed}/{g.infra_error}",
            _ci(g.pass_at_1, "\n" if stacked else " "),
        )
    return table


@app.command()
def report(
    run_id: Annotated[
        str | None,
        typer.Argument(
            help="Run id (or a unique prefix); by default the newest run `gym run` made."
        ),
    ] = None,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot",
            callback=plot_path,
            help="Also draw pass@1 per env and pass@k against k: F.png, F.svg or F.pdf.",
        ),
    ] = None,
    db: DbOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Report a run: pass@1, pass@k, pass^k with 95% intervals, per env and slice."""
    from gym._reports._report import build_report
    from gym._store import Store

    store = Store(db, read_only=True)
    result = build_report(store, run_id or _newest_run(store))
    if plot is not None:
        from gym._reports._plot import report_figure, save

        size = save(report_figure(result), plot)
        err.print(f"wrote {escape(str(plot))} ({size} bytes)")
    if as_json:
        print_json(result.model_dump(mode="json"))
    else:
        render_report(result)
    if result.overall.infra_error:
        infra_note(store, result.run_id, retried=False)
    if result.status is not None and result.status.state in _UNFINISHED:
        finish = run_command(store.run(result.run_id), db)
        if finish:
            said = f"to finish it: {finish_note(finish, db)}"
            err.print(said, markup=False, highlight=False, soft_wrap=True)


def infra_note(store: Store, run_id: str, *, retried: bool) -> None:
    """Why a run's ``infra_error`` episodes ended so, on stderr, and how to grade them again.

    They count in no rate, so a report of them alone says nothing; the most frequent
    reasons (first lines, cut) say whose fault it was.
    """
    from collections import Counter

    from gym._core._text import clean

    reasons = Counter(
        clean((e.end_reason or "no reason recorded").strip().splitlines()[0])[:160]
        for e in store.episodes(run_id)
        if e.outcome == "infra_error"
    )
    total = sum(reasons.values())
    if not total:
        return
    err.print(
        f"{total} episode{'' if total == 1 else 's'} ended infra_error (an error of the "
        "environment, the grader or the model server, never the policy's; counted in no rate):",
        markup=False,
        highlight=False,
    )
    for reason, count in reasons.most_common(3):
        err.print(f"  {count} x {reason}", markup=False, highlight=False, soft_wrap=True)
    if not retried:
        err.print(
            "once that is mended, the same `gym run` with --retry-infra runs them again",
            markup=False,
            highlight=False,
        )


def _newest_run(store: Store) -> str:
    """The id of the newest run `gym run` made (of any run if none), said on stderr.

    The runs a training made (`gym train`: a collection, an evaluation) are passed over:
    a report with no RUN is of the user's own newest benchmark.
    """
    runs = store.runs()
    if not runs:
        raise StoreError(f"no run in {store._safe_url()}: `gym run` stores one")
    picked = next((r for r in runs if not _by_training(r)), runs[0])
    notes = [f"the newest of {len(runs)}"] if len(runs) > 1 else []
    if newer := runs.index(picked):
        notes = [f"the newest `gym run` of {len(runs)}; {newer} newer made by training"]
    elif _by_training(picked):
        notes = [f"made by training: no run of {len(runs)} was made by `gym run`"]
    more = f" ({notes[0]}; `gym runs` lists them)" if notes else ""
    err.print(f"run {picked.id}{more}", markup=False, highlight=False)
    return picked.id


def _by_training(run: RunRow) -> bool:
    """Whether a training made the run (`gym train`: its policy has a ``policy_version``)."""
    return "policy_version" in (run.config.get("policy_params") or {})


runs_app = typer.Typer(
    help="List stored runs with their status; `gym runs rm` deletes runs.",
    invoke_without_command=True,
)
app.add_typer(runs_app, name="runs")


@runs_app.callback()
def runs(ctx: typer.Context, db: DbOpt = None, as_json: JsonFlag = False) -> None:
    """List stored runs with their status (running 9/16, stopped 9/16, finished 16/16)."""
    if ctx.invoked_subcommand is not None:
        return
    from gym._store import Store

    store = Store(db, read_only=True)
    statuses = store.run_statuses()
    url = db  # as the user gave it
    rows: list[dict[str, Any]] = [
        {
            "id": r.id,
            "policy": r.policy,
            "label": r.label,
            "envs": r.config.get("envs"),
            "episodes": statuses[r.id].episodes,
            "status": statuses[r.id].model_dump(mode="json"),
            "created_at": r.created_at,
            "command": run_command(r, url),
        }
        for r in store.runs()
        if r.id in statuses
    ]
    if as_json:
        print_json(rows)
        return
    if not rows:
        err.print(
            f"no runs in {store._safe_url()} yet: gym run ENV --policy ... makes one",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        return
    table = Table(
        number("run", justify="left"),
        text("policy"),
        text("label"),
        words("envs"),
        words("status"),
    )
    for r in rows:
        status = statuses[r["id"]]
        envs = ", ".join(e.removeprefix("boxgym/") for e in r["envs"] or [])
        row = (r["id"], r["policy"], Text(r["label"]), Text(envs), status.label())
        table.add_row(*row)
    print_table(table, console, drop=_RUNS_DROPS)
    unfinished = [r for r in rows if r["command"] and statuses[r["id"]].state in _UNFINISHED]
    if unfinished:
        err.print(
            f"not finished: {', '.join(r['id'] for r in unfinished)}; `gym report RUN` says "
            "the command that finishes one (and --json has each run's command)",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )


_RUNS_DROPS = ("envs", "policy", "label")
"""The columns of `gym runs` that leave, in this order, when the terminal is too narrow
(the run's id and status stay; an env name is never broken)."""


@runs_app.command("rm")
def runs_rm(
    ctx: typer.Context,
    run_ids: Annotated[
        list[str] | None, typer.Argument(help="Runs to delete (ids or unique prefixes).")
    ] = None,
    empty: Annotated[
        bool, typer.Option("--empty", help="Delete every run with no episode (not running).")
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Delete without asking.")] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Also delete a run that is running now.")
    ] = False,
    db: DbOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Delete runs with their episodes, steps, verdicts and training steps (one transaction).

    Asks first on a terminal (--yes does not); refuses a run that is running now
    (its heartbeat is fresh) unless --force.
    """
    from gym._store import Store

    url = db or (ctx.parent.params.get("db") if ctx.parent else None)
    reader = Store(url, read_only=True)  # a mistyped --db is not created empty
    ids = _runs_to_delete(reader, run_ids or [], empty=empty, force=force)
    if not ids:
        err.print("no empty run to delete")
        return
    store = Store(reader.url)
    counts = store.delete_runs(ids, force=force, dry_run=True)  # refuses a running run
    what = _deleted(counts)
    if not yes:
        if not sys.stdin.isatty():
            raise ConfigError(f"would delete {what}; not a terminal to ask: add --yes")
        typer.confirm(f"delete {what}?", abort=True, err=True)
    counts = store.delete_runs(ids, force=force)
    if as_json:
        print_json({"deleted": ids, "rows": counts})
    else:
        err.print(f"deleted {_deleted(counts)}", markup=False, highlight=False)


def _runs_to_delete(store: Store, prefixes: list[str], *, empty: bool, force: bool) -> list[str]:
    """The exact ids named by prefixes (each unique), and the empty runs if asked."""
    if not prefixes and not empty:
        raise ConfigError("name the runs to delete (`gym runs` lists them), or use --empty")
    ids = [store.run(p).id for p in prefixes]
    if empty:
        statuses = store.run_statuses().values()
        ids += [s.run_id for s in statuses if not s.episodes and (force or s.state != "running")]
    return list(dict.fromkeys(ids))


def _deleted(counts: dict[str, int]) -> str:
    """``2 runs (14 episodes, 120 steps, 14 verdicts, 0 train steps)``."""
    rows = ", ".join(
        f"{counts.get(t, 0)} {t.replace('_', ' ')}"
        for t in ("episodes", "steps", "verdicts", "train_steps")
    )
    return f"{counts['runs']} run{'s' if counts['runs'] != 1 else ''} ({rows})"


@app.command()
def compare(
    run_a: Annotated[str, typer.Argument(help="Baseline run.")],
    run_b: Annotated[str, typer.Argument(help="Candidate run.")],
    db: DbOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Compare two runs on shared tasks: paired difference and transitions."""
    from gym._reports._report import compare as compare_runs
    from gym._store import Store

    result = compare_runs(Store(db, read_only=True), run_a, run_b)
    if as_json:
        print_json(result.model_dump(mode="json"))
        return
    console.print(
        f"{result.tasks} shared tasks: pass@1 {_rate(result.pass_at_1_a, 3)} -> "
        f"{_rate(result.pass_at_1_b, 3)}"
    )
    console.print(f"difference (B - A) {_ci(result.difference, sign='+')}", highlight=False)
    names = ("maintained", "improved", "regressed", "persistent_failure")
    table = Table(*(number(n.replace("_", " ")) for n in names))
    table.add_row(*(str(result.transitions[n]) for n in names))
    print_table(table, console)
    for line in result.regressed:
        console.print(f"  regressed: {escape(line)}")


@app.command()
def gate(
    run_id: Annotated[str, typer.Argument(help="Run to check.")],
    rules: Annotated[Path, typer.Option("--rules", help="TOML file of [[rule]] tables.")],
    baseline: Annotated[str | None, typer.Option("--baseline", help="Baseline run.")] = None,
    db: DbOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Exit non-zero when a blocking rule fails (rule keys: docs/statistics.md, 'Gate rules')."""
    from gym._reports._report import gate as check_gate
    from gym._reports._report import load_rules
    from gym._store import Store

    results = check_gate(Store(db, read_only=True), run_id, load_rules(rules), baseline)
    if as_json:
        print_json([r.model_dump(mode="json") for r in results])
    else:
        for r in results:
            mark = (
                "[green]pass[/]"
                if r.passed
                else ("[red]FAIL[/]" if r.rule.blocking else "[yellow]warn[/]")
            )
            console.print(f"{mark} {r.rule.kind} {escape(r.detail)}")
    if any(not r.passed and r.rule.blocking for r in results):
        raise typer.Exit(1)


def _episode_table(items: list[Any]) -> None:
    envs = sorted({i.env_id for i in items})
    one = len(envs) == 1  # its name is the title
    table = Table(
        number("episode", justify="left"),
        *([] if one else [words("env")]),
        text("task", min_width=15),
        number("#"),
        number("outcome", justify="left"),
        number("reward"),
        number("steps"),
        text("flags"),
        text("end"),
        title=envs[0] if one else None,
    )
    for i in items:
        table.add_row(
            i.id[:12],
            *([] if one else [Text(i.env_id.removeprefix("boxgym/"))]),
            Text(i.task_id),
            str(i.sample_index),
            i.outcome,
            "-" if i.reward is None else f"{i.reward:.2f}",
            str(i.steps),
            Text(" ".join(i.flags) or "-"),
            Text(textwrap.shorten(i.end_reason, 80, placeholder=" ...") if i.end_reason else ""),
        )
    print_table(table, console, drop=("end", "steps", "flags"))


@app.command()
def view(
    target: Annotated[
        str | None, typer.Argument(help="RUN or RUN/EPISODE (ids or unique prefixes).")
    ] = None,
    html: Annotated[
        Path | None,
        typer.Option("--html", help="Write the pages as static files into this folder."),
    ] = None,
    host: Annotated[str, typer.Option("--host", help="Address to serve on.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="Port to serve on (0: a free one).")
    ] = 0,
    list_episodes: Annotated[
        bool, typer.Option("--list", help="Print the run's episodes instead of serving.")
    ] = False,
    text: Annotated[
        bool, typer.Option("--text", help="Print the episode as text instead of serving.")
    ] = False,
    outcome: Annotated[
        str | None, typer.Option("--outcome", help="Only episodes with this outcome.")
    ] = None,
    task: Annotated[
        str | None, typer.Option("--task", help="Only tasks whose id contains this.")
    ] = None,
    flag: Annotated[
        str | None, typer.Option("--flag", help="Only episodes with this flag (any, none).")
    ] = None,
    db: DbOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Look at runs: serve a read-only web viewer (or write it as files, list, print)."""
    from gym._store import Store

    if outcome not in (None, "pass", "fail", "infra_error"):
        raise ConfigError("--outcome must be pass, fail or infra_error")
    filters = {"outcome": outcome, "task": task, "flag": flag}
    if html is not None:
        _refuse_with_html(
            {
                "--list": list_episodes,
                "--text": text,
                "--host": host != "127.0.0.1",
                "--port": port != 0,
                **{f"--{k}": v is not None for k, v in filters.items()},
            }
        )
    store = Store(db, read_only=True)
    if list_episodes or text:
        _print_episodes(store, target, filters, text=text, as_json=as_json)
    elif html is not None:
        _write_pages(store, target, html)
    else:
        _serve(store, target, filters, host, port)


def _refuse_with_html(given: dict[str, bool]) -> None:
    """Refuse the options ``--html`` would ignore (those printing, serving or filtering)."""
    _refuse(
        [name for name, on in given.items() if on],
        "--html, which writes every page of the viewer as files (a written run page filters "
        "itself: run-RUN.html?outcome=fail)",
    )


def _print_episodes(
    store: Any, target: str | None, filters: dict[str, Any], *, text: bool, as_json: bool
) -> None:
    from gym import _view

    if not target:
        raise ConfigError("--list and --text need a RUN (`gym runs` lists them)")
    if text and "/" in target:
        episode = _view.resolve_episode(store, target)
    else:
        run_id = store.run(target.partition("/")[0]).id
        items = _view.select(_view.episode_items(store, run_id), **filters)
        if not text:
            if as_json:
                print_json([i.model_dump(mode="json") for i in items])
            elif items:
                _episode_table(items)
            else:
                err.print(_no_episode(run_id, filters), markup=False, highlight=False)
            return
        if not items:
            raise ConfigError("no episode of the run passes the filters")
        episode = store.episode(items[0].id)
    sys.stdout.write(_view.episode_text(store, episode))


def _no_episode(run_id: str, filters: dict[str, Any]) -> str:
    """``no episode of task 'zzz' in run RUN``: what an empty listing means."""
    task, outcome, flag = filters.get("task"), filters.get("outcome"), filters.get("flag")
    parts = [f"of task {task!r}" if task else "", f"with outcome {outcome}" if outcome else ""]
    if flag:
        flags = {"any": "with a flag", "none": "without a flag"}
        parts.append(flags.get(flag, f"flagged {flag!r}"))
    parts = [p for p in parts if p]
    if not parts:
        return f"run {run_id} has no episodes yet"
    return f"no episode {' '.join(parts)} in run {run_id}"


def _write_pages(store: Any, target: str | None, folder: Path) -> None:
    from gym import _view

    runs = [store.run(target.partition("/")[0]).id] if target else None
    before = folder.is_dir() and any(folder.iterdir())  # pages written there before
    n = _view.write_site(_view.Site(store, runs), folder)
    replaced = " (each replaces the page of its name written there before; other files stay)"
    replaced = replaced if before else ""
    err.print(
        f"wrote {n} files{replaced}; open {folder / 'index.html'}",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )


def _serve(store: Any, target: str | None, filters: dict[str, Any], host: str, port: int) -> None:
    from urllib.parse import urlencode

    from gym import _view

    page = "index.html"
    if target and "/" in target:
        page = _view.episode_page(_view.resolve_episode(store, target).id)
    elif target:
        page = _view.run_page(store.run(target).id)
    query = urlencode({k: v for k, v in filters.items() if v})
    viewer = _view.serve(_view.Site(store), host, port)
    if host not in ("127.0.0.1", "localhost", "::1"):
        err.print(
            f"[yellow]warning:[/] serving on {escape(host)}: anyone who reaches it reads the runs"
        )
    print(f"{viewer.url}{page}{'?' + query if query else ''}", flush=True)  # plain: for scripts
    err.print("read-only viewer; Ctrl-C stops it")
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        raise typer.Exit(130) from None  # as every command stopped by Ctrl-C (README.md)
    finally:
        viewer.close()


@app.command("export")
def export_run(
    run_id: Annotated[str, typer.Argument(help="Run to export.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output file (jsonl) or folder (hf).")],
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            callback=one_of("jsonl", "hf", "trl", "verl"),
            help="jsonl, hf, or a trainer's rows as JSONL: trl or verl.",
        ),
    ] = "jsonl",
    for_eval: Annotated[
        bool,
        typer.Option("--for-eval", help="Allow held-out episodes (evaluation use only)."),
    ] = False,
    split: Annotated[str | None, typer.Option("--split", help="Only this split.")] = None,
    only_verified: Annotated[
        bool, typer.Option("--verified", help="Only verified episodes.")
    ] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Replace the files --out names if they exist (through a symbolic link: the "
            "file it points to is replaced, as cp does; the link stays).",
        ),
    ] = False,
    db: DbOpt = None,
) -> None:
    """Write training-ready records (messages, tool calls, token ids and masks, rewards).

    Files already there are replaced only with --force; each is written whole or not at all.
    """
    from gym._reports._records import write_records
    from gym._store import Store

    if not force:
        _refuse_existing(out, fmt)
    rows = None
    if fmt in ("trl", "verl"):
        from gym.train._formats import FORMATS

        fmt, rows = "jsonl", FORMATS[fmt]
    store = Store(db, read_only=True)
    _check_export_split(store, run_id, split)
    with progress("export", unit="records", console=err) as bar:
        n = write_records(
            store,
            run_id,
            out,
            fmt=fmt,
            rows=rows,
            allow_eval=for_eval,
            only_verified=only_verified,
            split=split,
            progress=bar.to,
        )
    err.print(f"wrote {n} episodes to {escape(str(out))}")


def _refuse_existing(out: Path, fmt: str) -> None:
    """Refuse to write over a file that `gym export` would replace (``--force`` does).

    Raises:
        ConfigError: ``out`` (or for ``hf`` the dataset files in it) already exists.
    """
    written = [out / "data.jsonl", out / "README.md"] if fmt == "hf" else [out]
    there = [path for path in written if path.exists() or path.is_symlink()]
    if there:
        raise ConfigError(f"{there[0]} exists: pass --force to replace it")


def _check_export_split(store: Store, run_id: str, split: str | None) -> None:
    """Refuse a ``--split`` that no environment of the run declares, as `gym run` does.

    A split the run's episodes hold is always accepted (an environment no longer
    registered here declares nothing).

    Raises:
        ConfigError: neither the run's registered environments nor its episodes have it.
    """
    from gym._envs._registry import env_ids
    from gym._run._runner import check_split

    if split is None:
        return
    run = store.run(run_id)
    here = set(env_ids())
    registered = [e for e in run.config.get("envs") or [] if e in here]
    undeclared: ConfigError | None = None
    if registered:
        try:
            check_split(registered, split)
            return
        except ConfigError as exc:  # the run's episodes may still hold it
            undeclared = exc
    stored = sorted({e.split for e in store.episodes(run.id)})  # read only when undeclared
    if split in stored:
        return
    raise undeclared or ConfigError(
        f"run {run.id} has no episode of the split {split!r} (its splits: "
        f"{', '.join(stored) or 'none'})"
    )


@app.command()
def regrade(
    run_id: Annotated[str, typer.Argument(help="Run whose stored final states to re-score.")],
    db: DbOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Re-score stored final states with the current graders (no agent re-run)."""
    from gym._run._regrade import regrade_run
    from gym._store import Store

    with progress("regrade", unit="episodes", console=err) as bar:
        changes = regrade_run(Store(db), run_id, progress=bar.to)
    if as_json:
        print_json(changes)
        return
    changed = [c for c in changes if c["changed"]]
    for c in changed:
        console.print(
            f"{c['env_id']} {c['task_id']} #{c['sample_index']}: {c['before']} -> {c['after']}",
            markup=False,
        )
    console.print(f"{len(changes)} episodes regraded, {len(changed)} verdicts changed")
