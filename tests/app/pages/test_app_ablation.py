"""AppTest: head ablation, the importance sweep, the attribution strip and the agreement heatmap on the pages show
the library's numbers for the model the page names; stale or missing heads never break a page."""
from __future__ import annotations

import pytest

from tests.helpers.app_session import assert_no_exception, chart_titled, charts, only_frame, open_app, texts
from transformer.adapters import adapter_for
from transformer.analysis import (
    ablated_decode,
    agreement_frame,
    attribute_step,
    attribute_steps,
    output_ids,
    parse_head,
    sweep_heads,
)
from transformer.decode import greedy_decode
from transformer.store import load_checkpoint

TEXT = "abcdefg"
ALL_CROSS = ["cross:L1H1", "cross:L1H2", "cross:L2H1", "cross:L2H2"]


@pytest.fixture(scope="module")
def ckpt(tiny_checkpoint_dir):
    return load_checkpoint(tiny_checkpoint_dir / "reverse", load_optimizer=False)


def _page(name: str):
    at = open_app(name)
    at.text_input(key=f"{name}_text").input(TEXT).run()
    assert_no_exception(at)
    return at


def test_decode_compares_the_ablated_run_with_the_intact_one(studio_env, ckpt):
    model, st, tt = ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer
    intact = greedy_decode(adapter_for(model, st, tt), TEXT)
    adapter = adapter_for(model, st, tt)
    ablated = ablated_decode(adapter, TEXT, [parse_head(label, adapter) for label in ALL_CROSS])
    at = _page("decode")
    at.multiselect(key="decode_ablate").set_value(ALL_CROSS).run()
    assert_no_exception(at)
    probs = only_frame(_probability_chart(at))
    by_run = probs.pivot(index="step", columns="run", values="prob")
    assert by_run["intact"].dropna().tolist() == pytest.approx([s.prob for s in intact.steps], abs=1e-6)
    assert by_run["ablated"].dropna().tolist() == pytest.approx([s.prob for s in ablated.steps], abs=1e-6)
    strip = only_frame(chart_titled(at, "With the heads switched off: step 1"))
    assert strip["weight"].tolist() == pytest.approx(ablated.trace.matrix("cross", 1)[0].tolist(), abs=1e-6)
    messages = texts(at.info) + texts(at.success)
    assert any("first differ" in m or "Same output" in m for m in messages)


def _probability_chart(at):
    found = [c for c in charts(at) if "probability of the chosen token" in str(c["spec"])]
    assert found, "no intact-vs-ablated probability chart"
    return found[0]


def test_decode_attribution_strip_is_the_library_attribution_of_the_step(studio_env, ckpt):
    model, st, tt = ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer
    out = output_ids(greedy_decode(adapter_for(model, st, tt), TEXT))
    at = _page("decode")
    assert not [c for c in charts(at) if c["title"].startswith("Source tokens shaded by their")], \
        "attribution drawn before its expander was opened"
    at.session_state["decode_attr_open"] = True  # the user opens the attribution expander
    at.button(key="decode_next").click().run()
    expected = attribute_step(adapter_for(model, st, tt), TEXT, out, 1)
    strip = only_frame(chart_titled(at, "Source tokens shaded by their Integrated Gradients attribution to step 2"))
    assert strip["weight"].tolist() == pytest.approx(expected.source_share(), abs=1e-5)
    at.radio(key="decode_attr_method").set_value("gradient_x_input").run()
    expected = attribute_step(adapter_for(model, st, tt), TEXT, out, 1, method="gradient_x_input")
    strip = only_frame(chart_titled(at, "Source tokens shaded by their Gradient × input attribution to step 2"))
    assert strip["weight"].tolist() == pytest.approx(expected.source_share(), abs=1e-5)
    assert_no_exception(at)


def test_attention_sweep_and_agreement_show_the_library_figures(studio_env, ckpt):
    model, st, tt = ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer
    result = greedy_decode(adapter_for(model, st, tt), TEXT)
    out = output_ids(result)
    at = _page("attention")
    at.button(key="attention_sweep_run").click().run()
    assert_no_exception(at)
    adapter = adapter_for(model, st, tt)
    sweep = sweep_heads(adapter, TEXT, out).frame
    table = next(d.value for d in at.dataframe if "drop" in d.value.columns)
    assert len(table) == len(sweep) == 3 * 2 * 2
    assert table["drop"].tolist() == pytest.approx(sweep["drop"].tolist(), abs=1e-5)
    at.toggle(key="attention_agreement_on").set_value(True).run()
    assert_no_exception(at)
    attributions = attribute_steps(adapter, TEXT, out)
    shown = [only_frame(c).sort_values(["layer", "head"])["score"].tolist() for c in _charts_with(at, "score")]
    for kind in ("cross", "decoder_self"):  # a heatmap of each figure for each kind
        weights = result.trace.cross if kind == "cross" else result.trace.decoder_self
        ordered = agreement_frame(weights, attributions, kind=kind).sort_values(["layer", "head"])
        for column in ("spearman", "top1"):
            assert any(values == pytest.approx(ordered[column].tolist(), abs=1e-5) for values in shown), (kind, column)
    assert any("Decoder self-attention vs attribution to the decoder inputs" in m for m in texts(at.markdown))


