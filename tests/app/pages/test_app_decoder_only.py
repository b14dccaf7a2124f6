"""AppTest: the pages on a decoder-only model (the shipped `reverse-decoder-only`): the step-through's rows follow the
prompt, links name its kind and heads, and Compare shows it beside the shipped encoder-decoder."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.helpers import ROOT
from tests.helpers.app_session import (
    APP,
    assert_no_exception,
    chart_titled,
    charts,
    only_frame,
    open_app,
    text_box,
    texts,
)
from tests.helpers.hf_causal_models import build
from transformer.decode import greedy_decode
from transformer.store import open_model
from ui.models import MODEL_KEY
from ui.views import md_token
from ui.views.kit import PAGE_PX

DECODER_ONLY = "shipped:reverse-decoder-only"
TEXT = "abcdef"


@pytest.fixture(scope="module")
def llama_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("hf_causal")
    build("llama", root / "tiny-llama")  # 4 query heads over 2 key/value heads, a chat template
    return root


@pytest.fixture(scope="module")
def expected():
    return greedy_decode(open_model(str(ROOT / "checkpoints" / "reverse-decoder-only")), TEXT)


def _page(page: str, key: str, text: str = TEXT) -> AppTest:
    at = open_app()
    at.selectbox(key=MODEL_KEY).set_value(DECODER_ONLY).run()
    at.switch_page(f"pages/{page}.py").run()
    text_box(at, key).input(text).run()
    assert_no_exception(at)
    return at


def test_decode_steps_from_the_prompts_last_token_and_next_moves_the_row(shipped_env, expected):
    trace, offset = expected.trace, expected.trace.step_offset
    at = _page("decode", "decode_text")
    # step 1 reads the prompt's last token; its output is the model's greedy first token
    assert at.subheader[0].value.startswith(f"Step 1 of {len(expected.steps)}: input "
                                            f"‹{md_token(trace.decoder_input_tokens[offset])}› → "
                                            f"output ‹{md_token(expected.steps[0].token)}›")
    heatmap = only_frame(chart_titled(at, "Self-attention (causal) rows up to step 1"))
    assert heatmap["query_index"].max() == offset  # rows up to the prompt's last token, none of the outputs'
    at.button(key="decode_next").click().run()
    assert at.subheader[0].value.startswith(f"Step 2 of {len(expected.steps)}: input "
                                            f"‹{md_token(expected.steps[0].token)}›")
    at.selectbox(key="decode_layer").set_value(0).run()
    at.selectbox(key="decode_head").set_value(0).run()
    prefix = only_frame(chart_titled(at, "Self-attention (causal) of step 2 over the prefix"))
    assert prefix["weight"].tolist() == pytest.approx(trace.matrix("self", 0, 0)[offset + 1, : offset + 2].tolist(),
                                                      abs=1e-6)
    assert only_frame(chart_titled(at, "Self-attention (causal) rows up to step 2"))["query_index"].max() == offset + 1
    n = len(expected.steps)
    at.slider(key="decode_step").set_value(n).run()  # every step chooses greedy_decode's token
    assert at.subheader[0].value.startswith(f"Step {n} of {n}: input ‹{md_token(expected.steps[-2].token)}› → "
                                            f"output ‹{md_token(expected.steps[-1].token)}›")
    assert not [c for c in charts(at) if c["title"].startswith("Source tokens shaded")]  # no separate source
    assert_no_exception(at)


def test_a_long_prompts_prefix_strip_wraps_to_the_pages_width(shipped_env):
    at = _page("decode", "decode_text", "abcdefghijklmnopqrstuvwxyzabcdefghijklmn")
    strip = next(c for c in charts(at) if c["title"].endswith("of step 1 over the prefix"))
    assert strip["spec"]["width"] <= PAGE_PX  # wrapped to the page's column under the step's map, not past it


def test_forcing_a_token_and_attribution_work_on_the_decoder_only_model(shipped_env, expected):
    at = _page("decode", "decode_text")
    at.button(key="decode_next").click().run()
    at.button(key="decode_force").click().run()
    assert_no_exception(at)
    assert at.session_state["decode_view"] == "forced"
    at.session_state["decode_attr_open"] = True  # the attribution expander, open
    at.run()
    assert_no_exception(at)


def test_link_with_kind_self_and_an_ablated_self_head_round_trips(shipped_env):
    at = AppTest.from_file(str(APP), default_timeout=90)
    at.switch_page("pages/attention.py")
    at.query_params = {"model": DECODER_ONLY, "text": TEXT, "kind": "self", "layer": "2", "head": "1",
                       "ablate": "self:L1H1"}
    at.run()
    assert_no_exception(at)
    assert at.radio(key="attention_kind").value == "self"
    assert at.radio(key="attention_kind").options == ["Self-attention (causal)"]
    assert at.session_state["attention_ablate"] == ["self:L1H1"]
    assert (at.session_state["attention_layer"], at.session_state["attention_head"]) == (1, 0)
    params = dict(at.query_params)
    assert params["kind"] == "self" and params["ablate"] == "self.L1H1"
    fresh = AppTest.from_file(str(APP), default_timeout=90)
    fresh.switch_page("pages/attention.py")
    fresh.query_params = params
    fresh.run()
    assert_no_exception(fresh)
    assert fresh.session_state["attention_ablate"] == ["self:L1H1"]
    assert dict(fresh.query_params) == params


def test_a_stored_cross_kind_falls_back_to_the_decoder_only_models_kind(shipped_env):
    at = open_app("attention")
    at.radio(key="attention_kind").set_value("cross").run()
    at.selectbox(key=MODEL_KEY).set_value(DECODER_ONLY).run()
    assert_no_exception(at)
    assert at.radio(key="attention_kind").value == "self"


def test_compare_shows_the_encoder_decoder_and_the_decoder_only_model_side_by_side(shipped_env):
    at = open_app()
    at.selectbox(key=MODEL_KEY).set_value("shipped:reverse").run()
    at.switch_page("pages/compare.py").run()
    at.selectbox(key="compare_model").set_value(DECODER_ONLY).run()
    at.text_input(key="compare_text").input(TEXT).run()
    assert_no_exception(at)
    assert any("different attention kinds" in t for t in texts(at.info))
    a = only_frame(chart_titled(at, "A · reverse · Cross-attention"))
    b = only_frame(chart_titled(at, "B · reverse-decoder-only · Self-attention (causal)"))
    assert a["key_index"].nunique() == len(TEXT) + 1  # the source and </s>
    assert b["key_index"].nunique() > len(TEXT) + 1  # the prompt and the outputs


def test_the_train_page_trains_a_decoder_only_model_and_shows_its_probe(studio_env):
    from tests.helpers.app_session import poll
    from ui.train import LIVE_RUN_KEY
    at = open_app("train")
    at.selectbox(key="train_preset").set_value("tiny").run()
    at.selectbox(key="train_architecture").set_value("decoder-only")
    for key, value in dict(train_d_model=16, train_n_heads=2, train_n_decoder_layers=1, train_d_ff=32,
                           train_batch_size=16, train_n_train=300, train_max_steps=40, train_eval_every=20,
                           train_eval_examples=10, train_probe_every=5, train_warmup_steps=0).items():
        at.number_input(key=key).set_value(value)
    at.button(key="train_start").click().run()
    run = at.session_state[LIVE_RUN_KEY]
    try:
        assert_no_exception(at)
        assert run.plan.model_cfg.architecture == "decoder-only"
        assert poll(at, lambda a: not run.active, seconds=90), "the 40 steps did not finish"
        at.run()
        assert_no_exception(at)
        probe = [c for c in charts(at) if c["title"].startswith("Step ")]
        assert probe, "the probe's attention map is drawn"
        at.switch_page("pages/decode.py").run()  # the live decoder-only weights on the Decode page
        assert_no_exception(at)
        assert at.subheader[0].value.startswith("Step 1 of")
    finally:
        run.job.stop()
        run.job.join(20)


def test_grouped_query_heads_are_labelled_with_their_group_and_chat_formats_the_prompt(monkeypatch, tmp_path,
                                                                                       llama_root):
    monkeypatch.setenv("ATTENTION_STUDIO_CHECKPOINTS", str(tmp_path / "none"))
    monkeypatch.setenv("ATTENTION_STUDIO_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("ATTENTION_STUDIO_HF_MODELS", str(llama_root))
    monkeypatch.delenv("ATTENTION_STUDIO_DEFAULT", raising=False)
    at = open_app()
    at.selectbox(key=MODEL_KEY).set_value("hf:tiny-llama").run()
    at.switch_page("pages/attention.py").run()
    text_box(at, "attention_text").input("A dog runs.").run()
    assert_no_exception(at)
    head = at.selectbox(key="attention_head")
    assert head.options[1:5] == ["Head 1 · kv1", "Head 2 · kv1", "Head 3 · kv2", "Head 4 · kv2"]
    assert "Mean within the key/value group" in at.selectbox(key="attention_combine").options
    at.selectbox(key="attention_head").set_value(2).run()
    at.selectbox(key="attention_layer").set_value(0).run()
    at.selectbox(key="attention_combine").set_value("group").run()
    assert_no_exception(at)
    adapter = open_model(str(llama_root / "tiny-llama"))
    w = greedy_decode(adapter, "A dog runs.").trace.weights("self")[0]  # (heads, queries, keys) of layer 1
    group = (w[2] + w[3]) / 2  # heads 3 and 4 share key/value group 2
    drawn = only_frame(charts(at)[0])
    assert drawn["weight"].tolist() == pytest.approx(group[drawn["query_index"], drawn["key_index"]].tolist(),
                                                     abs=1e-6)
    at.selectbox(key="attention_combine").set_value("pick").run()
    plain = at.session_state["attention_text"]
    at.sidebar.toggle(key="sidebar_hf_chat").set_value(True).run()  # the tokenizer has a chat template
    assert_no_exception(at)
    assert plain == "A dog runs."
    assert any("formatted as chat" in t for t in texts(at.sidebar.markdown))
    drawn = [str(frame.to_dict()) for chart in charts(at) for frame in chart["frames"].values()]
    assert any("im_start" in d for d in drawn), "the template's tokens are drawn as tokens"
