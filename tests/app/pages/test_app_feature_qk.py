"""AppTest: What made this score one level down: on the induction model, whose dictionary of the stream its layer-2
heads read is shipped, the toggle shows the score over dictionary features, pairs plus terms equal to the score the
model computed; on a model without the dictionary its heads read, one message says how to train one."""
from __future__ import annotations

import re

import pytest

from tests.helpers import ROOT
from tests.helpers.app_session import assert_no_exception, charts, open_app, open_link, poll, text_box, texts
from tests.helpers.real_shapes import PAGE_PX
from transformer.analysis import decode_parts
from transformer.store import open_model
from ui.models import MODEL_KEY

SUM = re.compile(r"= \*\*([+-][\d.]+)\*\*, the score \*\*([+-][\d.]+)\*\*")
TEXT = "abcdefghijklmnopqrstabcdefghij"

pytestmark = pytest.mark.slow  # the app on a shipped model with its decode and parts


def _feature_view(name: str, layer: int, text: str):
    at = open_app()
    at.selectbox(key=MODEL_KEY).set_value(f"shipped:{name}").run()
    at.switch_page("pages/attention.py").run()
    text_box(at, "attention_text").input(text).run()
    at.selectbox(key="attention_layer").set_value(layer).run()
    at.selectbox(key="attention_head").set_value(1).run()
    at.session_state["attention_qk_open"] = True
    at.session_state["attention_feature_qk_on"] = True
    at.run()
    assert_no_exception(at)
    return at


def test_the_score_in_dictionary_features_sums_to_the_models_score(shipped_env):
    at = _feature_view("induction", 1, TEXT)
    found = [m for m in (SUM.search(t) for t in texts(at.markdown)) if m]
    assert found, texts(at.markdown)
    total, score = float(found[0][1]), float(found[0][2])
    assert abs(total - score) <= 1e-4 * max(1, abs(score))
    parts = decode_parts(open_model(str(ROOT / "checkpoints" / "induction")), TEXT)
    scores = parts.capture.insides.inputs["self"][1].scores()[0, 1]
    assert any(abs(score - float(s)) <= 1e-3 for s in scores.flatten() if s > -1e29)
    assert any("dictionary features" in (c["title"] or "") for c in charts(at))
    assert all(c["spec"].get("width", 0) <= PAGE_PX for c in charts(at) if isinstance(c["spec"].get("width"), int))


def test_a_head_without_its_dictionary_says_how_to_train_one(shipped_env):
    at = _feature_view("induction", 0, TEXT)  # layer 1 reads resid:L1: none shipped
    assert any("No dictionary of resid:L1 for induction" in t for t in texts(at.info))


def test_the_decode_pages_score_offers_the_feature_view_too(shipped_env):
    # the other page that shows a QK table: Decode's "What made this score at this step", on the step's query
    at = open_app()
    at.selectbox(key=MODEL_KEY).set_value("shipped:induction").run()
    at.switch_page("pages/decode.py").run()
    text_box(at, "decode_text").input(TEXT).run()
    at.session_state["decode_layer"] = 1
    at.session_state["decode_head"] = 1
    at.session_state["decode_qk_open"] = True
    at.session_state["decode_feature_qk_on"] = True
    at.run()
    assert_no_exception(at)
    found = [m for m in (SUM.search(t) for t in texts(at.markdown)) if m]
    assert found, texts(at.markdown) + texts(at.info) + texts(at.warning)
    assert abs(float(found[0][1]) - float(found[0][2])) <= 1e-4 * max(1, abs(float(found[0][2])))
    assert any("dictionary features" in (c["title"] or "") for c in charts(at))
    assert all(c["spec"].get("width", 0) <= PAGE_PX for c in charts(at) if isinstance(c["spec"].get("width"), int))


def test_the_circuits_qk_table_on_compare_offers_the_feature_view_too(shipped_env):
    # Compare's circuit shows, for an edge into a head's query or key, that head's QK table at its strongest cell:
    # one level down there too, on an edge into a layer-2 head's key (the stream it reads has its shipped dictionary)
    at = open_link("compare", {"model": "shipped:induction", "cmode": "edit", "text": "qwkTz7xqwkTz7",
                               "edit": "qwkTz7xPb3Lm9"})  # docs/circuits.md's induction pair
    at.selectbox(key="compare_circuits_method").set_value("eap").run()
    at.button(key="compare_circuits_run").click().run()
    assert poll(at, lambda a: "compare_circuits_edge" in [s.key for s in a.selectbox]), \
        texts(at.warning) + texts(at.info)
    options = at.selectbox(key="compare_circuits_edge").options
    edge = next(i for i, o in enumerate(options) if re.match(r"self:L1H\d → self:L2H\d \((q|k)\)", o))
    at.selectbox(key="compare_circuits_edge").set_value(edge).run()
    at.toggle(key="compare_circuits_feature_qk_on").set_value(True).run()
    assert_no_exception(at)
    found = [m for m in (SUM.search(t) for t in texts(at.markdown)) if m]
    assert found, texts(at.markdown) + texts(at.info)
    assert abs(float(found[0][1]) - float(found[0][2])) <= 1e-4 * max(1, abs(float(found[0][2])))
    assert all(c["spec"].get("width", 0) <= PAGE_PX for c in charts(at) if isinstance(c["spec"].get("width"), int))
