"""A page's document section: where a decoder-only model with a long context takes a whole document (placed by the
Decode and Attention pages above their one-line input)."""
from __future__ import annotations

from ui.models import ActiveModel

from ..features import show_long_input

__all__ = ["show_document"]


def show_document(active: ActiveModel) -> None:
    """The 'Expand to a document' switch and, when on, the document's overview, exact zoom and a row's strip."""
    show_long_input(active)
