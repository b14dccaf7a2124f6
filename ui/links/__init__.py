"""The URL is the view: the link format (no Streamlit), restoring and writing a page's widgets from and to the URL,
presenter mode and Home's ready views."""
from .gallery import READY_VIEWS, show_gallery
from .link_format import (
    MEAN,
    ModelSizes,
    check_sizes,
    head_labels,
    labels_to_heads,
    parse_ablated,
    parse_params,
    to_params,
)
from .presenter import apply_presenter, presenter_switch
from .url_state import merged_words, page_name, restore, run_page, share_control, show_notes, write

__all__ = ["MEAN", "ModelSizes", "READY_VIEWS", "apply_presenter", "check_sizes", "head_labels", "labels_to_heads",
           "merged_words", "page_name", "parse_ablated", "parse_params", "presenter_switch", "restore",
           "run_page", "share_control", "show_gallery", "show_notes", "to_params", "write"]
