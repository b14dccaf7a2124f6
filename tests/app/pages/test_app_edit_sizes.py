"""AppTest: Compare's edit mode, its patching maps and Decode's patched decode at the sizes users bring: the shipped
models and random Hugging Face models of opus-mt-en-de's shape, bart-large's heads (12 + 12 layers x 16 heads, 1,024
positions) and GPT-2's (12 layers x 12 heads, decoder-only), with one word, a 20-word caption and the longest input
the model reads (bart-large's and GPT-2's heads: the longest only, with the patching estimate). No exception, and no
chart wider than a 1280 px page (a long axis is drawn through a window)."""
from __future__ import annotations

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from tests.helpers import ROOT
from tests.helpers.app_session import APP, assert_no_exception, chart_titled, charts, poll, texts
from tests.helpers.real_shapes import CAPTION, PAGE_PX, point_app_at
from transformer.analysis import prepare_patching, sites_of
from transformer.store import open_model
from ui.server.shared_cache import shared_cache
from ui.views.assembly.edit_compare import _compare


@pytest.fixture
def sizes_env(monkeypatch, tmp_path, real_shapes_root):
    return point_app_at(monkeypatch, tmp_path / "runs", real_shapes_root)


@pytest.fixture
def released():
    """Forget the decodes and comparisons afterwards: at 1,024 tokens each holds 0.6-0.8 GB of maps a side, and the
    caches are the test process's (a later test would run on top of them)."""
    yield
    st.cache_data.clear()
    shared_cache.clear()  # the decodes the sessions share
    _compare.clear()


def longest(adapter, word: str) -> str:
    """The most `word`s whose source the model still reads (specials included)."""
    lo, hi = 1, adapter.max_source_len
    while lo < hi:
        mid = (lo + hi + 1) // 2
        fits = len(adapter.tokenize_source(" ".join([word] * mid)).ids) <= adapter.max_source_len
        lo, hi = (mid, hi) if fits else (lo, mid - 1)
    return " ".join([word] * lo)


def pairs(adapter, letters: bool) -> dict[str, tuple[str, str]]:
    """(A, B) per length: a one-word (letter) swap, a word swapped in the caption, the longest input less its first
    word (an edit of another length)."""
    if letters:
        long = longest(adapter, "b")
        return {"one word": ("abc", "abd"), "20 words": ("stressedoutdesserts", "stressedoutdessertx"),
                "longest": (long, long[2:])}
    long = longest(adapter, "dog")
    return {"one word": ("dog", "cat"), "20 words": (CAPTION, CAPTION.replace("children", "women")),
            "longest": (long, long[4:])}


def open_edit(option: str, a: str, b: str) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=300)
    at.query_params.update({"model": option, "cmode": "edit", "text": a, "edit": b})
    at.switch_page("pages/compare.py")
    at.run()
    assert_no_exception(at)
    return at


def fits(at: AppTest) -> None:
    """No exception, and every chart within the page."""
    assert_no_exception(at)
    wide = [(c["title"], c["spec"]["width"]) for c in charts(at)
            if isinstance(c["spec"].get("width"), (int, float)) and c["spec"]["width"] > PAGE_PX]
    assert not wide


def edit_mode(option: str, a: str, b: str) -> AppTest:
    at = open_edit(option, a, b)
    fits(at)
    assert chart_titled(at, "B − A · ")  # the difference map is drawn (through a window when long)
    return at


def estimate_drawn(at: AppTest) -> bool:
    """The page shows the patching estimate (its agreement with the exact patching, under the maps)."""
    return any(c.startswith("Spearman correlation of the estimate") for c in texts(at.caption))


def patch_estimate(at: AppTest) -> None:
    at.button(key="compare_patch_estimate").click().run()
    # a background job: the run that started it waits for it (tests/conftest.py), else the page reruns until it ends
    assert estimate_drawn(at) or poll(at, estimate_drawn, seconds=300)
    fits(at)
    assert [c for c in charts(at) if c["title"].startswith("Estimated: ")]


def patched_link(adapter, option: str, a: str, b: str, kind: str) -> None:
    """Decode opened on a decoder-side head's patched decode (what a click on its cell links to)."""
    setup = prepare_patching(adapter, a, b, step=0)
    site = next(s for s in sites_of(adapter, setup, ["head"]) if s.where == kind)
    at = AppTest.from_file(str(APP), default_timeout=300)
    at.query_params.update({"model": option, "text": b, "pfrom": a,
                            "psite": f"head|{kind}|{site.layer}|{site.head}|{site.position}|1"})
    at.switch_page("pages/decode.py")
    at.run()
    fits(at)
    assert [t for t in texts(at.markdown) if "patched in from" in t] or texts(at.info)


@pytest.mark.parametrize("name", ["reverse", "multi30k-en-de", "reverse-decoder-only"])
def test_shipped_models_at_every_length(sizes_env, name):
    adapter = open_model(str(ROOT / "checkpoints" / name))
    for a, b in pairs(adapter, letters=name.startswith("reverse")).values():
        edit_mode(f"shipped:{name}", a, b)


def test_an_opus_mt_shape_at_every_length_with_patching_and_its_replay(sizes_env):
    adapter = open_model(str(sizes_env / "opus-mt-shape"))
    for label, (a, b) in pairs(adapter, letters=False).items():
        at = edit_mode("hf:opus-mt-shape", a, b)
        if label == "longest":
            patch_estimate(at)
            patched_link(adapter, "hf:opus-mt-shape", a, b, "cross")


@pytest.mark.parametrize("name, kind", [("bart-large-heads", "cross"), ("gpt2-heads", "self")])
def test_bart_large_and_gpt2_heads_at_their_longest_with_patching(sizes_env, released, name, kind):
    """576 and 144 heads with the longest input (1,024 source tokens; GPT-2's 1,023-token prompt, one step): the edit
    mode and the patching estimate, one AppTest; the patched replay (Decode) with the caption."""
    adapter = open_model(str(sizes_env / name))
    long = longest(adapter, "dog")
    patch_estimate(edit_mode(f"hf:{name}", long, long[4:]))
    patched_link(adapter, f"hf:{name}", CAPTION, CAPTION.replace("children", "women"), kind)
