"""AppTest: the Decode page's step-through, layer/head choice, forced tokens, teacher forcing and bad input."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.helpers.app_session import assert_no_exception, chart_titled, charts, only_frame, open_app, texts
from transformer.adapters import adapter_for
from transformer.decode import greedy_decode, teacher_forced
from transformer.store import load_checkpoint
from ui.views import gold_alignment_for, gold_cells, md_token, visible


@pytest.fixture(scope="module")
def ckpt(tiny_checkpoint_dir):
    return load_checkpoint(tiny_checkpoint_dir / "reverse", load_optimizer=False)


@pytest.fixture(scope="module")
def text(ckpt):
    """An input whose greedy output has at least three steps with a real alternative at step 2."""
    for candidate in ("abcdefg", "hello", "qwerty", "zzzzzz", "mnopqrs", "abc"):
        result = greedy_decode(adapter_for(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer), candidate)
        if len(result.steps) >= 3:
            return candidate
    pytest.fail("the tiny checkpoint stops within two steps on every candidate input")


def _decode_page(text: str):
    at = open_app("decode")
    at.text_input(key="decode_text").input(text).run()
    assert_no_exception(at)
    return at


def _heading(at) -> str:
    return at.subheader[0].value


def test_next_prev_and_slider_walk_through_the_greedy_output(studio_env, ckpt, text):
    expected = greedy_decode(adapter_for(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer), text)
    steps, n = expected.steps, len(expected.steps)
    at = _decode_page(text)
    assert _heading(at).startswith(f"Step 1 of {n}: input ‹{md_token('<s>')}› → "
                                   f"output ‹{md_token(steps[0].token)}›")
    assert at.button(key="decode_prev").disabled
    at.button(key="decode_next").click().run()
    # the decoder axis shows the generated prefix: step 2's input is step 1's output
    assert _heading(at).startswith(f"Step 2 of {n}: input ‹{md_token(steps[0].token)}› → "
                                   f"output ‹{md_token(steps[1].token)}›")
    at.button(key="decode_prev").click().run()
    assert _heading(at).startswith("Step 1 of")
    at.slider(key="decode_step").set_value(n).run()
    assert _heading(at).startswith(f"Step {n} of {n}")
    assert at.button(key="decode_next").disabled
    assert_no_exception(at)


def test_shown_probabilities_come_from_the_model_in_eval_mode(studio_env, ckpt, text):
    expected = greedy_decode(adapter_for(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer), text)  # eval mode
    at = _decode_page(text)
    bars = only_frame(chart_titled(at, "Top-5 candidates at step 1"))
    assert bars["percent"].tolist() == pytest.approx([100 * p for _, p in expected.steps[0].top_k], abs=1e-6)
    assert bars["chosen"].tolist() == [tok == expected.steps[0].token for tok, _ in expected.steps[0].top_k]
    assert f"({expected.steps[0].prob:.1%})" in _heading(at)


def test_layer_and_head_choice_drive_the_step_charts(studio_env, ckpt, text):
    expected = greedy_decode(adapter_for(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer), text).trace
    at = _decode_page(text)
    assert len(at.selectbox(key="decode_layer").options) == expected.n_layers("cross")
    assert len(at.selectbox(key="decode_head").options) == expected.n_heads + 1
    at.button(key="decode_next").click().run()
    at.selectbox(key="decode_layer").set_value(0).run()
    at.selectbox(key="decode_head").set_value(1).run()
    strip = only_frame(chart_titled(at, "Source tokens shaded by the attention of step 2 · layer 1 · head 2"))
    # row 1 of the cross-attention map (the query of step 2), across the source tokens
    assert strip["weight"].tolist() == pytest.approx(expected.matrix("cross", 0, 1)[1].tolist(), abs=1e-6)
    prefix = only_frame(chart_titled(at, "Decoder self-attention of step 2"))
    assert prefix["weight"].tolist() == pytest.approx(expected.matrix("decoder_self", 0, 1)[1, :2].tolist(),
                                                      abs=1e-6)
    heatmap = only_frame(chart_titled(at, "Cross-attention rows up to step 2 · layer 1 · head 2"))
    assert heatmap["query_index"].max() == 1 and heatmap["key_index"].nunique() == len(expected.source_tokens)
    grid = chart_titled(at, f"Cross-attention · layer 1 of {expected.n_layers('cross')} ×")
    panels = next(f for f in grid["frames"].values() if "url" in f.columns)  # one image per panel
    assert sorted(panels["head"].unique()) == [-1, 0, 1]  # every head plus the mean, none dropped
    assert set(panels["layer"]) == {0}


def test_forcing_a_token_decodes_on_and_keeps_both_outputs(studio_env, ckpt, text):
    free = greedy_decode(adapter_for(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer), text)
    at = _decode_page(text)
    at.button(key="decode_next").click().run()
    choice = at.selectbox(key="decode_force_token")
    alternative = choice.options[0]
    assert alternative != visible(free.steps[1].token)
    raw = next(tok for tok, _ in free.steps[1].top_k if visible(tok) == alternative)
    choice.set_value(raw).run()
    at.button(key="decode_force").click().run()
    assert_no_exception(at)
    forced = greedy_decode(adapter_for(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer), text,
                           forced=[free.steps[0].token, raw])
    assert at.radio(key="decode_view").value == "forced"
    assert _heading(at).startswith(f"Step 2 of {len(forced.steps)}: input ‹{md_token(free.steps[0].token)}› → "
                                   f"output ‹{md_token(raw)}›")
    cards = " ".join(texts(at.markdown))
    assert "**Free-running (greedy)**" in cards and "**With the forced token**" in cards
    assert any("forced at step 2" in c for c in texts(at.caption))
    at.button(key="decode_unforce").click().run()
    assert "**With the forced token**" not in " ".join(texts(at.markdown))


def test_teacher_forcing_feeds_the_reference_beside_the_free_run(studio_env, ckpt, text):
    at = _decode_page(text)
    reference = at.text_input(key="decode_reference").value
    assert reference == text[::-1]  # the task knows the correct output of a typed input
    taught = teacher_forced(adapter_for(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer), text, reference)
    assert "Teacher-forced" in at.radio(key="decode_view").options
    at.radio(key="decode_view").set_value("teacher").run()
    at.button(key="decode_next").click().run()
    # teacher-forced: the decoder axis shows the reference, whatever the model predicted
    assert _heading(at).startswith(f"Step 2 of {len(reference) + 1}: input ‹{md_token(reference[0])}› → "
                                   f"output ‹{md_token(taught.steps[1].token)}›")
    assert_no_exception(at)


def test_gold_alignment_is_outlined_and_scored_for_reverse(studio_env, text):
    at = _decode_page(text)
    heatmap = chart_titled(at, "Cross-attention rows up to step 1")
    assert len(heatmap["spec"]["layer"]) == 3  # the map, the gold outline, the current row
    assert any("Alignment score per head" in m for m in texts(at.markdown))
    at.toggle(key="decode_gold").set_value(False).run()
    assert len(chart_titled(at, "Cross-attention rows up to step 1")["spec"]["layer"]) == 2


@pytest.mark.parametrize("typed, message", [
    ("", "The input is empty"),
    ("a" * 40, "this model reads at most 23"),
])
def test_bad_input_becomes_a_message(studio_env, typed, message):
    at = _decode_page(typed)
    assert any(message in w for w in texts(at.warning)), texts(at.warning)


def test_unknown_characters_and_an_overlong_reference_are_explained(studio_env, text):
    at = _decode_page("ab1c")
    assert any("Not in the model's vocabulary" in w and "1" in w for w in texts(at.warning))
    at.text_input(key="decode_reference").input("z" * 40).run()
    assert any(w.startswith("Teacher forcing: The reference has 40 tokens") for w in texts(at.warning))
    assert_no_exception(at)


def test_stepping_changes_the_step_charts_data_but_not_their_specs(studio_env, ckpt, text):
    """Only the data of the step charts changes from one step to the next, so the browser swaps it into the drawn
    chart instead of rebuilding the chart (which was most of a Next click's time in the browser)."""
    at = _decode_page(text)

    def step_charts(a) -> dict[str, dict]:
        shown = {c["title"].split(" of step ")[0].split(" up to step ")[0]: c for c in charts(a)}
        return {name: chart for name, chart in shown.items() if name in STEP_CHARTS}

    before = step_charts(at)
    at.button(key="decode_next").click().run()
    after = step_charts(at)
    assert sorted(before) == sorted(after) == sorted(STEP_CHARTS)
    for name in STEP_CHARTS:
        assert after[name]["spec"] == before[name]["spec"], f"the {name!r} chart was rebuilt"
        assert [f.to_dict() for f in after[name]["frames"].values()] != [f.to_dict() for f in
                                                                         before[name]["frames"].values()]
    assert len(only_frame(after["Decoder self-attention"])) == 2  # the prefix grew by one token


STEP_CHARTS = ("Decoder self-attention", "Source tokens shaded by the attention", "Cross-attention rows")


def test_the_app_outlines_and_scores_every_copy_of_a_repeated_letter_for_sort():
    """The app uses the gold `eval` scores against: for sort, any copy of a repeated letter."""
    sort = SimpleNamespace(level="char", task_name="sort", src_tokenizer=None)
    gold = gold_alignment_for(sort, "bab")  # output "abb": a <- 1, b <- 0 or 2, b <- 0 or 2
    assert gold_cells(gold, 4) == [(0, 1), (1, 0), (1, 2), (2, 0), (2, 2)]
    assert gold_cells(gold, 2) == [(0, 1), (1, 0), (1, 2)]  # rows the step-through has not reached are left out
    reverse = SimpleNamespace(level="char", task_name="reverse", src_tokenizer=None)
    assert gold_cells(gold_alignment_for(reverse, "bab"), 4) == [(0, 2), (1, 1), (2, 0)]  # the exact position
