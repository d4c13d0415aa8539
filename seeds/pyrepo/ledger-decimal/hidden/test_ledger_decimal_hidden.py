from decimal import Decimal

import pytest

from ledger import Account, InsufficientFunds, parse_entry, statement


def test_amounts_are_exact_decimals():
    entry = parse_entry("2024-01-05 deposit 100.10")
    assert type(entry.amount) is Decimal
    assert entry.amount == Decimal("100.10")


@pytest.mark.parametrize("amount", ["1.005", "0", "-1", "abc", "nan", "inf"])
def test_bad_amounts(amount):
    with pytest.raises(ValueError):
        parse_entry(f"2024-01-05 deposit {amount}")


def test_balance_type_and_places():
    assert str(Account("x").balance) == "0.00"
    acct = Account("x", "12.5")
    assert type(acct.balance) is Decimal and str(acct.balance) == "12.50"
    assert str(Account("y", Decimal("3")).balance) == "3.00"
    assert str(Account("z", 7).balance) == "7.00"


def test_float_opening_refused():
    with pytest.raises(TypeError):
        Account("x", 0.1)


def test_exact_withdrawals():
    acct = Account("x", "0.30")
    for _ in range(3):
        acct.apply(parse_entry("2024-01-01 withdrawal 0.10"))
    assert acct.balance == Decimal("0.00") and str(acct.balance) == "0.00"
    with pytest.raises(InsufficientFunds):
        acct.apply(parse_entry("2024-01-02 withdrawal 0.01"))


def test_many_small_deposits():
    acct = Account("x")
    for _ in range(1000):
        acct.apply(parse_entry("2024-01-01 deposit 0.10"))
    assert str(acct.balance) == "100.00"


def test_interest_half_up():
    acct = Account("x", "267.50")
    interest = acct.apply_interest(1)
    assert type(interest) is Decimal and interest == Decimal("2.68")
    assert str(acct.balance) == "270.18"
    acct2 = Account("y", "100.00")
    assert acct2.apply_interest("0.005") == Decimal("0.01")
    assert acct2.apply_interest(Decimal("0.004")) == Decimal("0.00")
    assert str(acct2.balance) == "100.01"


def test_statement_unchanged():
    acct = Account("main", "1000")
    acct.apply(parse_entry("2024-02-01 deposit 1234.5 Bonus"))
    acct.apply(parse_entry("2024-02-02 withdrawal 0.05"))
    assert statement(acct) == (
        "Statement for main\n"
        "2024-02-01  +    1,234.50  Bonus\n"
        "2024-02-02  -        0.05\n"
        "Balance: 2,234.45"
    )
