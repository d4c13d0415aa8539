"""Write boxgym/BFCL-MultiTurn-v0's tasks and backends from the bfcl-eval wheel (pinned).

    .venv/bin/python scripts/import_bfcl.py [--wheel bfcl_eval-2026.3.23-py3-none-any.whl]

Without --wheel it downloads the pinned wheel with pip (`pip download --no-deps`). The
wheel's sha256 must be the pinned one. It writes:

- seeds/bfcl/backend/: BFCL's backend modules for the multi-turn classes (their
  package imports made flat: `from long_context import ...`), with BFCL's licence notice
  (seeds/bfcl/backend/NOTICE), byte for byte otherwise;
- seeds/bfcl/: one task folder per `multi_turn_base` entry, through boxgym's tool-API
  importer (`gym._datasets._toolapi`): the user turns, the tools (BFCL's function docs
  as OpenAI schemas, as BFCL's own OpenAI handler converts them, minus the entry's
  excluded functions), the gold calls of each turn (BFCL's call strings read with `ast`
  into name and keyword arguments) and the initial state.

The generated files are committed, so neither CI nor a user needs the download.
"""

from __future__ import annotations

import argparse
import ast
import copy
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gym._datasets._dataset import SplitRule  # noqa: E402
from gym._datasets._toolapi import ToolAPIMapping, import_toolapi  # noqa: E402

VERSION = "2026.3.23"
WHEEL = f"bfcl_eval-{VERSION}-py3-none-any.whl"
SHA256 = "3bb6dfa5f0c68ad403c9ec50b00db2bb3b4cc9b38ab1ff33f48fe30d853d3a0a"
CATEGORY = "multi_turn_base"
PKG = "bfcl_eval"
SOURCE = f"{PKG}/eval_checker/multi_turn_eval/func_source_code"
MODULES = {
    "GorillaFileSystem": "gorilla_file_system",
    "MathAPI": "math_api",
    "MessageAPI": "message_api",
    "TwitterAPI": "posting_api",
    "TicketAPI": "ticket_api",
    "TradingBot": "trading_bot",
    "TravelAPI": "travel_booking",
    "VehicleControlAPI": "vehicle_control",
}
"""BFCL's classes of the multi-turn categories and their modules (its
constants/executable_backend_config.py); the docs are under data/multi_turn_func_doc/."""
DOCS = {cls: f"{module}.json" for cls, module in MODULES.items()}
DOCS["TwitterAPI"] = "posting_api.json"
EXTRA_MODULES = ("long_context",)
"""Modules the backends import besides their own."""
TYPES = {
    "integer": "integer", "number": "number", "float": "number", "string": "string",
    "boolean": "boolean", "bool": "boolean", "array": "array", "list": "array",
    "dict": "object", "object": "object", "tuple": "array", "any": "string",
}  # fmt: skip
"""BFCL's GORILLA_TO_OPENAPI (constants/type_mappings.py), the types its data uses."""
READ = re.compile(
    r"^(ls|pwd|cat|find|grep|wc|du|tail|diff|get_\w+|list_\w+|display\w*|check\w*|view_\w+|search_\w+|mean|absolute_value)$"
)
"""Tool names marked read-only (``x-boxgym-kind: read``): the validation panel's probe
calls one of them that needs no argument; no grading depends on the marking."""
HELD_OUT_EVERY = 4
"""Every 4th entry (ids ending 3, 7, 11...) is in the held-out ``test`` split, except one
whose first turn a training entry also opens with (`shared_openings`): 43 opens as 40."""
ERRATA = {
    "multi_turn_base_173": (
        "the scenario's ticket id is the string 'ticket_001' and the gold calls "
        "close_ticket(ticket_id='ticket_001'), but TicketAPI's docs type ticket_id as an "
        "integer: its tools here accept an integer or a string"
    ),
}
"""Entries whose tool schemas are widened so their own gold calls fit (README, Errata)."""
NOTICE = """\
These modules are the backends of BFCL (the Berkeley Function Calling Leaderboard),
from the bfcl-eval package {version} on PyPI (wheel sha256 {sha}),
{source}/.

Copyright the Gorilla LLM / BFCL authors. Licensed under the Apache License, Version 2.0
(http://www.apache.org/licenses/LICENSE-2.0). Changes made by boxgym's
scripts/import_bfcl.py: the package imports of one module from another are made flat
(`from bfcl_eval....long_context import` -> `from long_context import`), so the
service loads them as plain modules; nothing else is changed.
"""


