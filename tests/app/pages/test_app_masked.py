"""AppTest: an encoder-only model (a tiny BERT) on every page. Decode predicts at the masks (typed or clicked), with
the model's own top-k, how far each head's attention moved, a pair's segment filter on the map, heads switched off
and the tokens a prediction leans on; Compare compares two masked inputs; every page opens with a one-word input,
a 20-word caption and the model's longest input."""
from __future__ import annotations

import pytest

from tests.helpers.app_session import assert_no_exception, chart_titled, charts, only_frame, open_app, texts
from tests.helpers.hf_masked_models import build
from transformer.analysis import attention_change, head_mask, mask_attribution
from transformer.decode import fill_masks
from transformer.model import Head
from transformer.store import open_model
from ui.models import MODEL_KEY
from ui.views.kit.selection import LINK_PARAMS

CAPTION = "two young men in red shirts are playing football on a green field while a small dog watches them closely"
PAGES = ("home", "decode", "attention", "compare", "train", "learn")


@pytest.fixture(scope="module")
def hf_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf_models")
    build("bert", root / "tiny-bert")
    return root


@pytest.fixture(scope="module")
def adapter(hf_root):
    return open_model(str(hf_root / "tiny-bert"))


@pytest.fixture
def hf_env(studio_env, hf_root, monkeypatch):
    monkeypatch.setenv("ATTENTION_STUDIO_HF_MODELS", str(hf_root))
    return hf_root


def _open(page: str, text: str | None = None, key: str = "decode_text"):
    at = open_app()
    at.selectbox(key=MODEL_KEY).set_value("hf:tiny-bert").run()
    at.switch_page(f"pages/{page}.py").run()
    if text is not None:
        at.text_input(key=key).input(text).run()
    assert_no_exception(at)
    return at


def _bars(at) -> list:
    return [c for c in charts(at) if c["title"].startswith("Mask at token")]


def test_typed_masks_get_the_models_own_top_k(hf_env, adapter):
    text = "a man in a [MASK] shirt sees the [MASK]"
    at = _open("decode", text)
    expected = fill_masks(adapter, text, top_k=5)
    bars = _bars(at)
    assert len(bars) == len(expected.predictions) == 2
    for chart, prediction in zip(bars, expected.predictions, strict=True):
        frame = only_frame(chart).sort_values("rank")
        assert frame["token"].tolist() == [t for t, _, _ in prediction.top_k]
        assert frame["prob"].tolist() == pytest.approx([v for _, _, v in prediction.top_k], abs=1e-6)


def test_a_text_without_a_mask_says_so_and_a_click_masks_a_token(hf_env, adapter):
    text = "the dog runs in the park"
    at = _open("decode", text)
    assert any("no [MASK] token" in t for t in texts(at.info))
    pills = at.pills(key="decode_mask_positions")
    source = adapter.tokenize_source(text)
    assert list(pills.options) == list(source.tokens[1:-1])  # specials cannot be masked
    pills.set_value([2]).run()
    assert_no_exception(at)
    expected = fill_masks(adapter, text, mask_positions=[2], top_k=5)
    (chart,) = _bars(at)
    assert chart["title"] == f"Mask at token 2 (was {source.tokens[2]})"
    assert only_frame(chart).sort_values("rank")["prob"].tolist() == pytest.approx(
        [v for _, _, v in expected.predictions[0].top_k], abs=1e-6)
    change = only_frame(chart_titled(at, "How far each head's attention moved"))
    want = attention_change(fill_masks(adapter, text).trace, expected.trace)
    got = change.sort_values(["layer", "head"])["change"].tolist()
    assert got == pytest.approx(want.sort_values(["layer", "head"])["change"].tolist(), abs=1e-6)
    assert max(got) > 0  # masking a token moves some head's attention


def test_a_pair_offers_the_segment_filter_and_keeps_the_models_weights(hf_env, adapter):
    at = _open("decode", "a man [MASK] the dog")
    at.text_input(key="decode_pair").input("the dog runs").run()
    control = at.segmented_control(key="decode_segment")
    assert control.options == ["all", "A→A", "B→B", "A→B", "B→A"]
    control.set_value("A→B").run()
    assert_no_exception(at)
    result = fill_masks(adapter, "a man [MASK] the dog", "the dog runs")
    seg = result.segments
    frame = only_frame(chart_titled(at, "Encoder self-attention"))
    weights = result.trace.matrix("encoder_self", 2).numpy()  # the last layer (the picker's first), mean of heads
    for row in frame.itertuples():
        inside = seg[row.query_index] == 0 and seg[row.key_index] == 1
        assert row.weight == pytest.approx(weights[row.query_index, row.key_index] if inside else 0.0, abs=1e-6)
    assert frame["weight"].max() > 0


