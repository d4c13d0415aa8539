"""Plain-text tables."""

from gridfmt.cells import cell_text
from gridfmt.table import format_table

__all__ = ["cell_text", "format_table"]
