"""Reading and writing the to-do file."""

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path


@dataclass
class Item:
    """One to-do item."""

    id: int
    title: str
    done: bool = False
    tags: list = field(default_factory=list)

    def line(self):
        """The item as `list` prints it."""
        mark = "x" if self.done else " "
        tags = "".join(f" #{t}" for t in sorted(self.tags))
        return f"[{mark}] {self.id} {self.title}{tags}"


def load_items(path):
    """Items of a to-do file, by id ([] when the file does not exist)."""
    path = Path(path)
    if not path.exists():
        return []
    data = json.loads(path.read_text(encoding="utf-8"))
    return sorted((Item(**row) for row in data["items"]), key=lambda i: i.id)


def save_items(path, items):
    """Write items to a to-do file."""
    data = {"items": [asdict(i) for i in sorted(items, key=lambda i: i.id)]}
    Path(path).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
