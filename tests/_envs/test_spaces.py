from gym.authoring import TextSpace, ToolCallSpace

LLM_TEXT = "Sure! Here's the fix:\n```python\nprint('héllo, wörld')\n```\n\t— done."


def test_text_space_accepts_real_llm_text():
    space = TextSpace()
    assert space.contains(LLM_TEXT) and LLM_TEXT in space
    assert not space.contains(b"bytes") and not space.contains(None)
    assert not TextSpace(max_length=5).contains("too long")


def test_text_space_samples_deterministically():
    a, b = TextSpace(seed=7), TextSpace(seed=7)
    assert [a.sample() for _ in range(3)] == [b.sample() for _ in range(3)]
    assert all(TextSpace().contains(TextSpace(seed=1).sample()) for _ in range(5))


def test_tool_call_space_contains_calls_in_every_shape_models_use():
    space = ToolCallSpace(["bash", "submit"])
    assert space.contains({"name": "bash", "arguments": {"command": "ls -la | head"}})
    assert space.contains({"name": "bash", "arguments": '{"command": "echo \\"hi\\""}'})
    assert space.contains('{"name": "submit", "arguments": {}}')
    assert not space.contains({"name": "rm_rf", "arguments": {}})
    assert not space.contains("I think we should run ls")


def test_tool_call_space_samples_from_its_safe_calls():
    calls = [
        {"name": "bash", "arguments": {"command": "true"}},
        {"name": "bash", "arguments": {"command": "pwd"}},
    ]
    space = ToolCallSpace(["bash"], samples=calls, seed=3)
    drawn = [space.sample() for _ in range(10)]
    assert all(d in calls for d in drawn) and all(space.contains(d) for d in drawn)
    again = ToolCallSpace(["bash"], samples=calls, seed=3)
    assert drawn == [again.sample() for _ in range(10)]
