"""The one table of link parameters (ui.views.LINK_PARAMS): every parameter it names can be read from a link, and
the widget keys it holds are spelled there only, so a widget, the link code and the tests cannot drift apart."""
from __future__ import annotations

import ast

from tests.helpers import ROOT
from ui.links.link_format import PARSERS
from ui.views import LINK_PARAMS


def test_every_parameter_of_every_page_is_read_from_a_link():
    unknown = {page: sorted(set(params) - set(PARSERS)) for page, params in LINK_PARAMS.items()}
    assert not any(unknown.values()), unknown


def test_no_widget_key_of_the_table_is_spelled_twice():
    """Outside the table, code reads a link parameter's widget key from it (faces, which only list names, aside: the
    function `compare_mode` shares its name with a key)."""
    keys = {key for params in LINK_PARAMS.values() for key in params.values()}
    sources = [*ROOT.glob("ui/**/*.py"), *ROOT.glob("pages/*.py"), ROOT / "app.py"]
    again = [f"{path.relative_to(ROOT)}:{node.lineno} {node.value!r}" for path in sorted(sources)
             if path != ROOT / "ui/views/kit/link_params.py" and path.name != "__init__.py"
             for node in ast.walk(ast.parse(path.read_text(), str(path)))
             if isinstance(node, ast.Constant) and node.value in keys]
    assert again == [], "read these keys from ui.views.LINK_PARAMS: " + ", ".join(again)
