"""Splitting a template into text and {{ expression }} tokens."""

import re

from minitpl.errors import TemplateError

TAG = re.compile(r"\{\{(.*?)\}\}", re.S)


def tokenize(template):
    """[("text", str) | ("expr", str)] in order; an unclosed '{{' is an error."""
    tokens, pos = [], 0
    for match in TAG.finditer(template):
        if match.start() > pos:
            tokens.append(("text", template[pos : match.start()]))
        tokens.append(("expr", match.group(1).strip()))
        pos = match.end()
    rest = template[pos:]
    if "{{" in rest:
        raise TemplateError("unclosed '{{'")
    if rest:
        tokens.append(("text", rest))
    return tokens
