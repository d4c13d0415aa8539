"""The CLI's consoles (gym/_cli/_app.py): what they print is shown as written."""

from __future__ import annotations

import pytest

from gym._cli._app import console, err


@pytest.mark.parametrize("where", [console, err], ids=["stdout", "stderr"])
def test_a_colon_name_is_printed_as_written_not_as_an_emoji(where):
    """A task id or a path holding ``:name:`` is not turned into an emoji."""
    with where.capture() as out:
        where.print("task :thumbs_up: in /runs/:smile:/a.db")
        where.print("[bold]x[/] :smile:")
    assert out.get() == "task :thumbs_up: in /runs/:smile:/a.db\nx :smile:\n"