def _charts_with(at, column: str):
    return [c for c in charts(at) if column in only_frame(c).columns and "layer_label" in only_frame(c).columns]


def test_the_open_head_can_be_switched_off_and_stale_heads_are_dropped(studio_env, ckpt):
    at = _page("attention")
    at.selectbox(key="attention_layer").set_value(0).run()
    at.selectbox(key="attention_head").set_value(1).run()
    at.button(key="attention_ablate_open").click().run()
    assert_no_exception(at)
    assert at.multiselect(key="attention_ablate").value == ["cross:L1H2"]
    assert chart_titled(at, "Cross-attention · layer 1 · head 2 with the heads switched off")
    at.session_state["attention_ablate"] = ["cross:L9H1", "cross:L1H2"]  # e.g. chosen on a larger model
    at.run()
    assert_no_exception(at)
    assert at.multiselect(key="attention_ablate").value == ["cross:L1H2"]


def test_heads_named_in_the_link_are_switched_off_and_missing_ones_named(studio_env):
    at = open_app()
    at.query_params["ablate"] = "cross:L2H1,cross.L7H1"  # the app's label form reads as the link's
    at.switch_page("pages/decode.py")
    at.run()
    assert_no_exception(at)
    assert at.multiselect(key="decode_ablate").value == ["cross:L2H1"]
    notes = [t for t in texts(at.info) if t.startswith("Parts of this link were ignored")]
    assert len(notes) == 1 and "ablate='cross.L7H1' ignored (no such head in the model)" in notes[0]
    assert any("Without Cross L2 H1" in m for m in texts(at.markdown))
    assert at.query_params["ablate"] == "cross.L2H1"  # the link now names what is shown


def _clicks_script(events: list, kind: str, target: str) -> None:
    """Each event is what Streamlit puts in the grid's state when a panel is clicked; the page's on_select runs."""
    import streamlit as st

    from ui.views import clicked_note, grid_key, toggle_clicked_head

    keys = []
    for event in events:
        keys.append(grid_key("grid"))
        st.session_state[keys[-1]] = event
        toggle_clicked_head("grid", kind, target)
    clicked_note("grid")
    st.session_state["chart_keys"] = keys


def _click(layer: int, head: int) -> dict:
    return {"selection": {"cell": [{"layer": layer, "head": head}]}}


def _run_clicks(events: list, kind: str = "cross", before: list | None = None):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_clicks_script, args=(events, kind, "page_ablate"), default_timeout=60)
    if before is not None:
        at.session_state["page_ablate"] = before
    at.run()
    assert_no_exception(at)
    return at


def test_a_click_on_a_head_panel_switches_it_off_and_a_second_click_on_again():
    at = _run_clicks([_click(0, 1)])
    assert at.session_state["page_ablate"] == ["cross:L1H2"]
    at = _run_clicks([_click(0, 1), _click(1, 0), _click(0, 1)])
    assert at.session_state["page_ablate"] == ["cross:L2H1"]
    keys = at.session_state["chart_keys"]
    assert len(set(keys)) == 3, "the chart is not renewed after a click, so clicking the same panel again is lost"
    at = _run_clicks([_click(0, 0)], kind="decoder_self", before=["cross:L2H1"])  # the multiselect's heads stay
    assert at.session_state["page_ablate"] == ["cross:L2H1", "dec:L1H1"]


def test_a_click_on_the_mean_panel_or_a_cleared_selection_switches_nothing_off():
    at = _run_clicks([_click(1, -1)], before=["cross:L1H1"])
    assert at.session_state["page_ablate"] == ["cross:L1H1"]
    assert any("not one head" in m for m in texts(at.info))
    at = _run_clicks([{"selection": {"cell": []}}], before=["cross:L1H1"])  # a double-click clears the selection
    assert at.session_state["page_ablate"] == ["cross:L1H1"]
    assert not at.info


def test_heads_switched_off_are_marked_in_the_grid_and_written_into_the_link(studio_env):
    at = _page("attention")
    at.radio(key="attention_grid_click").set_value("ablate").run()
    at.multiselect(key="attention_ablate").set_value(["cross:L1H2", "enc:L1H1"]).run()
    assert_no_exception(at)
    grid = only_frame(next(c for c in charts(at) if "heads and mean" in c["title"]))
    assert sorted(set(grid.loc[grid["panel"].str.endswith("· off"), "panel"])) == ["L1 H2 · off"]
    assert set(grid["panel"]) >= {"L1 H1", "L1 mean", "L2 H2"}
    assert _link_param(at, "ablate") == "cross.L1H2,enc.L1H1"
    at.multiselect(key="attention_ablate").set_value(["enc:L1H1"]).run()  # a change on the page replaces the link's
    assert at.multiselect(key="attention_ablate").value == ["enc:L1H1"]
    assert "L1 H2 · off" not in set(only_frame(next(c for c in charts(at) if "heads and mean" in c["title"]))["panel"])
    assert _link_param(at, "ablate") == "enc.L1H1"
    at.multiselect(key="attention_ablate").set_value([]).run()
    assert _link_param(at, "ablate") is None


def _link_param(at, name: str) -> str | None:
    value = at.query_params.get(name)
    return value[0] if isinstance(value, list) else value