def test_heads_switched_off_and_the_attribution_are_the_models(hf_env, adapter):
    text = "a man in a [MASK] shirt"
    at = _open("decode", text)
    at.multiselect(key=LINK_PARAMS["decode"]["ablate"]).set_value(["enc:L1H1", "enc:L2H3"]).run()
    assert_no_exception(at)
    heads = [Head("encoder_self", 0, 0), Head("encoder_self", 1, 2)]
    before = fill_masks(adapter, text).predictions[0]
    after = fill_masks(adapter, text, head_mask=head_mask(adapter, heads)).predictions[0]
    line = next(t for t in texts(at.markdown) if "with the heads off" in t)
    assert f"{before.prob:.3f}" in line and f"{after.prob:.3f}" in line and after.prob != before.prob
    shares = mask_attribution(adapter, before and fill_masks(adapter, text).source.ids, before.position,
                              before.top_k[0][1])
    assert sum(shares) == pytest.approx(1.0) and len(shares) == len(adapter.tokenize_source(text).ids)


def test_compare_two_masked_inputs(hf_env, adapter):
    at = _open("compare", "the dog [MASK] in the park", key="compare_text")
    at.text_input(key="compare_text_b").input("the man [MASK] in the park").run()
    assert_no_exception(at)
    a = fill_masks(adapter, "the dog [MASK] in the park")
    b = fill_masks(adapter, "the man [MASK] in the park")
    bars = _bars(at)
    assert [only_frame(c).sort_values("rank")["prob"].iloc[0] for c in bars] == pytest.approx(
        [a.predictions[0].prob, b.predictions[0].prob], abs=1e-6)
    change = only_frame(chart_titled(at, "How far each head's attention moved"))
    assert change.sort_values(["layer", "head"])["change"].tolist() == pytest.approx(
        attention_change(a.trace, b.trace).sort_values(["layer", "head"])["change"].tolist(), abs=1e-6)


def test_compare_one_masked_input_through_two_models(studio_env, tmp_path_factory, monkeypatch):
    root = tmp_path_factory.mktemp("two_bert")
    build("bert", root / "tiny-bert")
    build("bert", root / "tiny-bert-b", seed=1)  # the same tokenizer, other weights
    monkeypatch.setenv("ATTENTION_STUDIO_HF_MODELS", str(root))
    text = "the dog [MASK] in the park"
    at = _open("compare")
    at.radio(key="compare_masked_way").set_value("models").run()
    at.selectbox(key=LINK_PARAMS["compare"]["compare"]).set_value("hf:tiny-bert-b").run()
    at.text_input(key="compare_text").input(text).run()
    assert_no_exception(at)
    a, b = (fill_masks(open_model(str(root / name)), text) for name in ("tiny-bert", "tiny-bert-b"))
    assert a.predictions[0].prob != pytest.approx(b.predictions[0].prob, abs=1e-6)  # two models, two answers
    bars = _bars(at)
    assert [only_frame(c).sort_values("rank")["prob"].iloc[0] for c in bars] == pytest.approx(
        [a.predictions[0].prob, b.predictions[0].prob], abs=1e-6)
    change = only_frame(chart_titled(at, "How far each head's attention moved"))
    assert change.sort_values(["layer", "head"])["change"].tolist() == pytest.approx(
        attention_change(a.trace, b.trace).sort_values(["layer", "head"])["change"].tolist(), abs=1e-6)


@pytest.mark.parametrize("length", ["one word", "20 words", "longest"])
@pytest.mark.parametrize("page", PAGES)
def test_every_page_opens_with_short_and_long_inputs(hf_env, adapter, page, length):
    text = {"one word": "dog", "20 words": CAPTION, "longest": None}[length]
    if text is None:  # as many tokens as the model reads, specials included
        text = " ".join(["dog"] * (adapter.max_source_len - 2))
        assert len(adapter.tokenize_source(text).ids) == adapter.max_source_len
    at = open_app()
    at.selectbox(key=MODEL_KEY).set_value("hf:tiny-bert").run()
    at.switch_page(f"pages/{page}.py").run()
    key = {"home": "home_text", "decode": "decode_text", "attention": "attention_text", "compare": "compare_text",
           "learn": "learn_text"}
    if page in key:
        at.text_input(key=key[page]).input(text).run()
    assert_no_exception(at)
    for chart in charts(at):
        width = chart["spec"].get("width")
        assert not isinstance(width, (int, float)) or width <= 1280


def test_learn_walks_every_stage_and_says_what_an_encoder_only_model_has_not(hf_env):
    from ui.views import TOUR
    at = _open("learn", "a man sees the dog", key="learn_text")
    said = []
    for index in range(len(TOUR)):
        at.session_state["learn_stage"] = index
        at.run()
        assert_no_exception(at)
        said += texts(at.info)
    assert any("no cross-attention" in t and "both directions" in t for t in said)
    assert any("does not decode" in t for t in said)


