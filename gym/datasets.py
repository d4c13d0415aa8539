"""Importing datasets as tasks, for authors of environments.

Turns a JSONL, JSON, CSV or Hugging Face dataset into an environment's tasks.

    >>> from gym.datasets import DatasetMapping, import_dataset
    >>> mapping = DatasetMapping.from_toml(Path("seeds/mbpp/mapping.toml"))   # doctest: +SKIP
    >>> import_dataset("mbpp.jsonl", mapping, "seeds", layout="index")        # doctest: +SKIP

The command line does the same: ``gym env import DATASET --mapping FILE``. A family
whose tasks live in an index (``layout="index"``) loads them with
`load_indexed_tasks` in its ``load_tasks``; docs/authoring.md has the whole story,
with MBPP (``boxgym/MBPP-v0``) as the worked example. SQL datasets (question, gold
query, database dump) have their own importer, `import_sql` with a `SQLMapping`; shell
datasets (question, gold command, file tree) `import_shell` with a `ShellMapping`;
tool-API datasets (tools, user turns, gold calls, initial state) `import_toolapi` with a
`ToolAPIMapping`. A
family that materialises its tasks from a package keeps them under `data_dir`
(``GYM_DATA`` or trajectories/).
"""

from gym._core._paths import data_dir
from gym._core._renamed import renamed
from gym._datasets._dataset import (
    Correction,
    DatasetMapping,
    ImportedTask,
    Mapper,
    SplitRule,
    TaskFormat,
    folder_name,
    read_records,
    seed_files,
)
from gym._datasets._floats import close_source, tolerant
from gym._datasets._importer import ImportResult, import_dataset, load_indexed_tasks
from gym._datasets._shell import ShellMapping, import_shell
from gym._datasets._sql import SQLMapping, asks_order, import_sql, to_postgres
from gym._datasets._toolapi import ToolAPIMapping, import_toolapi

__all__ = [
    "Correction",
    "DatasetMapping",
    "ImportResult",
    "ImportedTask",
    "Mapper",
    "SQLMapping",
    "ShellMapping",
    "SplitRule",
    "TaskFormat",
    "ToolAPIMapping",
    "asks_order",
    "close_source",
    "data_dir",
    "folder_name",
    "import_dataset",
    "import_shell",
    "import_sql",
    "import_toolapi",
    "load_indexed_tasks",
    "read_records",
    "seed_files",
    "to_postgres",
    "tolerant",
]

__getattr__ = renamed("gym.datasets", {"task_files": "seed_files"}, globals())
"""``task_files`` (also the name of `gym.authoring`'s workspace files) is `seed_files`."""
