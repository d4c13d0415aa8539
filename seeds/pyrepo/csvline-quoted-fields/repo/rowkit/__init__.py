"""Delimited text (CSV-like) reading and writing."""

from rowkit.records import read_records, write_records
from rowkit.split import split_line, to_line

__all__ = ["read_records", "split_line", "to_line", "write_records"]
