"""A small OpenAI-compatible server over `LocalPolicy`, answering the way vLLM does.

    python -m gym._policy._serve --model smollm2-135m --port 8000

``POST /v1/chat/completions`` reads tool calls from the model's text and returns them
as native ``tool_calls``. ``tool_choice`` is honoured as vLLM does: ``"required"``
constrains decoding to a valid call of one of the tools, a named tool
(``{"type": "function", "function": {"name": ...}}``) to a call of that tool, and
``"auto"`` (or none) lets the model write freely; ``"none"`` offers no tools. With
``logprobs`` it returns ``logprobs.content[]``, and with ``return_token_ids`` the
prompt's ids (``prompt_token_ids``) and the sampled ids
(``choices[0].token_ids``), as vLLM 0.10.2 and later do. ``GET /v1/models`` lists the
served name; ``GET /health`` answers 200 once the model is loaded. Non-streaming only,
one generation at a time, stdlib ``http.server``: for CPU machines, tests and demos,
where `OpenAIPolicy` needs a real endpoint with token-in/token-out and no GPU is lent
(``transformers serve`` also works offline, but returns neither tool calls for this
model nor logprobs).
"""

from __future__ import annotations

import argparse
import json
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from gym._core._errors import ConfigError, PolicyError
from gym._policy._base import Turn
from gym._policy._local import DEFAULT_MODEL, LocalModel, LocalPolicy

__all__ = ["chat_completion", "main", "make_server"]


class _BadRequest(Exception):
    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def chat_completion(body: dict[str, Any], model: str, served_name: str) -> dict[str, Any]:
    """The response to one chat completions request body.

    Args:
        body: the request JSON.
        model: what `LocalPolicy` loads (bundled name, folder or .gguf file).
        served_name: the name clients send as ``model``.
    """
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _BadRequest("'messages' must be a non-empty list")
    if body.get("model") not in (None, served_name):
        raise _BadRequest(f"The model `{body.get('model')}` does not exist.", 404)
    if body.get("stream"):
        raise _BadRequest("streaming is not supported by this server")
    tools, constrained = _tool_choice(body)
    max_tokens = body.get("max_completion_tokens") or body.get("max_tokens") or 256
    temperature = body.get("temperature")
    try:
        policy = LocalPolicy(
            model,
            max_new_tokens=int(max_tokens),
            temperature=float(temperature) if temperature is not None else 1.0,
            top_p=float(body.get("top_p") or 1.0),
            seed=int(body.get("seed") or 0),
            threads=None,  # as make_server set them
            constrained=constrained,
        )
    except (ConfigError, TypeError, ValueError) as exc:
        raise _BadRequest(str(exc)) from None
    turn = policy.act(messages, tools)
    return _response(turn, body, served_name, policy.load(), int(max_tokens))


def _tool_choice(body: dict[str, Any]) -> tuple[list[dict[str, Any]], bool]:
    """The tools to offer and whether decoding is constrained to a call of one of them."""
    tools: list[dict[str, Any]] = body.get("tools") or []
    choice = body.get("tool_choice")
    if choice == "none":
        return [], False
    if isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name")
        named = [t for t in tools if (t.get("function") or {}).get("name") == name]
        if not named:
            raise _BadRequest(f"tool_choice names {name!r}, which is not among the tools")
        return named, True
    if choice not in (None, "auto", "required"):
        raise _BadRequest(f"tool_choice must be none, auto, required or a named tool: {choice!r}")
    return tools, choice == "required" and bool(tools)


def _response(
    turn: Turn, body: dict[str, Any], served_name: str, loaded: LocalModel, max_tokens: int
) -> dict[str, Any]:
    ids = turn.completion_token_ids or []
    text = turn.message.get("content") or ""
    message: dict[str, Any] = {"role": "assistant", "content": text, "reasoning": None}
    finish = "stop"
    if turn.call is not None:
        message["content"] = text.split("<tool_call>", 1)[0].strip() or None
        message["tool_calls"] = turn.message["tool_calls"]
        finish = "tool_calls"
    elif len(ids) >= max_tokens and ids[-1] != loaded.tokenizer.eos_token_id:
        finish = "length"
    choice: dict[str, Any] = {
        "index": 0,
        "message": message,
        "logprobs": None,
        "finish_reason": finish,
        "stop_reason": None,
        "token_ids": ids if body.get("return_token_ids") else None,
    }
    if body.get("logprobs"):
        choice["logprobs"] = {"content": _logprob_content(loaded, ids, turn.logprobs or [])}
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": served_name,
        "choices": [choice],
        "usage": turn.usage,
        "prompt_token_ids": turn.prompt_token_ids if body.get("return_token_ids") else None,
    }


def _logprob_content(loaded: LocalModel, ids: list[int], logprobs: list[float]) -> list[Any]:
    entries = []
    for token_id, logprob in zip(ids, logprobs, strict=True):
        token = loaded.tokenizer.decode([token_id])
        entries.append(
            {"token": token, "logprob": logprob, "bytes": list(token.encode()), "top_logprobs": []}
        )
    return entries


def make_server(
    model: str = DEFAULT_MODEL,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    served_name: str | None = None,
    threads: int | None = 1,
) -> ThreadingHTTPServer:
    """A server (not yet serving) with the model already loaded.

    Args:
        model: what `LocalPolicy` loads.
        host: address to listen on.
        port: port to listen on (0 picks a free one).
        served_name: the name clients send as ``model`` (``model`` by default).
        threads: torch's thread count.
    """
    LocalPolicy(model, threads=threads).load()
    name = served_name or model

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.rstrip("/") == "/health":
                self._send(200, {"status": "ok"})
            elif self.path.rstrip("/") == "/v1/models":
                self._send(200, {"object": "list", "data": [{"id": name, "object": "model"}]})
            else:
                self._send(404, _error("not found", 404))

        def do_POST(self) -> None:
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._send(404, _error("not found", 404))
                return
            try:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"null")
                if not isinstance(body, dict):
                    raise _BadRequest("the request body must be a JSON object")
                self._send(200, chat_completion(body, model, name))
            except json.JSONDecodeError as exc:
                self._send(400, _error(f"the request body is not JSON: {exc}", 400))
            except _BadRequest as exc:
                self._send(exc.status, _error(str(exc), exc.status))
            except PolicyError as exc:
                self._send(500, _error(str(exc), 500))

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    return server


def _error(message: str, code: int) -> dict[str, Any]:
    kind = {400: "BadRequestError", 404: "NotFoundError"}.get(code, "InternalServerError")
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def main(argv: list[str] | None = None) -> None:
    """Serve a local model until interrupted."""
    parser = argparse.ArgumentParser(prog="python -m gym._policy._serve", description=__doc__)
    parser.add_argument("--model", default=DEFAULT_MODEL, help="bundled name, folder or .gguf")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--served-model-name", default=None)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    server = make_server(
        args.model,
        host=args.host,
        port=args.port,
        served_name=args.served_model_name,
        threads=args.threads,
    )
    port = server.server_address[1]
    print(
        f"serving {args.served_model_name or args.model} on http://{args.host}:{port}/v1",
        flush=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
