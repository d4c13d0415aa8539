"""Errors of the template engine."""


class TemplateError(Exception):
    """A malformed template or an undefined variable."""
