"""Reading .env files."""

from envfile.loader import load
from envfile.parser import parse

__all__ = ["load", "parse"]
