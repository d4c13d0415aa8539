"""boxgym's side of the tool-call workload: a scripted policy makes the same shell calls.

    python bench/_boxgym_scripted.py DB EVENTS CONCURRENCY EPISODES CALLS_JSON

Runs boxgym's runner (the same code path as `gym run`) over PyFunc-v0 with a policy
that makes each command of CALLS_JSON as a `bash` tool call, then submits; every
episode is graded in a fresh container. It starts and ends as `gym run` does: one malloc
arena (`gym._core._malloc.cap_arenas`, before any thread), and `gym._core._exit.leave`
(atexit cleanup and flushed streams, without the interpreter's teardown). Used by
bench/scale.py.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

from gym import ScriptPolicy, ToolCall
from gym._core._exit import leave
from gym._core._malloc import cap_arenas
from gym._run._runner import RunConfig, run
from gym._store import Store


def main() -> None:
    cap_arenas()
    db, events_path, concurrency, episodes, calls = sys.argv[1:6]
    commands = json.loads(calls)
    script = [ToolCall(name="bash", arguments={"command": c}) for c in commands]
    config = RunConfig(
        envs=["boxgym/PyFunc-v0"], policy="bench-bash", limit=int(episodes), max_steps=50
    )
    lock = threading.Lock()
    with Path(events_path).open("a") as fh:

        def events(event: dict) -> None:
            with lock:
                fh.write(json.dumps(event) + "\n")

        state = run(
            config,
            store=Store(db),
            policy_factory=lambda: ScriptPolicy(script),
            concurrency=int(concurrency),
            events=events,
        )
    print(json.dumps({"done": state.done, "containers": state.containers}))
    leave(0)


if __name__ == "__main__":
    main()
