"""AppTest: the Decode page's logit lens (what each layer predicts at the step, the layers x steps grid) and the
DecoderLens switch show the library's figures for the model shown."""
from __future__ import annotations

import pytest

from tests.helpers.app_session import assert_no_exception, chart_titled, charts, only_frame, open_app, open_link, texts
from transformer.adapters import adapter_for
from transformer.analysis import every_step_lens
from transformer.charts import clicked_lens_cell
from transformer.decode import greedy_decode
from transformer.store import load_checkpoint
from ui.views import md_token

TEXT = "abcdefg"
GRID = "The chosen token's rank at every layer and step"


@pytest.fixture(scope="module")
def adapter(tiny_checkpoint_dir):
    ckpt = load_checkpoint(tiny_checkpoint_dir / "reverse", load_optimizer=False)
    return adapter_for(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer, name="reverse")


def _page():
    at = open_app("decode")
    at.text_input(key="decode_text").input(TEXT).run()
    assert_no_exception(at)
    return at


def _lens_table(at):
    return next(d.value for d in at.dataframe if "entropy (nats)" in d.value.columns)


def test_the_lens_shows_the_librarys_figures_at_the_step(studio_env, adapter):
    expected = every_step_lens(adapter, greedy_decode(adapter, TEXT, residuals=True))
    at = _page()
    assert not [c for c in charts(at) if c["title"].startswith(GRID)], "the lens was computed before it was opened"
    at.session_state["decode_lens_open"] = True  # the user opens the expander
    at.button(key="decode_next").click().run()
    assert_no_exception(at)
    table = _lens_table(at)
    step = expected[1]
    assert list(table["layer"]) == ["layer 2", "layer 1", "embeddings"][-len(step.layers):]
    rank_column = next(c for c in table.columns if c.startswith("rank of"))
    assert list(table[rank_column]) == [p.rank for p in reversed(step.layers)]
    assert list(table["its probability"]) == pytest.approx([p.prob for p in reversed(step.layers)], abs=1e-6)
    assert list(table["KL(final ‖ layer) (nats)"]) == pytest.approx([p.kl for p in reversed(step.layers)], abs=1e-6)
    assert table[rank_column].iloc[0] == 1  # the last layer is the model's own choice
    heading = [c["title"] for c in charts(at) if c["title"].startswith(GRID)]
    assert heading, "no grid"
    grid = only_frame(chart_titled(at, GRID))
    assert len(grid) == len(expected) * len(step.layers)
    for s, lens in enumerate(expected):
        for p in lens.layers:
            row = grid[(grid["step"] == s + 1) & (grid["layer"] == p.layer)]
            assert int(row["rank"].iloc[0]) == p.rank
    assert any(f"step 2 of {len(expected)}" in t for t in texts(at.markdown))


def test_the_decoder_lens_decodes_from_an_earlier_encoder_layer(studio_env, adapter):
    at = _page()
    at.session_state["decode_lens_open"] = True
    at.run()
    at.selectbox(key="decode_lens_encoder_layer").set_value(0).run()
    assert_no_exception(at)
    early = greedy_decode(adapter, TEXT, encoder_layer=0)
    assert any(f"Reading encoder layer 0, the decoder writes: **{md_token(early.output_text)}" in t
               for t in texts(at.markdown))
    expected = every_step_lens(adapter, greedy_decode(adapter, TEXT, encoder_layer=0, residuals=True))
    rank_column = next(c for c in _lens_table(at).columns if c.startswith("rank of"))
    assert list(_lens_table(at)[rank_column]) == [p.rank for p in reversed(expected[0].layers)]
    params = dict(at.query_params)
    assert params["enc_layer"] == "0"  # the DecoderLens picker is in the link
    shared = open_link("decode", params)  # and the link opens the lens reading that layer
    assert any(f"Reading encoder layer 0, the decoder writes: **{md_token(early.output_text)}" in t
               for t in texts(shared.markdown))
    at.selectbox(key="decode_lens_encoder_layer").set_value(None).run()  # the encoder's output: the default
    assert "enc_layer" not in at.query_params
    n = adapter.head_counts()["encoder_self"][0]
    assert f"Parts of this link were ignored: enc_layer=9 ignored (the encoder has layers 0 to {n})" in \
        texts(open_link("decode", {**params, "enc_layer": "9"}).info)[0]


def test_the_teacher_forced_view_shows_the_lens_of_each_prediction(studio_env, adapter):
    from transformer.decode import teacher_forced
    expected = every_step_lens(adapter, teacher_forced(adapter, TEXT, "gfedcba", residuals=True))
    at = _page()
    at.text_input(key="decode_reference").input("gfedcba").run()
    at.radio(key="decode_view").set_value("teacher").run()
    at.session_state["decode_lens_open"] = True
    at.run()
    assert_no_exception(at)
    rank_column = next(c for c in _lens_table(at).columns if c.startswith("rank of"))
    assert list(_lens_table(at)[rank_column]) == [p.rank for p in reversed(expected[0].layers)]
    assert list(_lens_table(at)["its probability"]) == pytest.approx(
        [p.prob for p in reversed(expected[0].layers)], abs=1e-6)


def test_a_click_on_the_grid_names_its_layer_and_step():
    assert clicked_lens_cell({"selection": {"lens_cell": [{"layer": 2, "step": 5}]}}) == (2, 5)
    assert clicked_lens_cell({"selection": {"lens_cell": []}}) is None
    assert clicked_lens_cell(None) is None
