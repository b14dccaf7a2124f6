"""AppTest: what made a score (the QK table), heads that build on heads (composition), the route of an output token
and source or prefix open on every shipped model with one word, a 20-word caption and the longest input; the QK
table's sum is the score the model computed; a link's key or query outside the input gets one message; the route's
and composition's buttons open their heads; a model in which no head reads another's output says so."""
from __future__ import annotations

import re

import pytest

from tests.helpers import ROOT
from tests.helpers.app_session import assert_no_exception, charts, open_app, open_link, text_box, texts
from tests.helpers.hf_causal_models import build as build_causal
from tests.helpers.real_shapes import CAPTION, PAGE_PX
from transformer.analysis import decode_parts, qk_attribution
from transformer.model import Head
from transformer.store import open_model
from ui.models import MODEL_KEY

SHIPPED = ("reverse", "reverse-decoder-only", "toy-en-de", "toy-en-de-encoder-only", "induction")
SUM = re.compile(r"= \*\*([+-][\d.]+)\*\*; the score the model computed: \*\*([+-][\d.]+)\*\*")
ATTENTION_OPEN = ("attention_qk_open", "attention_composition_open")
DECODE_OPEN = ("decode_qk_open", "decode_route_open", "decode_reliance_open")


def longest(adapter, word: str) -> str:
    """The most `word`s whose source the model still reads (specials included)."""
    lo, hi = 1, adapter.max_source_len
    while lo < hi:
        mid = (lo + hi + 1) // 2
        fits = len(adapter.tokenize_source(" ".join([word] * mid)).ids) <= adapter.max_source_len
        lo, hi = (mid, hi) if fits else (lo, mid - 1)
    return " ".join([word] * lo)


def inputs(adapter, name: str) -> list[str]:
    letters = name.startswith("reverse") or name == "induction"  # letters, not words
    return (["abc", "".join(CAPTION.lower().split())[:19], longest(adapter, "b")] if letters
            else ["dog", CAPTION, longest(adapter, "dog")])


def sums(at) -> list[tuple[float, float]]:
    """(the table's sum, the model's score) of every QK table on the page."""
    return [(float(m[1]), float(m[2])) for m in (SUM.search(t) for t in texts(at.markdown)) if m]


def open_page(option: str | None, page: str, text: str, opened: tuple[str, ...]):
    at = open_app()
    if option is not None:
        at.selectbox(key=MODEL_KEY).set_value(option).run()
    at.switch_page(f"pages/{page}.py").run()
    text_box(at, f"{page}_text").input(text).run()
    at.selectbox(key=f"{page}_head").set_value(0).run()
    for key in opened:
        at.session_state[key] = True
    at.run()
    assert_no_exception(at)
    return at


def check_views(option: str | None, adapter, text: str) -> None:
    at = open_page(option, "attention", text, ATTENTION_OPEN)
    assert sums(at) and all(abs(s - score) <= 1e-4 * max(1, abs(score)) for s, score in sums(at))
    assert any("composition" in t.lower() for t in texts(at.markdown) + texts(at.info) + texts(at.caption))
    wide = [(c["title"], c["spec"]["width"]) for c in charts(at)
            if isinstance(c["spec"].get("width"), (int, float)) and c["spec"]["width"] > PAGE_PX]
    assert not wide, wide
    if not adapter.family.decodes:
        return
    at = open_page(option, "decode", text, DECODE_OPEN)
    assert sums(at)
    assert any("edges above" in t for t in texts(at.caption))
    if adapter.family.cross_kind is not None:
        assert any("came from the source" in t for t in texts(at.markdown))
    wide = [(c["title"], c["spec"]["width"]) for c in charts(at)
            if isinstance(c["spec"].get("width"), (int, float)) and c["spec"]["width"] > PAGE_PX]
    assert not wide, wide


@pytest.mark.parametrize("name", SHIPPED)
def test_the_views_open_on_every_shipped_model_at_every_length(shipped_env, name):
    adapter = open_model(str(ROOT / "checkpoints" / name))
    for text in inputs(adapter, name):
        check_views(f"shipped:{name}", adapter, text)


