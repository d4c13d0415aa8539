from datetime import date

import pytest

from ledger import Account, InsufficientFunds, parse_entry, statement


def test_parse_entry():
    entry = parse_entry("2024-01-05 deposit 100.25 Salary January")
    assert entry.day == date(2024, 1, 5)
    assert entry.kind == "deposit"
    assert entry.amount == 100.25
    assert entry.memo == "Salary January"


def test_parse_errors():
    for line in ("2024-01-05 gift 10", "2024-01-05 deposit -3", "2024-01-05 deposit"):
        with pytest.raises(ValueError):
            parse_entry(line)


def test_apply():
    acct = Account("main", 50)
    acct.apply(parse_entry("2024-01-01 deposit 25.50"))
    acct.apply(parse_entry("2024-01-02 withdrawal 10"))
    assert acct.balance == 65.5
    with pytest.raises(InsufficientFunds):
        acct.apply(parse_entry("2024-01-03 withdrawal 1000"))


def test_statement():
    acct = Account("main")
    acct.apply(parse_entry("2024-02-01 deposit 1234.5 Bonus"))
    assert statement(acct) == (
        "Statement for main\n2024-02-01  +    1,234.50  Bonus\nBalance: 1,234.50"
    )
