"""Rendering templates against a context."""

import re

from minitpl.errors import TemplateError
from minitpl.lexer import tokenize

NAME = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")


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


def evaluate(expr, context):
    if not NAME.match(expr):
        raise TemplateError(f"bad expression {expr!r}")
    return lookup(context, expr)


def render(template, context):
    """The template with every {{ name }} replaced by str() of its value."""
    out = []
    for kind, value in tokenize(template):
        out.append(value if kind == "text" else str(evaluate(value, context)))
    return "".join(out)