def test_the_qk_tables_score_is_the_models_own(shipped_env):
    adapter = open_model(str(ROOT / "checkpoints" / "reverse"))
    at = open_page("shipped:reverse", "attention", "abcdef", ATTENTION_OPEN)
    at.selectbox(key="attention_qk_query").set_value(2).run()
    at.selectbox(key="attention_qk_key").set_value(4).run()
    assert_no_exception(at)
    kind = at.session_state["attention_kind"]
    table = qk_attribution(decode_parts(adapter, "abcdef").capture, Head(kind, 0, 0), 2, 4)
    (total, score), = sums(at)
    assert score == pytest.approx(table.score, abs=1e-4) and total == pytest.approx(table.score, abs=1e-4)
    assert "qkk" in at.query_params and "qkq" in at.query_params


def test_a_link_with_a_key_or_query_outside_the_input_says_so(shipped_env):
    at = open_link("attention", {"text": "abc", "head": "1", "qkq": "99", "qkk": "999"})
    assert any("Query position 99 is not in this input" in t for t in texts(at.info))
    assert any("Key position 999 is not in this input" in t for t in texts(at.info))
    assert sums(at)


def test_the_routes_button_and_the_compositions_button_open_their_heads(shipped_env):
    at = open_page("shipped:toy-en-de", "decode", "a dog", DECODE_OPEN)
    label = at.selectbox(key="decode_route_head").value
    at.button(key="decode_route_open_head").click().run()
    assert_no_exception(at)
    head = Head.parse(label)
    assert at.session_state["decode_inside_open"] is True and at.session_state["decode_inside_kind"] == head.kind
    assert (at.session_state["decode_layer"], at.session_state["decode_head"]) == (head.layer, head.head)
    at = open_page("shipped:toy-en-de", "attention", "a dog", ATTENTION_OPEN)
    assert not [b for b in at.button if str(b.key).startswith("attention_composition_k_")]  # only the open tab drawn
    at.session_state["attention_composition_type"] = "K (keys read it)"  # the user opens the K tab
    at.run()
    button = at.button(key="attention_composition_k_reads")
    reader = Head.parse(button.label.split()[1])  # "Open dec:L2H1 (reads)"
    button.click().run()
    assert_no_exception(at)
    assert tuple(at.session_state[f"attention_{p}"] for p in ("kind", "layer", "head")) == tuple(reader)


def test_a_link_with_a_head_the_model_has_not_got_says_so_once(shipped_env):
    at = open_link("attention", {"model": "shipped:reverse", "text": "abc", "head": "99", "qkk": "2"})
    said = texts(at.info) + texts(at.warning) + texts(at.markdown) + texts(at.caption)
    assert any("head" in t.lower() and ("ignored" in t or "pick one head" in t) for t in said), said
    assert not sums(at)  # no table of a head that does not exist


def test_the_route_is_rebuilt_at_each_step(shipped_env):
    at = open_page("shipped:reverse", "decode", "abcdef", DECODE_OPEN)
    assert any("predicts step 1 " in t for t in texts(at.caption))
    at.button(key="decode_next").click().run()
    assert_no_exception(at)
    assert any("predicts step 2 " in t for t in texts(at.caption))
    assert any("step 2 →" in t for t in texts(at.markdown))  # source or prefix follows the step too


def test_a_model_in_which_no_head_reads_another_says_so_in_one_line(shipped_env, monkeypatch, tmp_path):
    one_layer = dict(d_model=32, layers=1, heads=2, kv_heads=2, ffn=64, positions=64)
    build_causal("gpt2", tmp_path / "hf" / "one-layer-gpt2", size=one_layer)
    monkeypatch.setenv("ATTENTION_STUDIO_HF_MODELS", str(tmp_path / "hf"))
    at = open_page("hf:one-layer-gpt2", "attention", "hello there", ATTENTION_OPEN)
    said = [t for t in texts(at.warning) + texts(at.info) if "no head reads another" in t]
    assert len(said) == 1, texts(at.warning) + texts(at.info)
    assert sums(at)  # its QK table still opens