def fetch_wheel(given: Path | None, work: Path) -> Path:
    """The pinned wheel: the one given, or downloaded with pip; its sha256 checked."""
    wheel = given
    if wheel is None:
        cmd = [sys.executable, "-m", "pip", "download", f"bfcl-eval=={VERSION}", "--no-deps"]
        subprocess.run([*cmd, "-d", str(work)], check=True)
        wheel = work / WHEEL
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    if digest != SHA256:
        sys.exit(f"{wheel}: sha256 {digest}, expected {SHA256} (bfcl-eval {VERSION})")
    return wheel


def lines_of(z: zipfile.ZipFile, name: str) -> list[dict[str, Any]]:
    """The JSON lines of a file of the wheel."""
    return [json.loads(line) for line in z.read(name).decode().splitlines() if line.strip()]


def backend_sources(z: zipfile.ZipFile) -> dict[str, str]:
    """BFCL's backend modules, their package imports made flat."""
    out = {}
    for module in (*MODULES.values(), *EXTRA_MODULES):
        text = z.read(f"{SOURCE}/{module}.py").decode()
        text = text.replace(f"from {SOURCE.replace('/', '.')}.", "from ")
        out[f"{module}.py"] = text
    return out


def cast(properties: dict[str, Any]) -> dict[str, Any]:
    """BFCL's parameter types as JSON Schema types (its `_cast_to_openai_type`)."""
    out = {}
    for key, value in properties.items():
        value = copy.deepcopy(value)
        value["type"] = TYPES.get(value.get("type", "string"), "string")
        if "properties" in value:
            value["properties"] = cast(value["properties"])
        if "items" in value and "type" in value["items"]:
            value["items"]["type"] = TYPES.get(value["items"]["type"], "string")
        out[key] = value
    return out


def tool_schema(doc: dict[str, Any]) -> dict[str, Any]:
    """One function doc as an OpenAI tool schema (its ``response`` left out)."""
    params = copy.deepcopy(doc["parameters"])
    params["type"] = "object"
    params["properties"] = cast(params.get("properties", {}))
    schema: dict[str, Any] = {
        "type": "function",
        "function": {"name": doc["name"], "description": doc["description"], "parameters": params},
    }
    if READ.match(doc["name"]):
        schema["function"]["x-boxgym-kind"] = "read"
    return schema


