"""A minimal text template engine: {{ name }} placeholders."""

from minitpl.errors import TemplateError
from minitpl.render import render

__all__ = ["TemplateError", "render"]
