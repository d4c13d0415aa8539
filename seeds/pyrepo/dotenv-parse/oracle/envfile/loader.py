"""Loading a .env file into an environment mapping."""

from pathlib import Path

from envfile.parser import parse


def load(path, environ, *, override=False):
    """Read a .env file and set its values in `environ` (a dict-like mapping).

    Existing keys are kept unless override is true. `${NAME}` references fall back on
    `environ`. Returns the names that were set.
    """
    values = parse(Path(path).read_text(encoding="utf-8"), environ)
    changed = []
    for key, value in values.items():
        if override or key not in environ:
            environ[key] = value
            changed.append(key)
    return changed
