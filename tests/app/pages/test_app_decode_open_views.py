"""Decode's lens and *Inside one head* are in its link: a reload (F5) or the link opened elsewhere shows them open,
Inside one head on the same attention kind; closed, the link names neither."""
from __future__ import annotations

from tests.helpers.app_session import assert_no_exception, open_link

TEXT = "abcdefg"


def _opened(params: dict[str, str]):
    at = open_link("decode", params)
    assert_no_exception(at)
    return at


def test_the_lens_and_inside_one_head_survive_a_reload(studio_env):
    at = _opened({"text": TEXT})
    assert "lens" not in at.query_params and "inside" not in at.query_params
    at.session_state["decode_lens_open"] = True  # the user opens both expanders, Inside one head on self-attention
    at.session_state["decode_inside_open"] = True
    at.run()
    at.radio(key="decode_inside_kind").set_value("decoder_self").run()
    assert_no_exception(at)
    params = dict(at.query_params)
    assert (params["lens"], params["inside"]) == ("1", "decoder_self")
    reloaded = _opened(params)  # F5: a fresh session on the same address
    assert reloaded.session_state["decode_lens_open"] and reloaded.session_state["decode_inside_open"]
    assert reloaded.radio(key="decode_inside_kind").value == "decoder_self"
    assert dict(reloaded.query_params) == params
    assert not reloaded.warning and not reloaded.exception
    at.session_state["decode_lens_open"] = False  # closed again: out of the link
    at.session_state["decode_inside_open"] = False
    at.run()
    assert "lens" not in at.query_params and "inside" not in at.query_params


def test_a_link_naming_a_kind_the_model_lacks_is_noted(studio_env):
    at = _opened({"text": TEXT, "inside": "self"})  # a decoder-only model's kind, not this encoder-decoder's
    assert any("inside" in info.value for info in at.info)
    assert "decode_inside_open" not in at.session_state or not at.session_state["decode_inside_open"]
