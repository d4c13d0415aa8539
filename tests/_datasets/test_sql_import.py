"""The SQL importer: a dataset of questions, gold queries and SQLite/MySQL dumps -> SQL tasks.

The fixture (sql_fixture/) is a Spider-style dataset: three questions over one SQLite
dump (mixed-case names, PRAGMA, a transaction, SQLite's sqlite_sequence bookkeeping),
one question asking for an order, two not. The container test imports it and validates
the tasks in real containers (oracle passes, noop and the panel fail, the perturbed
oracle is flagged).
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest
from forget import forget
from typer.testing import CliRunner

import gym
from environments.sql import SQLEnv
from gym.datasets import SQLMapping, asks_order, import_sql, to_postgres

FIXTURE = Path(__file__).parent / "sql_fixture"
DATASET = FIXTURE / "questions.jsonl"
ENV_ID = "test/ImportedSQL-v0"


def mapping(**changes: object) -> SQLMapping:
    return SQLMapping.from_toml(FIXTURE / "mapping.toml").model_copy(update=changes)


def test_a_sqlite_dump_becomes_postgres_without_its_session_statements() -> None:
    statements = to_postgres((FIXTURE / "concert_singer.sql").read_text(), "sqlite")
    text = "\n".join(statements)
    assert statements[0].startswith('CREATE TABLE "singer" ("singer_id" INT')
    assert "INSERT INTO singer VALUES (4, 'Rose White', 'France', 41, 8)" in statements
    for gone in ("PRAGMA", "BEGIN", "COMMIT", "sqlite_sequence", "Singer"):
        assert gone not in text


def test_a_mysql_dump_loses_its_table_options_and_locks() -> None:
    dump = (
        "SET FOREIGN_KEY_CHECKS=0;\n"
        "CREATE TABLE `Staff` (`Emp_ID` int NOT NULL AUTO_INCREMENT, `Pay` decimal(10,2),"
        " PRIMARY KEY (`Emp_ID`)) ENGINE=InnoDB AUTO_INCREMENT=3 DEFAULT CHARSET=utf8mb4;\n"
        "LOCK TABLES `Staff` WRITE;\n"
        "INSERT INTO `Staff` VALUES (1,1000.50),(2,NULL);\n"
        "UNLOCK TABLES;\n"
    )
    statements = to_postgres(dump, "mysql")
    assert len(statements) == 2
    assert "ENGINE" not in statements[0] and "CHARACTER SET" not in statements[0]
    assert statements[1] == 'INSERT INTO "staff" VALUES (1, 1000.50), (2, NULL)'


def test_sql_that_cannot_be_parsed_is_a_config_error() -> None:
    with pytest.raises(gym.ConfigError, match="not sqlite SQL"):
        to_postgres("CREATE TABLE (((", "sqlite")


@pytest.mark.parametrize(
    ("query", "ordered"),
    [
        ("SELECT a FROM t ORDER BY a", True),
        ("SELECT a FROM t ORDER BY a DESC LIMIT 3", True),
        ("(SELECT a FROM t ORDER BY a)", True),
        ("SELECT a FROM t UNION SELECT b FROM u ORDER BY 1", True),
        ("SELECT a FROM t", False),
        ("SELECT a FROM (SELECT a FROM t ORDER BY a) AS s", False),
        ("SELECT a, row_number() OVER (ORDER BY a) FROM t", False),
        ("SELECT string_agg(a, ',' ORDER BY a) FROM t", False),
        ("SELECT 'ORDER BY' AS words FROM t -- ORDER BY a", False),
        ("not sql at all (((", False),
    ],
)
def test_order_is_asked_only_by_the_outermost_order_by(query: str, ordered: bool) -> None:
    assert asks_order(query) is ordered


def test_records_become_read_tasks_that_share_one_database(tmp_path: Path) -> None:
    result = import_sql(DATASET, mapping(), tmp_path)
    assert result.problems == []
    assert result.written == ["concerts-per-year", "french-singers-by-age", "singers-with-concerts"]
    assert result.splits == {"train": 2, "eval": 1}
    family = tmp_path / "concerts"
    assert sorted(p.name for p in (family / "databases").iterdir()) == ["concert_singer.sql"]
    specs = {
        p.parent.name: tomllib.loads(p.read_text()) for p in sorted(family.glob("*/task.toml"))
    }
    by_age = specs["french-singers-by-age"]
    assert (by_age["kind"], by_age["ordered"], by_age["tables"]) == ("read", True, ["singer"])
    assert by_age["database"] == "concert_singer"
    assert by_age["tags"] == {"database": "concert_singer"}
    assert specs["concerts-per-year"]["ordered"] is False
    assert specs["singers-with-concerts"]["tables"] == ["singer", "concert"]
    gold = (family / "french-singers-by-age" / "hidden" / "gold.sql").read_text()
    assert gold.startswith("SELECT name, age FROM singer WHERE country = 'France' ORDER BY age")


def test_the_tasks_load_as_sql_tasks_over_their_own_database(tmp_path: Path) -> None:
    from environments.sql.grading import TaskSpec
    from gym._core._models import load_tasks

    import_sql(DATASET, mapping(), tmp_path)
    tasks = {t.id: t for t in load_tasks(tmp_path, "concerts")}
    spec = TaskSpec.of(tasks["french-singers-by-age"])
    assert Path(spec.database) == tmp_path / "concerts" / "databases" / "concert_singer.sql"
    assert (spec.schema_name, spec.ordered, spec.scope) == ("public", True, ("singer",))


def test_a_bad_record_is_named_and_left_out_the_others_written(tmp_path: Path) -> None:
    records = [json.loads(line) for line in DATASET.read_text().splitlines()]
    records[0]["query"] = "SELECT name FROM singers"  # no such table
    records[1]["query"] = "SELECT 1; SELECT 2"
    records[2]["split"] = "dev"
    extra = {**records[2], "id": "fine", "split": "train"}
    result = import_sql([*records, extra], mapping(), tmp_path, base=FIXTURE)
    assert result.written == ["fine"]
    assert len(result.problems) == 3
    assert (
        "record 1: gold reads singers, which database 'concert_singer' does not"
        in (result.problems[0])
    )
    assert "record 2: gold: 2 statements" in result.problems[1]
    assert "record 3: split = 'dev'" in result.problems[2]


def test_a_mapping_of_another_kind_or_with_an_unknown_key_is_refused() -> None:
    with pytest.raises(gym.ConfigError, match="kind = 'toolapi'"):
        SQLMapping.from_dict({"kind": "toolapi", "family": "x"})
    with pytest.raises(gym.ConfigError, match="solution"):
        SQLMapping.from_dict({"family": "x", "solution": "query"})


def test_gym_env_import_kind_sql_writes_the_tasks(tmp_path: Path) -> None:
    from gym._cli import app

    args = ["env", "import", str(DATASET), "--mapping", str(FIXTURE / "mapping.toml")]
    result = CliRunner().invoke(app, [*args, "--out", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "concerts" / "concerts-per-year" / "hidden" / "gold.sql").is_file()
    plain = ["env", "import", str(DATASET), "--kind", "sql", "--family", "other"]
    opts = ["--solution", "query", "--split-field", "split", "--out", str(tmp_path)]
    result = CliRunner().invoke(app, [*plain, *opts])
    assert result.exit_code == 1  # the default database field ("database") is absent
    assert "database = 'database': the record has no such" in " ".join(result.output.split())


# -- in real containers ----------------------------------------------------------------


class ImportedSQLEnv(SQLEnv):
    """The SQL family over the tasks a test imported (its seeds folder set per test)."""

    family: ClassVar[str] = "concerts"
    seeds: ClassVar[Path] = Path()

    @classmethod
    def seeds_dir(cls) -> Path:
        return cls.seeds


@pytest.fixture
def imported(tmp_path: Path) -> Iterator[Path]:
    result = import_sql(DATASET, mapping(), tmp_path)
    assert result.problems == []
    ImportedSQLEnv.seeds = tmp_path
    gym.register(ENV_ID, f"{__name__}:ImportedSQLEnv", max_steps=10, max_seconds=300)
    yield tmp_path
    forget([ENV_ID])


@pytest.mark.docker
def test_an_imported_sql_dataset_validates_in_real_containers(engine: None, imported: Path) -> None:
    from gym._run._validate import validate_env

    checks = validate_env(ENV_ID, repeats=1, concurrency=3)
    assert [c.task_id for c in checks] == [
        "concerts-per-year",
        "french-singers-by-age",
        "singers-with-concerts",
    ]
    for check in checks:
        assert check.ok, (check.task_id, check.problems)
        assert check.oracle == ["pass"] and check.noop == "fail"
        assert "write_in_read_task" in check.perturbed
