from decimal import Decimal

from tally import Money, split


def amounts(shares):
    return [s.amount for s in shares]


def test_ten_in_three():
    assert amounts(split(Money("10.00"), 3)) == [Decimal("3.34"), Decimal("3.33"), Decimal("3.33")]


def test_sum_is_exact():
    for total in ("100.00", "0.07", "99.99", "1234.56"):
        for parts in (2, 3, 6, 7, 11):
            shares = split(Money(total), parts)
            assert len(shares) == parts
            assert sum(amounts(shares), Decimal(0)) == Decimal(total)
            assert max(amounts(shares)) - min(amounts(shares)) <= Decimal("0.01")


def test_negative_amount():
    assert amounts(split(Money("-0.05"), 3)) == [Decimal("-0.02"), Decimal("-0.02"), Decimal("-0.01")]


def test_fewer_cents_than_parts():
    assert amounts(split(Money("0.02", "USD"), 4)) == [
        Decimal("0.01"), Decimal("0.01"), Decimal("0"), Decimal("0"),
    ]


def test_currency_and_type_kept():
    shares = split(Money("1.00", "JPY"), 3)
    assert type(shares) is list
    assert all(type(s) is Money and s.currency == "JPY" for s in shares)
    assert [str(s) for s in shares] == ["0.34 JPY", "0.33 JPY", "0.33 JPY"]
