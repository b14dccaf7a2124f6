"""AppTest: what a view takes away: a Decode replay file, every figure as a slide, and presenter mode's QR code of the
page's link."""
from __future__ import annotations

import io
import re

import pytest
from streamlit.testing.v1 import AppTest

from tests.helpers.app_session import assert_no_exception, capture_downloads, open_link, qr_text, texts
from transformer.charts import SLIDE_HEIGHT, SLIDE_WIDTH

TEXT = "stressed"
URL = "http://studio.example:8501/"


def png_size(data: bytes) -> tuple[int, int]:
    from PIL import Image
    return Image.open(io.BytesIO(data)).size


def assert_slides(downloads: dict, stem: str, *title_words: str) -> None:
    """The slide of `stem` as PNG (1920x1080), SVG (the title naming `title_words`) and PDF."""
    png, svg, pdf = (downloads[f"{stem}_slide.{ext}"]() for ext in ("png", "svg", "pdf"))
    assert png.startswith(b"\x89PNG") and png_size(png) == (SLIDE_WIDTH, SLIDE_HEIGHT)
    assert svg.lstrip().startswith("<svg") and f'width="{SLIDE_WIDTH}" height="{SLIDE_HEIGHT}"' in svg
    for word in title_words:
        assert word in svg, (stem, word)
    assert pdf.startswith(b"%PDF")


def test_decode_replay_download_is_one_html_file_naming_the_model_and_the_sentence(studio_env, monkeypatch):
    downloads = capture_downloads(monkeypatch)
    at = open_link("decode", {"text": TEXT})
    page = downloads["replay_reverse_greedy.html"]()
    assert page.lstrip().lower().startswith("<!doctype html")
    assert "reverse · Shipped" in page and TEXT in page and "Weights of step" in page
    assert not re.search(r"<script[^>]+src=", page)  # nothing fetched when it opens

    monkeypatch.setattr("transformer.charts.replay.MAX_REPLAY_STEPS", 2)
    downloads.clear()
    at.run()
    assert_no_exception(at)
    assert not [name for name in downloads if name.startswith("replay_")]
    assert any("No replay file for this decode" in c and "at most 2 steps" in c for c in texts(at.caption))


def test_decode_figures_download_as_slides_naming_model_sentence_and_step(studio_env, monkeypatch):
    downloads = capture_downloads(monkeypatch)
    at = open_link("decode", {"text": TEXT, "step": "2", "layer": "1", "head": "mean"})
    assert at.session_state["decode_step"] == 2
    assert_slides(downloads, "cross_layer1_mean_step2", "Cross-attention · layer 1 · mean of heads",
                  "rows up to step 2 of", f"Input: {TEXT}", "reverse · Shipped · weights of step")
    for stem in ("cross_layer1_heads_step2", "cross_source_step2", "topk_step2", "decoder_self_prefix_step2"):
        assert downloads[f"{stem}_slide.svg"]().lstrip().startswith("<svg"), stem


def test_attention_head_map_mean_and_grid_download_as_slides(studio_env, monkeypatch):
    downloads = capture_downloads(monkeypatch)
    open_link("attention", {"text": TEXT, "kind": "cross", "layer": "1", "head": "2", "ablate": "cross.L1H1"})
    assert_slides(downloads, "cross_layer1_head2", "Cross-attention · layer 1 · head 2", f"Input: {TEXT}")
    assert_slides(downloads, "cross_all_heads", "Cross-attention · every layer × head")
    assert "without Cross L1 H1" in downloads["cross_layer1_ablated_slide.svg"]()  # the map with the head off
    open_link("attention", {"text": TEXT, "kind": "encoder_self", "layer": "1", "head": "mean"})
    assert png_size(downloads["encoder_self_layer1_mean_slide.png"]()) == (SLIDE_WIDTH, SLIDE_HEIGHT)


def test_compare_maps_and_difference_download_as_slides(studio_env, monkeypatch):
    downloads = capture_downloads(monkeypatch)
    open_link("compare", {"text": TEXT, "kind": "cross", "layer": "1", "head": "1"})
    assert_slides(downloads, "compare_difference_cross_layer1_head1", "B − A · Cross-attention · layer 1 · head 1",
                  "A: reverse · Shipped", "B: reverse · Shipped")
    for tag in "ab":
        assert png_size(downloads[f"compare_{tag}_cross_layer1_head1_slide.png"]()) == (SLIDE_WIDTH, SLIDE_HEIGHT)


def copied_link(at: AppTest) -> str:
    """The link "Copy link" shows."""
    at.session_state["studio_share"] = True
    at.run()
    assert_no_exception(at)
    links = [c.value for c in at.code if c.value.startswith(URL)]
    assert len(links) == 1
    at.session_state["studio_share"] = False
    return links[0]


@pytest.mark.parametrize("page", ["decode", "attention"])
def test_presenter_mode_shows_a_qr_code_of_exactly_the_copied_link(studio_env, page):
    at = open_link(page, {"text": TEXT, "present": "1", "head": "1"}, url=URL)
    shown = qr_text(at)
    link = copied_link(at)
    assert shown == link and "present" not in link and "text=stressed" in link  # the audience gets the plain view
    css = " ".join(str(h.proto.body) for h in at.get("html") if "presenter mode" in str(h.proto.body))
    assert '[class$="_slides"]' in css and ".st-key-studio_present_qr" in css  # slide downloads hidden, QR placed
    if page == "decode":
        at.button(key="decode_next").click().run()
        assert_no_exception(at)
        stepped = qr_text(at)
        assert stepped != shown and "step=2" in stepped and stepped == copied_link(at)
    assert qr_text(open_link(page, {"text": TEXT}, url=URL)) is None  # only on a projector
