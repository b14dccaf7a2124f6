"""AppTest: the Decode page's beam tree shows the library's search (every node, the final hypotheses), a
hypothesis's attention at its step, and "Decode from here" forces that prefix into the step-through."""
from __future__ import annotations

import pytest

from tests.helpers.app_session import assert_no_exception, chart_titled, charts, open_app, open_link, texts
from transformer.adapters import adapter_for
from transformer.decode import beam_tree, greedy_decode
from transformer.store import load_checkpoint
from ui.views import md_token

TEXT = "abcdefg"


@pytest.fixture(scope="module")
def adapter(tiny_checkpoint_dir):
    ckpt = load_checkpoint(tiny_checkpoint_dir / "reverse", load_optimizer=False)
    return adapter_for(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer, name="reverse")


def _page():
    at = open_app("decode")
    at.text_input(key="decode_text").input(TEXT).run()
    at.session_state["decode_beam_open"] = True
    at.run()
    assert_no_exception(at)
    return at


def test_the_tree_is_the_librarys_search(studio_env, adapter):
    tree = beam_tree(adapter, TEXT, 4)
    at = _page()
    table = next(d.value for d in at.dataframe if "score" in d.value.columns)
    assert list(table["output"]) == [h.text for h in tree.hypotheses]
    assert list(table["score"]) == pytest.approx([round(h.score, 3) for h in tree.hypotheses], abs=1e-3)
    drawn = chart_titled(at, "The beam tree")
    frame = max((f for f in drawn["frames"].values() if "status" in f.columns), key=len)  # the nodes, not edges
    assert len(frame) == len(tree.nodes)
    assert sorted(frame["status"]) == sorted(n.status for n in tree.nodes)
    assert [c for c in charts(at) if c["title"].startswith("Cross-attention of step")]


def test_decode_from_here_forces_the_hypothesis(studio_env, adapter):
    tree = beam_tree(adapter, TEXT, 4)
    at = _page()
    at.selectbox(key="decode_beam_hypothesis").set_value(1).run()
    tokens = [n.token for n in tree.path(tree.hypotheses[1].node)]
    assert any(" ".join(f"‹{md_token(t)}›" for t in tokens) in t for t in texts(at.markdown))
    at.button(key="decode_beam_from_here").click().run()
    assert_no_exception(at)
    assert at.session_state["decode_view"] == "forced"
    forced = greedy_decode(adapter, TEXT, forced=tokens)
    assert list(forced.output_tokens[: len(tokens)]) == tokens
    assert at.subheader[0].value.startswith(f"Step {len(tokens)} of {len(forced.steps)}")


def test_the_beam_width_is_in_the_link_and_the_link_opens_the_tree(studio_env, adapter):
    at = _page()
    assert at.query_params["beam"] == "4"
    at.number_input(key="decode_beam_width").set_value(3).run()
    params = dict(at.query_params)
    assert params["beam"] == "3"
    shared = open_link("decode", params)
    table = next(d.value for d in shared.dataframe if "score" in d.value.columns)
    assert list(table["output"]) == [h.text for h in beam_tree(adapter, TEXT, 3).hypotheses]
    assert "beam" not in open_app("decode").query_params  # the tree closed: no width in the link
    assert "beam='9' ignored (expected 2–8)" in texts(open_link("decode", {**params, "beam": "9"}).info)[0]
