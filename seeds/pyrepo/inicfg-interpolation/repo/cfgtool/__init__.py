"""INI-style configuration files."""

from cfgtool.config import Config, load_config
from cfgtool.parser import ParseError, parse_ini

__all__ = ["Config", "ParseError", "load_config", "parse_ini"]
