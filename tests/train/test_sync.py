"""Weight sync to a sampling server: `gym train grpo --policy openai` against a stand-in.

The stand-in is a real HTTP server in a thread that answers as vLLM does (chat
completions with native tool calls, token ids and logprobs; the dynamic LoRA
endpoints) and records every request. It answers each Learn-v0 turn with a canned
``submit`` call, right and wrong in turn, so every group has a reward to learn from;
the episodes run and are graded in real containers. What it checks is the trainer's
side of the contract: the adapter it loads, the names the next requests carry, the
versions the episodes record, and the staleness bound.
"""

from __future__ import annotations

import importlib.util
import json
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from gym._core._errors import PolicyError
from gym._store import Store
from gym.train._episodes import TrainEpisode
from gym.train._grpo_collect import ScoredEpisode, split_stale

HAVE = all(importlib.util.find_spec(m) for m in ("torch", "transformers", "llguidance", "peft"))
needs_peft = pytest.mark.skipif(not HAVE, reason="needs torch, transformers, llguidance, peft")

ENV, TASK = "boxgym/Learn-v0", "cedar"
SEEDS = Path(__file__).resolve().parents[2] / "seeds" / "learn"
RIGHT = (SEEDS / TASK / "hidden" / "expected.txt").read_text().strip()
WRONG = "A" if RIGHT != "A" else "B"


class StandIn:
    """An OpenAI-compatible server with vLLM's runtime LoRA endpoints; it keeps every request.

    A chat request must name the base model or a loaded adapter (404 otherwise, as vLLM
    answers); a load reads the adapter's folder at once, as vLLM does.
    """

    def __init__(self, base: str) -> None:
        from gym._policy._tiny import tiny_tokenizer

        self.base, self.tokenizer = base, tiny_tokenizer()
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.adapters: dict[str, dict[str, Any]] = {}  # name -> tensors read at load time
        self.loaded: set[str] = set()
        self.lock = threading.Lock()
        self.chats = 0
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def chat_models(self) -> list[str]:
        return [b["model"] for p, b in self.requests if p.endswith("/chat/completions")]

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        with self.lock:
            self.requests.append((path, body))
            if path == "/v1/load_lora_adapter":
                return self._load(body)
            if path == "/v1/unload_lora_adapter":
                if body["lora_name"] not in self.loaded:
                    return 404, _error(f"The lora adapter '{body['lora_name']}' cannot be found.")
                self.loaded.discard(body["lora_name"])
                return 200, "Success: LoRA adapter unloaded."
            if path == "/v1/chat/completions":
                if body["model"] not in {self.base, *self.loaded}:
                    return 404, _error(f"The model `{body['model']}` does not exist.")
                self.chats += 1
                return 200, self._completion(body, RIGHT if self.chats % 2 else WRONG)
        return 404, _error("not found")

    def _load(self, body: dict[str, Any]) -> tuple[int, Any]:
        from safetensors.torch import load_file

        name, folder = body["lora_name"], Path(body["lora_path"])
        if name in self.loaded:
            return 400, _error(f"The lora adapter '{name}' has already been loaded.")
        if not (folder / "adapter_config.json").is_file():
            return 400, _error(f"No adapter found for {folder}")
        config = json.loads((folder / "adapter_config.json").read_text())
        self.adapters[name] = {
            "config": config,
            "tensors": load_file(str(folder / "adapter_model.safetensors")),
        }
        self.loaded.add(name)
        return 200, f"Success: LoRA adapter '{name}' added successfully."

    def _completion(self, body: dict[str, Any], choice: str) -> dict[str, Any]:
        from gym._policy._local import render_prompt
        from gym._policy._parse import format_call

        tok = self.tokenizer
        prompt = tok(render_prompt(tok, body["messages"], body["tools"]), add_special_tokens=False)
        completion = tok(format_call("submit", {"choice": choice}), add_special_tokens=False)
        ids = [*completion["input_ids"], tok.eos_token_id]
        arguments = json.dumps({"choice": choice})
        call = {"id": f"chatcmpl-tool-{uuid.uuid4().hex}", "type": "function"}
        call["function"] = {"name": "submit", "arguments": arguments}
        logprobs = [{"token": f"token_id:{i}", "logprob": -0.7, "top_logprobs": []} for i in ids]
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": None, "tool_calls": [call]},
                    "logprobs": {"content": logprobs},
                    "finish_reason": "tool_calls",
                    "token_ids": ids,
                }
            ],
            "usage": {"prompt_tokens": len(prompt["input_ids"]), "completion_tokens": len(ids)},
            "prompt_token_ids": prompt["input_ids"],
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                status, payload = stand_in.answer(self.path, body)
                text = payload if isinstance(payload, str) else json.dumps(payload)
                data = text.encode()
                self.send_response(status)
                kind = "text/plain" if isinstance(payload, str) else "application/json"
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


def _error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "BadRequestError", "code": 400}}


@pytest.fixture
def stand_in() -> Iterator[StandIn]:
    server = StandIn("tiny-base")
    yield server
    server.close()


def _train(tmp_path: Path, stand_in: StandIn, sync: str, **more: Any) -> Any:
    from gym.train._grpo import GrpoConfig, train_grpo

    config = GrpoConfig.model_validate(
        {
            "envs": [ENV],
            "tasks": [TASK],
            "policy": "openai",
            "model": stand_in.base,
            "server": {"base_url": stand_in.url, "sync": sync, "weights": "tiny"},
            "steps": 2,
            "group_size": 2,
            "updates_per_step": 1,
            "lr": 0.05,
            "watch": {"enabled": False},
            **more,
        }
    )
    store = Store(f"sqlite:///{tmp_path / 'runs.db'}")
    return config, store, train_grpo(config, store=store, out=tmp_path / "ckpt", concurrency=1)


