"""INI-style configuration files."""

from cfgtool.config import Config, InterpolationError, load_config
from cfgtool.parser import ParseError, parse_ini

__all__ = ["Config", "InterpolationError", "ParseError", "load_config", "parse_ini"]
