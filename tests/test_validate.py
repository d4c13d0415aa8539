"""Environment validation on the toy family: oracle, noop, perturbed oracle, regrade."""

from __future__ import annotations

from toy_env import ENV_ID

from gym import validate_env


def test_every_toy_task_validates():
    checks = validate_env(ENV_ID, repeats=2)
    assert [c.task_id for c in checks] == ["add", "greet"]
    for check in checks:
        assert check.ok, check.problems
        assert check.oracle == ["pass", "pass"] and check.noop == "fail"
        assert check.perturbed == "outside_allowed_paths" and check.regrade_identical is True


def test_a_task_whose_oracle_fails_is_reported(monkeypatch):
    import toy_env

    real = toy_env.ToyEnv.load_tasks

    def wrong(cls):
        return [t.model_copy(update={"data": {**t.data, "expected": "7"}}) for t in real()]

    monkeypatch.setattr(toy_env.ToyEnv, "load_tasks", classmethod(wrong))
    (check,) = validate_env(ENV_ID, repeats=1, tasks=["add"])
    assert not check.ok and check.oracle == ["fail"]
    assert check.regrade_identical is None and "oracle run 1: fail" in check.problems[0]
