"""A minimal text template engine: {{ name | filter:arg }} placeholders."""

from minitpl.errors import TemplateError
from minitpl.filters import register_filter
from minitpl.render import render

__all__ = ["TemplateError", "register_filter", "render"]
