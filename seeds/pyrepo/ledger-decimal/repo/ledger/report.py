"""Printable statements."""


def format_amount(value):
    """'1,234.50' style, with a leading '-' for negative amounts."""
    return f"{value:,.2f}"


def statement(account):
    """The account's entries and closing balance as text lines."""
    lines = [f"Statement for {account.name}"]
    for entry in account.history:
        sign = "+" if entry.kind == "deposit" else "-"
        memo = f"  {entry.memo}" if entry.memo else ""
        lines.append(f"{entry.day.isoformat()}  {sign}{format_amount(entry.amount):>12}{memo}")
    lines.append(f"Balance: {format_amount(account.balance)}")
    return "\n".join(lines)
