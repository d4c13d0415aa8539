"""Typed access to parsed configuration."""

from cfgtool.parser import parse_ini

TRUE = {"1", "yes", "true", "on"}
FALSE = {"0", "no", "false", "off"}


class Config:
    """Configuration values by section and key (names are case-insensitive)."""

    def __init__(self, sections):
        self._sections = {s.lower(): {k.lower(): v for k, v in kv.items()}
                          for s, kv in sections.items()}

    def sections(self):
        return sorted(self._sections)

    def keys(self, section):
        return sorted(self._sections[section.lower()])

    def get(self, section, key, default=None):
        """The value of key in section, or default when either is missing."""
        return self._sections.get(section.lower(), {}).get(key.lower(), default)

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
