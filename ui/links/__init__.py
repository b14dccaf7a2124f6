"""A link opens a page as it was: the link format (no Streamlit), restoring and writing a page's widgets from and to
the URL, presenter mode, Home's example links, and a link's decode started as its page is asked for."""
from .gallery import EXAMPLE_LINKS, TOY_MODEL, show_gallery, warm_examples
from .link_format import (
    MEAN,
    ModelSizes,
    check_sizes,
    labels_to_heads,
    parse_ablated,
    parse_params,
    to_params,
)
from .presenter import apply_presenter, presenter_switch
from .read_ahead import ReadAhead, ReadAheadLinks, link_decodes
from .url_state import (
    current_link,
    page_name,
    restore,
    run_page,
    share_control,
    show_link_qr,
    show_notes,
    write,
    write_link,
)

__all__ = ["EXAMPLE_LINKS", "MEAN", "TOY_MODEL", "ModelSizes", "ReadAhead", "ReadAheadLinks", "apply_presenter",
           "check_sizes", "current_link", "labels_to_heads", "link_decodes", "page_name",
           "parse_ablated", "parse_params", "presenter_switch", "restore", "run_page", "share_control",
           "show_gallery", "show_link_qr", "show_notes", "to_params", "warm_examples", "write", "write_link"]
