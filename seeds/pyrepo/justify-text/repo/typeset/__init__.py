"""Plain-text layout in fixed-width columns."""

from typeset.align import align_center, align_right
from typeset.justify import justify
from typeset.wrap import wrap

__all__ = ["align_center", "align_right", "justify", "wrap"]
