"""Typed access to parsed configuration, with ${key} / ${section:key} interpolation."""

import re

from cfgtool.parser import parse_ini

TRUE = {"1", "yes", "true", "on"}
FALSE = {"0", "no", "false", "off"}
TOKEN = re.compile(r"\$\$|\$\{([^}:]*)(?::([^}]*))?\}")


class InterpolationError(ValueError):
    """A reference to a missing value, or a cycle of references."""


class Config:
    """Configuration values by section and key (names are case-insensitive)."""

    def __init__(self, sections):
        self._sections = {s.lower(): {k.lower(): v for k, v in kv.items()}
                          for s, kv in sections.items()}

    def sections(self):
        return sorted(self._sections)

    def keys(self, section):
        return sorted(self._sections[section.lower()])

    def raw(self, section, key):
        """The value as written (KeyError when missing)."""
        return self._sections[section.lower()][key.lower()]

    def _resolve(self, section, key, chain):
        where = (section, key)
        if where in chain:
            path = " -> ".join(f"{s}:{k}" for s, k in (*chain, where))
            raise InterpolationError(f"reference cycle: {path}")
        try:
            value = self._sections[section][key]
        except KeyError:
            raise InterpolationError(f"no value {section}:{key}") from None
        chain = (*chain, where)

        def replace(match):
            if match.group(0) == "$$":
                return "$"
            first, second = match.group(1), match.group(2)
            if second is None:
                return self._resolve(section, first.strip().lower(), chain)
            return self._resolve(first.strip().lower(), second.strip().lower(), chain)

        return TOKEN.sub(replace, value)

    def get(self, section, key, default=None):
        """The interpolated value of key in section, or default when it is missing."""
        section, key = section.lower(), key.lower()
        if key not in self._sections.get(section, {}):
            return default
        return self._resolve(section, key, ())

    def get_int(self, section, key, default=None):
        value = self.get(section, key)
        return default if value is None else int(value)

    def get_bool(self, section, key, default=None):
        value = self.get(section, key)
        if value is None:
            return default
        if value.lower() in TRUE:
            return True
        if value.lower() in FALSE:
            return False
        raise ValueError(f"[{section}] {key}: not a boolean: {value!r}")


def load_config(text):
    """A Config from INI text."""
    return Config(parse_ini(text))