def test_a_link_keeps_the_pair_the_masks_and_the_segment_filter(hf_env, adapter):
    from streamlit.testing.v1 import AppTest

    from tests.helpers.app_session import APP
    params = {"model": "hf:tiny-bert", "text": "a man sees the dog", "pair": "the dog runs", "masks": "2",
              "segment": "B→A", "layer": "2", "head": "3"}
    at = AppTest.from_file(str(APP), default_timeout=90)
    at.switch_page("pages/decode.py")
    at.query_params = dict(params)
    at.run()
    assert_no_exception(at)
    assert at.pills(key="decode_mask_positions").value == [2]
    assert at.segmented_control(key="decode_segment").value == "B→A"
    (chart,) = _bars(at)
    expected = fill_masks(adapter, "a man sees the dog", "the dog runs", mask_positions=[2])
    assert only_frame(chart).sort_values("rank")["prob"].tolist() == pytest.approx(
        [v for _, _, v in expected.predictions[0].top_k], abs=1e-6)
    frame = only_frame(chart_titled(at, "Encoder self-attention · layer 2 · head 3"))
    seg = expected.segments
    weights = expected.trace.matrix("encoder_self", 1, 2).numpy()
    for row in frame.itertuples():
        inside = seg[row.query_index] == 1 and seg[row.key_index] == 0
        assert row.weight == pytest.approx(weights[row.query_index, row.key_index] if inside else 0.0, abs=1e-6)
    assert {k: v for k, v in dict(at.query_params).items() if k in params} == params


@pytest.fixture(scope="module")
def bert_base_root(tmp_path_factory):
    from tests.helpers.hf_masked_models import BERT_BASE
    root = tmp_path_factory.mktemp("hf_base")
    build("bert", root / "bert-base-shape", size=BERT_BASE)
    return root


@pytest.mark.parametrize("length", ["one word", "20 words", "512 tokens"])
@pytest.mark.parametrize("page", PAGES)
def test_every_page_opens_a_bert_base_shaped_model(studio_env, bert_base_root, monkeypatch, page, length):
    """BERT-base's 12 layers x 12 heads, hidden size 768, 512 positions (random weights, built from its config)."""
    monkeypatch.setenv("ATTENTION_STUDIO_HF_MODELS", str(bert_base_root))
    text = {"one word": "dog", "20 words": CAPTION, "512 tokens": " ".join(["dog"] * 510)}[length]
    at = open_app()
    at.selectbox(key=MODEL_KEY).set_value("hf:bert-base-shape").run()
    at.switch_page(f"pages/{page}.py").run()
    key = {"home": "home_text", "decode": "decode_text", "attention": "attention_text", "compare": "compare_text",
           "learn": "learn_text"}
    if page in key:
        at.text_input(key=key[page]).input(text).run()
    assert_no_exception(at)
    assert not texts(at.warning)  # 512 tokens is the model's longest input: read, not refused
    for chart in charts(at):
        width = chart["spec"].get("width")
        assert not isinstance(width, (int, float)) or width <= 1280


def test_the_attention_page_offers_the_segment_filter_for_a_pair(hf_env, adapter):
    at = _open("attention", "a man sees the dog", key="attention_text")
    assert "attention_segment" not in [c.key for c in at.segmented_control]  # one sentence: no segments
    at.text_input(key="attention_pair").input("the dog runs").run()
    at.segmented_control(key="attention_segment").set_value("A→B").run()
    assert_no_exception(at)
    result = fill_masks(adapter, "a man sees the dog", "the dog runs")
    seg = result.segments
    frame = only_frame(chart_titled(at, "Encoder self-attention · layer 3"))
    weights = result.trace.matrix("encoder_self", 2).numpy()
    for row in frame.itertuples():
        inside = seg[row.query_index] == 0 and seg[row.key_index] == 1
        assert row.weight == pytest.approx(weights[row.query_index, row.key_index] if inside else 0.0, abs=1e-6)
    assert frame["weight"].max() > 0
    assert dict(at.query_params).get("segment") == "A→B" and dict(at.query_params).get("pair") == "the dog runs"


def test_the_attention_pages_ablation_of_an_encoder_only_model(hf_env, adapter):
    text = "a man in a [MASK] shirt"
    at = _open("attention", text, key="attention_text")
    at.multiselect(key="attention_ablate").set_value(["enc:L1H2"]).run()
    assert_no_exception(at)
    want = fill_masks(adapter, text, head_mask=head_mask(adapter, [Head("encoder_self", 0, 1)]))
    frame = only_frame(chart_titled(at, "Encoder self-attention · layer 3 · mean of heads with the heads switched off"))
    weights = want.trace.matrix("encoder_self", 2).numpy()
    got = frame.sort_values(["query_index", "key_index"])["weight"].to_numpy()
    assert got.tolist() == pytest.approx(weights.flatten().tolist(), abs=1e-6)
    intact = fill_masks(adapter, text).trace.matrix("encoder_self", 2).numpy()
    assert abs(weights - intact).max() > 1e-7  # the head's absence reaches a later layer (a random model: a little)


def test_the_attention_page_says_where_an_encoder_only_models_sweep_is(hf_env):
    at = _open("attention", "a man in a [MASK] shirt", key="attention_text")
    assert "attention_sweep_run" not in [b.key for b in at.button]
    assert any("Predict at the masks" in t for t in texts(at.caption))
