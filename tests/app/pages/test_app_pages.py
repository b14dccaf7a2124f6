"""AppTest: every page opens on the default checkpoint; the sidebar finds, describes and refuses models."""
from __future__ import annotations

import shutil

import pytest

from tests.conftest import TINY_STEPS
from tests.helpers.app_session import assert_no_exception, chart_titled, open_app, texts
from transformer.adapters import adapter_for
from transformer.decode import greedy_decode
from transformer.store import load_checkpoint
from ui.server import PAGES


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_page_loads_on_the_default_checkpoint(studio_env, page):
    """Every page of the registry (the one list app.py's navigation reads) opens with its heading."""
    at = open_app(None if page.default else page.name)
    assert [t.value for t in at.title] == [page.heading]
    assert not at.error
    assert at.sidebar.selectbox(key="sidebar_model").value == "shipped:reverse"
    card = " ".join(texts(at.sidebar.markdown))
    assert "reverse a string of letters" in card and "one token per character" in card
    assert "Parameters" in card and f"{TINY_STEPS} steps" in card


def test_home_opens_with_an_example_decoded(studio_env, tiny_checkpoint_dir):
    at = open_app()
    ckpt = load_checkpoint(tiny_checkpoint_dir / "reverse", load_optimizer=False)
    text = at.text_input(key="home_text").value
    assert text == ckpt.metrics["examples"][0]["source"]
    expected = greedy_decode(adapter_for(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer), text).output_text
    assert f"**Output:** {expected or '(empty)'}" in texts(at.markdown)
    heatmap = chart_titled(at, "Cross-attention · layer 2 · mean of 2 heads")
    assert heatmap["spec"]["layer"][0]["encoding"]["y"]["field"] == "query_index"
    assert {link.proto.page for link in at.get("page_link")} == {"decode", "attention", "train"}


def test_typing_on_one_page_carries_to_the_others(studio_env):
    at = open_app()
    at.text_input(key="home_text").input("abcdef").run()
    at.switch_page("pages/decode.py").run()
    assert at.text_input(key="decode_text").value == "abcdef"
    at.text_input(key="decode_text").input("zyxw").run()
    at.switch_page("pages/attention.py").run()
    assert at.text_input(key="attention_text").value == "zyxw"


def test_without_any_checkpoint_the_pages_say_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_STUDIO_CHECKPOINTS", str(tmp_path / "none"))
    monkeypatch.setenv("ATTENTION_STUDIO_RUNS", str(tmp_path / "runs"))
    at = open_app("decode")
    assert any("No model yet" in m for m in texts(at.info))


def test_a_broken_checkpoint_becomes_a_message(tiny_checkpoint_dir, tmp_path, monkeypatch):
    root = tmp_path / "checkpoints"
    shutil.copytree(tiny_checkpoint_dir / "reverse", root / "reverse")
    (root / "reverse" / "model.safetensors").write_bytes(b"not a safetensors file")
    monkeypatch.setenv("ATTENTION_STUDIO_CHECKPOINTS", str(root))
    monkeypatch.setenv("ATTENTION_STUDIO_RUNS", str(tmp_path / "runs"))
    at = open_app("decode")
    errors = texts(at.error)
    assert any("Cannot load reverse" in e and "model.safetensors" in e for e in errors), errors


def test_default_checkpoint_follows_the_env_var_then_the_preferred_order(tiny_checkpoint_dir, tmp_path,
                                                                          monkeypatch):
    root = tmp_path / "checkpoints"
    for name in ("alpha", "reverse"):
        shutil.copytree(tiny_checkpoint_dir / "reverse", root / name)
    monkeypatch.setenv("ATTENTION_STUDIO_CHECKPOINTS", str(root))
    monkeypatch.setenv("ATTENTION_STUDIO_RUNS", str(tmp_path / "runs"))
    monkeypatch.delenv("ATTENTION_STUDIO_DEFAULT", raising=False)
    assert open_app().sidebar.selectbox(key="sidebar_model").value == "shipped:reverse"
    monkeypatch.setenv("ATTENTION_STUDIO_DEFAULT", "alpha")
    at = open_app()
    assert at.sidebar.selectbox(key="sidebar_model").value == "shipped:alpha"
    assert_no_exception(at)
