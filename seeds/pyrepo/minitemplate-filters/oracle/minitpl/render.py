"""Rendering templates against a context."""

import re

from minitpl.errors import TemplateError
from minitpl.filters import _MISSING, FILTERS
from minitpl.lexer import tokenize

NAME = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
FILTER = re.compile(r'^([A-Za-z_]\w*)(?:\s*:\s*(?:"([^"]*)"|(-?\d+)))?$')


def lookup(context, dotted):
    """The value of a dotted name: dict keys first, then attributes."""
    value = context
    for part in dotted.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif hasattr(value, part):
            value = getattr(value, part)
        else:
            raise TemplateError(f"undefined variable {dotted!r}")
    return value


def _parse_filter(text):
    match = FILTER.match(text.strip())
    if not match:
        raise TemplateError(f"bad filter {text.strip()!r}")
    name, string, number = match.groups()
    if name not in FILTERS:
        raise TemplateError(f"unknown filter {name!r}")
    if string is not None:
        return name, (string,)
    if number is not None:
        return name, (int(number),)
    return name, ()


def _split_pipes(expr):
    """Split on '|' outside double quotes."""
    parts, current, quoted = [], [], False
    for ch in expr:
        if ch == '"':
            quoted = not quoted
        if ch == "|" and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return parts


def evaluate(expr, context):
    name, *filter_texts = (p.strip() for p in _split_pipes(expr))
    if not NAME.match(name):
        raise TemplateError(f"bad expression {expr!r}")
    chain = [_parse_filter(text) for text in filter_texts]
    try:
        value = lookup(context, name)
    except TemplateError:
        if not any(f == "default" for f, _ in chain):
            raise
        value = _MISSING
    for filter_name, args in chain:
        if value is _MISSING and filter_name != "default":
            continue
        try:
            value = FILTERS[filter_name](value, *args)
        except TemplateError:
            raise
        except Exception as exc:
            raise TemplateError(f"filter {filter_name!r} failed: {exc}") from exc
    return "" if value is _MISSING else value


def render(template, context):
    """The template with every {{ expr }} replaced by str() of its value."""
    out = []
    for kind, value in tokenize(template):
        out.append(value if kind == "text" else str(evaluate(value, context)))
    return "".join(out)
