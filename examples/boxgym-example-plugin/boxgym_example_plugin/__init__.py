"""An example boxgym environment package: example/Greeting-v0."""

from pathlib import Path
from typing import ClassVar

import gym
import gym.images

__all__ = ["GreetingEnv", "register"]

HERE = Path(__file__).resolve().parent


class GreetingEnv(gym.CodeEnv):
    """Write a greeting function; graded by hidden checks in a fresh container."""

    family: ClassVar[str] = "greeting"
    image: ClassVar[str] = "greeting"

    @classmethod
    def load_tasks(cls) -> list[gym.Task]:
        """Tasks shipped inside this package."""
        return gym.load_tasks(HERE / "seeds", cls.family)


def register() -> None:
    """Called by boxgym through the ``boxgym.environments`` entry point."""
    gym.images.register_image("greeting", HERE / "image")
    gym.register("example/Greeting-v0", "boxgym_example_plugin:GreetingEnv", max_steps=10)
