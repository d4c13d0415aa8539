"""Bank-account ledgers."""

from ledger.account import Account, InsufficientFunds
from ledger.entries import Entry, parse_entry
from ledger.report import format_amount, statement

__all__ = ["Account", "Entry", "InsufficientFunds", "format_amount", "parse_entry", "statement"]
