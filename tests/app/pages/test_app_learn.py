"""AppTest: the Learn tour walks every stage on the live model with its own numbers, on an encoder-decoder and on a
decoder-only model (which says it has no cross-attention), and on a Llama-like model (RoPE, grouped-query heads)."""
from __future__ import annotations

import pytest

from tests.helpers import ROOT
from tests.helpers.app_session import assert_no_exception, chart_titled, only_frame, open_app, texts
from tests.helpers.hf_causal_models import build
from transformer.decode import greedy_decode
from transformer.store import open_model
from ui.models import MODEL_KEY
from ui.views import TOUR


def _walk(at) -> list[str]:
    """Press Next through every stage; the subheadings seen."""
    seen = [at.subheader[0].value]
    for _ in range(len(TOUR) - 1):
        at.button(key="learn_next").click().run()
        assert_no_exception(at)
        seen.append(at.subheader[0].value)
    return seen


def test_the_tour_walks_every_stage_on_the_shipped_encoder_decoder(studio_env, tiny_checkpoint_dir):
    at = open_app("learn")
    text = at.text_input(key="learn_text").value
    assert_no_exception(at)
    at.selectbox(key="learn_stage").set_value(3).run()  # softmax: the map's row
    adapter = open_model(str(tiny_checkpoint_dir / "reverse"))
    trace = greedy_decode(adapter, text).trace
    weights = only_frame(chart_titled(at, "Softmax"))["value"].tolist()
    first = trace.matrix("decoder_self", 0, 0)
    row = int((-(first * first.clamp_min(1e-12).log()).sum(-1)).argmax())  # the tour's query: the most spread
    assert weights == pytest.approx(first[row].tolist(), abs=1e-5)
    at.selectbox(key="learn_stage").set_value(5).run()  # several heads: each head's row of the same query
    heads = only_frame(chart_titled(at, "Each head's weights from the same query"))
    for h in range(trace.n_heads):
        drawn = heads[heads["head"] == f"H{h + 1}"]["weight"].tolist()
        assert drawn == pytest.approx(trace.matrix("decoder_self", 0, h)[row].tolist(), abs=1e-5)
    at.selectbox(key="learn_stage").set_value(2).run()  # masks: a batch pads this input beside a longer one
    from transformer.analysis import batch_mask
    from ui.views.assembly.learn import longer_input
    expected = batch_mask(adapter, text, longer_input(text))
    cells = only_frame(chart_titled(at, "Encoder self-attention · in a batch: this input padded beside"))
    hidden = cells[cells["added"] == "hidden (−∞)"]
    assert len(hidden) == int((expected.mask < -1e4).sum()) > 0  # the model's own mask, padding included
    pads = cells[cells["key"].str.endswith("<pad>")]
    assert len(pads) and (pads[~pads["query"].str.endswith("<pad>")]["added"] == "hidden (−∞)").all()
    at.selectbox(key="learn_stage").set_value(0).run()
    assert _walk(at) == [stage.title for stage in TOUR]
    assert at.button(key="learn_next").disabled


def test_a_decoder_only_model_skips_cross_attention_and_says_so(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTENTION_STUDIO_CHECKPOINTS", str(ROOT / "checkpoints"))
    monkeypatch.setenv("ATTENTION_STUDIO_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("ATTENTION_STUDIO_HF_MODELS", str(tmp_path / "hf"))
    monkeypatch.delenv("ATTENTION_STUDIO_DEFAULT", raising=False)
    at = open_app()
    at.selectbox(key=MODEL_KEY).set_value("shipped:reverse-decoder-only").run()
    at.switch_page("pages/learn.py").run()
    at.text_input(key="learn_text").input("abcdef").run()
    at.selectbox(key="learn_stage").set_value(6).run()  # cross-attention
    assert_no_exception(at)
    assert any("no cross-attention" in t for t in texts(at.info))


def test_a_rope_model_with_grouped_heads_walks_the_tour(monkeypatch, tmp_path):
    build("llama", tmp_path / "hf" / "tiny-llama")
    monkeypatch.setenv("ATTENTION_STUDIO_CHECKPOINTS", str(tmp_path / "none"))
    monkeypatch.setenv("ATTENTION_STUDIO_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("ATTENTION_STUDIO_HF_MODELS", str(tmp_path / "hf"))
    monkeypatch.delenv("ATTENTION_STUDIO_DEFAULT", raising=False)
    at = open_app()
    at.selectbox(key=MODEL_KEY).set_value("hf:tiny-llama").run()
    at.switch_page("pages/learn.py").run()
    at.text_input(key="learn_text").input("A dog runs.").run()
    assert_no_exception(at)
    assert len(_walk(at)) == len(TOUR)


def test_an_encoder_only_model_walks_the_tour_and_skips_what_it_has_not_got(monkeypatch, tmp_path):
    from tests.helpers.hf_masked_models import build as build_masked
    build_masked("bert", tmp_path / "hf" / "tiny-bert")
    monkeypatch.setenv("ATTENTION_STUDIO_CHECKPOINTS", str(tmp_path / "none"))
    monkeypatch.setenv("ATTENTION_STUDIO_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("ATTENTION_STUDIO_HF_MODELS", str(tmp_path / "hf"))
    monkeypatch.delenv("ATTENTION_STUDIO_DEFAULT", raising=False)
    at = open_app()
    at.selectbox(key=MODEL_KEY).set_value("hf:tiny-bert").run()
    at.switch_page("pages/learn.py").run()
    at.text_input(key="learn_text").input("the dog sees a cat").run()
    assert_no_exception(at)
    assert len(_walk(at)) == len(TOUR)
    infos = " ".join(texts(at.info))
    assert "does not decode" in infos
    at.selectbox(key="learn_stage").set_value(6).run()
    assert any("no cross-attention" in t for t in texts(at.info))