@needs_peft
@pytest.mark.docker
@pytest.mark.timeout(240)
def test_each_update_loads_its_adapter_and_the_next_episodes_ask_for_it(tmp_path, stand_in):
    config, store, result = _train(tmp_path, stand_in, "lora")
    name = f"boxgym-{config.train_id}"
    loads = [b for p, b in stand_in.requests if p == "/v1/load_lora_adapter"]
    assert [b["lora_name"] for b in loads] == [f"{name}-v0", f"{name}-v1", f"{name}-v2"]
    assert [Path(b["lora_path"]).name for b in loads] == ["v0", "v1", "v2"]
    # the order of requests: load v0, its 2 episodes, load v1, unload v0, 2 episodes, ...
    paths = [
        (p.rsplit("/", 1)[1], b.get("lora_name", b.get("model"))) for p, b in stand_in.requests
    ]
    assert paths == [
        ("load_lora_adapter", f"{name}-v0"),
        *[("completions", f"{name}-v0")] * 2,
        ("load_lora_adapter", f"{name}-v1"),
        ("unload_lora_adapter", f"{name}-v0"),
        *[("completions", f"{name}-v1")] * 2,
        ("load_lora_adapter", f"{name}-v2"),
        ("unload_lora_adapter", f"{name}-v1"),
    ]
    # each path held that version's adapter when the server read it: v0 the identity
    # (B = 0), each update a change, the last one the trainer's own weights
    adapters = [stand_in.adapters[f"{name}-v{v}"] for v in range(3)]
    assert adapters[0]["config"]["peft_type"] == "LORA" and adapters[0]["config"]["r"] == 8
    b0 = {k: t for k, t in adapters[0]["tensors"].items() if "lora_B" in k}
    assert b0 and all(float(t.abs().max()) == 0.0 for t in b0.values())
    for before, after in zip(adapters, adapters[1:], strict=False):
        assert any(not after["tensors"][k].equal(t) for k, t in before["tensors"].items()), (
            "an update left the adapter unchanged"
        )
    from safetensors.torch import load_file

    saved = load_file(str(tmp_path / "ckpt" / "adapter" / "adapter_model.safetensors"))
    assert all(saved[k].equal(t) for k, t in adapters[2]["tensors"].items())
    # every episode records the version whose adapter its requests named
    for step, row in enumerate(result.steps):
        episodes = store.episodes(row.run_id)
        assert len(episodes) == 2
        assert {e.policy_params["policy_version"] for e in episodes} == {step}
        assert {e.policy_params["model"] for e in episodes} == {f"{name}-v{step}"}
        assert {e.outcome for e in episodes} == {"pass", "fail"}  # graded in real containers
    assert result.stale == [0, 0]
    assert [r.loss != 0.0 for r in result.steps] == [True, True]


@needs_peft
@pytest.mark.docker
@pytest.mark.timeout(240)
def test_episodes_older_than_the_bound_are_left_out_of_the_update(tmp_path, stand_in):
    config, store, result = _train(tmp_path, stand_in, "none")
    assert set(stand_in.chat_models()) == {stand_in.base}  # nothing was ever loaded
    assert not [p for p, _ in stand_in.requests if "lora" in p]
    versions = [
        {e.policy_params["policy_version"] for e in store.episodes(r.run_id)} for r in result.steps
    ]
    assert versions == [{0}, {0}]  # the server kept version 0 while the trainer moved on
    assert result.stale == [0, 2]  # step 1 updates version 1: version 0 is 1 too old
    first, second = result.steps
    assert first.loss != 0.0 and second.loss == 0.0  # nothing left to train on at step 1
    info = json.loads((tmp_path / "ckpt" / "checkpoint.json").read_text())
    stale_ids = {e.id for e in store.episodes(second.run_id)}
    assert set(info["stale"]) == stale_ids and not stale_ids & set(info["episodes"])


def _scored(version: int) -> ScoredEpisode:
    episode = TrainEpisode(episode_id=f"e{version}", group="g", outcome="pass", reward=1.0)
    return ScoredEpisode(
        episode=episode, env_id=ENV, task_id=TASK, policy_version=version, hidden_pass=True
    )


def test_the_staleness_bound_keeps_versions_within_n_of_the_update():
    episodes = [_scored(v) for v in (-1, 3, 4, 5)]
    kept, stale = split_stale(episodes, 5, 1)
    assert [e.policy_version for e in kept] == [4, 5]
    assert [e.policy_version for e in stale] == [-1, 3]  # no recorded version: stale
    kept, stale = split_stale(episodes, 5, 0)
    assert [e.policy_version for e in kept] == [5]


@needs_peft
def test_a_server_that_refuses_the_adapter_stops_training_with_what_to_fix(tmp_path):
    from gym._policy._tiny import build_tiny
    from gym.train._sync import LoraSettings, LoraSync, add_lora

    loaded = build_tiny(0)
    add_lora(loaded.model, LoraSettings())
    server = StandIn("tiny-base")
    try:
        sync = LoraSync(
            server.url, name="x", folder=tmp_path / "ad", server_folder="/not/mounted/here"
        )
        with pytest.raises(PolicyError, match="--enable-lora.*read access to /not/mounted/here"):
            sync.push(loaded.model, 0)
        sync.close()
    finally:
        server.close()
