"""Every page at the sizes users bring: each page x {the shipped models, a Hugging Face model at opus-mt-en-de's
shape (random weights, built from its config)} x {one word, a 20-word caption, the model's maximum input length}.

A view too big to draw says so in a message; no page ever shows an exception. Short sentences on tiny models hid
exactly this: the Attention page's head grid raised on a 21-word caption.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import ROOT
from tests.helpers.app_session import assert_no_exception, charts, open_app, text_box
from tests.helpers.hf_causal_models import build as build_causal
from tests.helpers.hf_tiny_models import OPUS_MT_SHAPE, build
from transformer.decode import STORE_ABOVE
from transformer.store import open_model
from ui.models import MODEL_KEY

ONE_WORD = "dog"
CAPTION = ("Two young children in blue shirts are playing soccer on a green field near the old church while their "
           "parents watch.")
PAGES = {"home": "home_text", "decode": "decode_text", "attention": "attention_text", "compare": "compare_text",
         "train": "train_probe"}  # the Train page reads text only as its probe sentence
CHARTED = {"decode", "attention", "compare"}  # pages that draw attention for any input
SHIPPED = ("multi30k-en-de", "toy-en-de", "reverse", "reverse-decoder-only")


def longest_input(model, word: str = "dog") -> str:
    """The longest run of `word`s whose source still fits the model's length limit (specials included)."""
    lo, hi = 1, model.max_source_len
    while lo < hi:  # the largest n with n words fitting
        mid = (lo + hi + 1) // 2
        if len(model.tokenize_source(" ".join([word] * mid)).ids) <= model.max_source_len:
            lo = mid
        else:
            hi = mid - 1
    return " ".join([word] * lo)


@pytest.fixture(scope="module")
def opus_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("hf_sizes")
    build("marian", root / "opus-mt-shape", size=OPUS_MT_SHAPE)
    build_causal("gpt2", root / "tiny-gpt2")  # a decoder-only model: one causal self-attention over prompt and output
    return root


@pytest.fixture
def sizes_env(monkeypatch, tmp_path, opus_root):
    monkeypatch.setenv("ATTENTION_STUDIO_CHECKPOINTS", str(ROOT / "checkpoints"))
    monkeypatch.setenv("ATTENTION_STUDIO_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("ATTENTION_STUDIO_HF_MODELS", str(opus_root))
    monkeypatch.delenv("ATTENTION_STUDIO_DEFAULT", raising=False)
    return opus_root


def _inputs(model) -> dict[str, str]:
    reversal = model.name in ("reverse", "reverse-decoder-only")  # letters, not words
    return {"one word": "abc" if reversal else ONE_WORD,
            "20-word caption": "".join(CAPTION.lower().split())[:19] if reversal else CAPTION,
            "maximum length": longest_input(model, "b" if reversal else ONE_WORD)}
def _is_document(model, text: str) -> bool:
    """A decoder-only prompt above STORE_ABOVE tokens: a document (decoded with the attention store)."""
    return model.family.prompt_in_decoder and len(model.decoder_prefix(model.tokenize_source(text))) > STORE_ABOVE


def _check_page(option: str, page: str, text: str, *, document: bool = False) -> None:
    at = open_app()
    at.selectbox(key=MODEL_KEY).set_value(option).run()
    at.switch_page(f"pages/{page}.py").run()
    text_box(at, PAGES[page]).input(text).run()
    assert_no_exception(at)
    if page in CHARTED and document:  # its maps would be n x n: Decode and Attention read it as a document (its
        said = [str(m.value) for m in (*at.error, *at.warning)]  # estimate and button), Compare points to them
        if page == "compare":
            assert any("Open it on the Decode or Attention page" in t for t in said), f"{page} said nothing: {said}"
        else:  # the document's decode offered, or refused in one line by the model's context (the steps past it)
            assert [b for b in at.button if b.key == "document_job_run"] or any(
                t.startswith("The document has") and "(its own context)" in t for t in said), f"{page}: {said}"
    elif page in CHARTED:
        said = [str(m.value) for m in at.warning]
        b_short = page == "compare" and any(t.startswith("Model B:") and "its own context" in t for t in said)
        # Compare opens on another model where there is one; a B with a shorter context says so by its limit
        assert charts(at) or b_short, f"{page} drew no chart for {option} with {len(text.split())} word(s): {said}"


@pytest.mark.parametrize("page", sorted(PAGES))
@pytest.mark.parametrize("name", SHIPPED)
def test_every_page_holds_on_shipped_models_at_every_length(sizes_env, name, page):
    model = open_model(str(ROOT / "checkpoints" / name))
    for text in _inputs(model).values():
        _check_page(f"shipped:{name}", page, text)


@pytest.mark.slow
@pytest.mark.parametrize("page", sorted(PAGES))
def test_every_page_holds_on_an_opus_mt_shape_model_at_every_length(sizes_env, page):
    folder = sizes_env / "opus-mt-shape"
    model = open_model(str(folder))
    assert model.head_counts()["cross"] == (6, 8)
    for text in _inputs(model).values():
        _check_page(f"hf:{folder.name}", page, text)


@pytest.mark.slow
@pytest.mark.parametrize("page", sorted(PAGES))
def test_every_page_holds_on_a_gpt2_model_at_every_length(sizes_env, page):
    folder = sizes_env / "tiny-gpt2"
    model = open_model(str(folder))
    assert model.family.kinds == ("self",)
    for text in _inputs(model).values():
        _check_page(f"hf:{folder.name}", page, text, document=_is_document(model, text))