def widen_ticket_id(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with a ``ticket_id`` parameter that takes an integer or a string."""
    properties = schema["function"]["parameters"]["properties"]
    if "ticket_id" in properties:
        properties["ticket_id"]["type"] = ["integer", "string"]
    return schema


def signatures(sources: dict[str, str]) -> dict[str, dict[str, list[str]]]:
    """Class -> method -> its parameter names (read with ast, never imported)."""
    out: dict[str, dict[str, list[str]]] = {}
    for source in sources.values():
        for node in ast.parse(source).body:
            if isinstance(node, ast.ClassDef):
                out[node.name] = {
                    f.name: [a.arg for a in f.args.args[1:]]
                    for f in node.body
                    if isinstance(f, ast.FunctionDef)
                }
    return out


def plain(value: Any) -> Any:
    """A literal as JSON data (tuples become lists)."""
    if isinstance(value, tuple | list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    return value


def gold_call(text: str, params: dict[str, list[str]]) -> dict[str, Any]:
    """A BFCL call string (``mv(source='a', destination='b')``) as name and arguments."""
    node = ast.parse(text.strip(), mode="eval").body
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError(f"not a plain call: {text!r}")
    name = node.func.id
    names = params.get(name)
    if names is None:
        raise ValueError(f"{text!r}: no backend method {name}")
    arguments = {names[i]: plain(ast.literal_eval(a)) for i, a in enumerate(node.args)}
    arguments |= {k.arg: plain(ast.literal_eval(k.value)) for k in node.keywords if k.arg}
    return {"name": name, "arguments": arguments}


def records(z: zipfile.ZipFile, sources: dict[str, str]) -> list[dict[str, Any]]:
    """The entries of multi_turn_base as tool-API records."""
    data = f"{PKG}/data"
    entries = lines_of(z, f"{data}/BFCL_v4_{CATEGORY}.json")
    answers = {
        a["id"]: a["ground_truth"]
        for a in lines_of(z, f"{data}/possible_answer/BFCL_v4_{CATEGORY}.json")
    }
    docs = {c: lines_of(z, f"{data}/multi_turn_func_doc/{f}") for c, f in DOCS.items()}
    sigs = signatures(sources)
    out = []
    for entry in entries:
        classes = entry["involved_classes"]
        excluded = set(entry.get("excluded_function", []))
        params: dict[str, list[str]] = {}
        for cls in classes:  # a method routes to the last class that has it, as in BFCL
            params |= {m: p for m, p in sigs[cls].items() if not m.startswith("_")}
        tools = [tool_schema(d) for c in classes for d in docs[c] if d["name"] not in excluded]
        if entry["id"] in ERRATA:
            tools = [widen_ticket_id(t) for t in tools]
        number = int(entry["id"].rsplit("_", 1)[1])
        out.append(
            {
                "id": entry["id"],
                "turns": ["\n\n".join(m["content"] for m in turn) for turn in entry["question"]],
                "tools": tools,
                "gold": [[gold_call(c, params) for c in turn] for turn in answers[entry["id"]]],
                "classes": [f"{MODULES[c]}:{c}" for c in classes],
                "state": {
                    c: entry["initial_config"][c] for c in classes if c in entry["initial_config"]
                },
                "split": "test" if number % HELD_OUT_EVERY == HELD_OUT_EVERY - 1 else "train",
                "classes_tag": "+".join(sorted(classes)),
                "n": number,
            }
        )
    return shared_openings(out)


def shared_openings(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records whose first turn a training record shares, moved to ``train`` as well.

    A held-out task must not open with what training taught: the policy would have
    been trained on its first turn.
    """
    taught = {r["turns"][0] for r in records if r["split"] == "train" and r["turns"]}
    for r in records:
        if r["split"] == "test" and r["turns"] and r["turns"][0] in taught:
            r["split"] = "train"
    return records


def main() -> None:
    """Write the backends and the tasks."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path, help=f"the {WHEEL} file (else pip downloads it)")
    parser.add_argument("--root", type=Path, default=ROOT, help="the boxgym checkout to write into")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        wheel = fetch_wheel(args.wheel, Path(work))
        with zipfile.ZipFile(wheel) as z:
            sources = backend_sources(z)
            found = records(z, sources)
    seeds = args.root / "seeds"
    if (seeds / "bfcl").exists():
        shutil.rmtree(seeds / "bfcl")
    backend = seeds / "bfcl" / "backend"
    backend.mkdir(parents=True)
    for name, text in sources.items():
        (backend / name).write_text(text)
    (backend / "NOTICE").write_text(NOTICE.format(version=VERSION, sha=SHA256, source=SOURCE))
    mapping = ToolAPIMapping(
        family="bfcl",
        id="BFCL/{id}",
        split=SplitRule(field="split"),
        splits={"train": "training", "test": "held-out"},
        tags={"source": "bfcl-v4-" + CATEGORY, "classes": "{classes_tag}"},
    )
    result = import_toolapi(found, mapping, seeds)
    print(f"{len(result.written)} tasks written to {result.folder} ({result.splits})")
    for problem in result.problems:
        print("refused:", problem)
    if result.problems:
        sys.exit(1)


if __name__ == "__main__":
    main()
