"""AppTest on every shipped checkpoint: head ablation and attribution render on Decode and Attention.

Each shipped model (checkpoints/*) is opened by its link, one head is switched off on Decode (the ablated run beside
the intact one) and the attribution strip of the first step is drawn; on Attention a head is switched off and the
attention/attribution agreement heatmaps are drawn for both kinds. No exception and the figures' headings shown.
"""
from __future__ import annotations

import pytest

from tests.helpers import ROOT
from tests.helpers.app_session import assert_no_exception, chart_titled, charts, only_frame, open_app, texts
from transformer.model import SOURCE, family_of
from transformer.store import checkpoint_family
from ui.models.catalog import PAGE_FAMILIES
from ui.server.shared_cache import shared_cache

CHECKPOINTS = ROOT / "checkpoints"
SHIPPED = sorted(p.name for p in CHECKPOINTS.iterdir()  # those of the families the pages draw (PAGE_FAMILIES) that
                 # decode: an encoder-only model predicts at its masks (test_app_encoder_only.py opens it)
                 if (p / "config.json").is_file() and checkpoint_family(p) in PAGE_FAMILIES
                 and family_of(checkpoint_family(p)).decodes)


@pytest.fixture
def shipped_env(studio_env, monkeypatch):
    monkeypatch.setenv("ATTENTION_STUDIO_CHECKPOINTS", str(CHECKPOINTS))
    return studio_env


def _open(name: str, page: str):
    at = open_app(timeout=240)
    at.query_params.clear()  # not the Home page's link (its text belongs to the default model)
    at.query_params["model"] = f"shipped:{name}"
    at.switch_page(f"pages/{page}.py")
    at.run()
    assert_no_exception(at)
    assert not texts(at.error), texts(at.error)
    return at


def test_every_model_of_the_checkpoints_folder_is_covered():
    assert {"reverse", "sort", "toy-en-de", "multi30k-en-de"} <= set(SHIPPED)


CODES = {"cross": ("cross", "Cross"), "decoder_self": ("dec", "Dec. self"), "self": ("self", "Self")}  # link, title


@pytest.mark.parametrize("name", SHIPPED)
def test_ablation_and_attribution_render_for_each_shipped_model(shipped_env, name):
    family = family_of(checkpoint_family(CHECKPOINTS / name))
    step_kind = family.cross_kind or family.decoder_kind  # what Decode shades at a step
    code, title = CODES[step_kind]
    at = _open(name, "decode")
    at.multiselect(key="decode_ablate").set_value([f"{code}:L1H1"]).run()
    at.session_state["decode_attr_open"] = True  # the user opens the attribution expander
    at.run()
    assert_no_exception(at)
    assert any(f"Without {title} L1 H1" in m for m in texts(at.markdown))
    assert chart_titled(at, "With the heads switched off: step 1")
    input_tokens = family.axis_titles[SOURCE].capitalize()  # "Source tokens" or "Prompt tokens"
    assert chart_titled(at, f"{input_tokens} shaded by their Integrated Gradients attribution to step 1")

    at.switch_page("pages/attention.py")
    at.run()
    at.radio(key="attention_grid_click").set_value("ablate").run()
    at.multiselect(key="attention_ablate").set_value([f"{CODES[family.decoder_kind][0]}:L1H1"]).run()
    at.toggle(key="attention_agreement_on").set_value(True).run()
    assert_no_exception(at)
    assert any(c["title"].endswith("with the heads switched off") for c in charts(at))
    agreement = [c for c in charts(at) if "layer_label" in str(c["spec"])]
    stepped = [k for k in family.kinds if k != family.encoder_kind]  # kinds whose rows are output steps
    assert len(agreement) >= 2 * len(stepped), "expected Spearman and top-1 heatmaps for each kind of the steps"
    assert not texts(at.warning), texts(at.warning)


def test_agreement_stays_per_piece_when_the_maps_merge_words(shipped_env):
    """Attribution is per subword piece, so the agreement figures are too: with words merged on the maps above, they
    are the figures of the pieces (not of merged maps against per-piece attribution), and the page says so."""
    import streamlit as st

    st.cache_data.clear()  # nothing computed by an earlier test for this input

    shared_cache.clear()  # the decodes the sessions share
    at = _open("multi30k-en-de", "attention")
    at.text_input(key="attention_text").input("A man rides a bicycle through the mountains.").run()
    at.toggle(key="attention_merge_words").set_value(True).run()
    at.toggle(key="attention_agreement_on").set_value(True).run()
    assert_no_exception(at)
    assert not texts(at.warning), texts(at.warning)
    assert any("per subword piece" in t for t in texts(at.caption))
    def agreement_charts(at) -> list:  # the head overview (its own statistics) draws layers x heads too
        return [f for f in (only_frame(c) for c in charts(at) if "layer_label" in str(c["spec"]))
                if "entropy" not in f.columns]

    shown = agreement_charts(at)
    assert len(shown) >= 4, "expected Spearman and top-1 heatmaps for cross and decoder self-attention"

    st.cache_data.clear()

    shared_cache.clear()  # the decodes the sessions share
    at.toggle(key="attention_merge_words").set_value(False).run()
    assert not any("per subword piece" in t for t in texts(at.caption))
    per_piece = agreement_charts(at)
    assert [f.to_dict("records") for f in shown] == [f.to_dict("records") for f in per_piece]
