"""AppTest: every choice a page shows is in its link. Each test sets a choice, reads the link the page wrote, opens it
in a fresh session and sees the same choice drawn the same way: Learn's stage, the gold outline on Decode's and
Attention's maps, the head overview's colour, merged words, Decode's attribution method, an encoder-only model's
heads switched off and prediction explained (Decode) and its Compare (the way and input B)."""
from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.helpers.app_session import assert_no_exception, charts, open_app, open_link, texts
from tests.helpers.hf_masked_models import build
from ui.models import MODEL_KEY
from ui.views import LINK_PARAMS, TOUR

TEXT = "stressed"


def _drawn(at: AppTest) -> list[tuple[str, int]]:
    """Each chart's title and how many layers it draws (an outline is a layer)."""
    return [(c["title"], len(c["spec"].get("layer", []))) for c in charts(at)]


def _reopened(at: AppTest, page: str) -> AppTest:
    """The link `at` ended on, opened in a fresh session: it writes the same link back."""
    params = dict(at.query_params)
    fresh = open_link(page, params)
    assert dict(fresh.query_params) == params
    return fresh


def test_learn_keeps_its_stage(studio_env):
    key = LINK_PARAMS["learn"]["stage"]
    at = open_app("learn")
    at.selectbox(key=key).set_value(5).run()
    assert_no_exception(at)
    assert dict(at.query_params)["stage"] == "6"  # numbered as the titles: "6 · Several heads"
    fresh = _reopened(at, "learn")
    assert fresh.session_state[key] == 5
    assert fresh.subheader[0].value == at.subheader[0].value == TOUR[5].title
    assert _drawn(fresh) == _drawn(at)


def test_a_stage_past_the_tour_opens_the_first_with_a_note(studio_env):
    at = open_link("learn", {"stage": "99"})
    assert at.session_state[LINK_PARAMS["learn"]["stage"]] == 0 and at.subheader[0].value == TOUR[0].title
    assert any(f"stage 99 ignored (the tour has {len(TOUR)})" in t for t in texts(at.info))


@pytest.mark.parametrize("page", ["decode", "attention"])
def test_the_gold_outline_switched_off_stays_off(studio_env, page):
    keys = LINK_PARAMS[page]
    at = open_app(page)
    at.text_input(key=keys["text"]).input(TEXT).run()
    if page == "attention":
        at.radio(key=keys["kind"]).set_value("cross").run()
    outlined = _drawn(at)
    at.toggle(key=keys["gold"]).set_value(False).run()
    assert_no_exception(at)
    assert "gold" not in dict(open_app(page).query_params)  # on (the default): not in a link
    assert dict(at.query_params)["gold"] == "0" and _drawn(at) != outlined
    fresh = _reopened(at, page)
    assert fresh.session_state[keys["gold"]] is False and _drawn(fresh) == _drawn(at)


@pytest.fixture(scope="module")
def hf_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf_models")
    build("bert", root / "links-bert")  # names of their own: the app caches decodes by a model's name
    build("bert", root / "links-bert-b", seed=1)
    return root


def test_an_encoder_only_compare_keeps_its_way_and_input_b(studio_env, hf_root, monkeypatch):
    monkeypatch.setenv("ATTENTION_STUDIO_HF_MODELS", str(hf_root))
    keys = LINK_PARAMS["compare"]
    at = open_app()
    at.selectbox(key=MODEL_KEY).set_value("hf:links-bert").run()
    at.switch_page("pages/compare.py").run()
    at.text_input(key=keys["text"]).input("the dog [MASK] in the park").run()
    at.text_input(key=keys["text_b"]).input("the man [MASK] in the park").run()
    assert_no_exception(at)
    params = dict(at.query_params)
    assert params["text_b"] == "the man [MASK] in the park" and "way" not in params  # two inputs: the default
    fresh = _reopened(at, "compare")
    assert fresh.session_state[keys["text_b"]] == "the man [MASK] in the park" and _drawn(fresh) == _drawn(at)
    at.radio(key=keys["way"]).set_value("models").run()
    at.selectbox(key=keys["compare"]).set_value("hf:links-bert-b").run()
    assert_no_exception(at)
    assert dict(at.query_params)["way"] == "models"
    fresh = _reopened(at, "compare")
    assert fresh.session_state[keys["way"]] == "models" and fresh.session_state[keys["compare"]] == "hf:links-bert-b"
    assert _drawn(fresh) == _drawn(at)



def test_the_head_overview_keeps_its_colour(studio_env):
    key = LINK_PARAMS["attention"]["colour"]
    at = open_app("attention")
    first = at.session_state[key]
    at.selectbox(key=key).set_value("entropy" if first != "entropy" else "max_weight").run()
    assert_no_exception(at)
    colour = at.session_state[key]
    assert colour != first and dict(at.query_params)["colour"] == colour
    fresh = _reopened(at, "attention")
    assert fresh.session_state[key] == colour and _drawn(fresh) == _drawn(at)


def test_decode_keeps_its_attribution_method_and_opens_it(studio_env):
    key = LINK_PARAMS["decode"]["attr"]
    at = open_app("decode")
    at.text_input(key=LINK_PARAMS["decode"]["text"]).input(TEXT).run()
    at.session_state["decode_attr_open"] = True  # the user opens the attribution expander
    at.run()
    assert "attr" not in dict(at.query_params)  # the default method: not in a link (it would open the expander)
    at.radio(key=key).set_value("gradient_x_input").run()
    assert_no_exception(at)
    assert dict(at.query_params)["attr"] == "gradient_x_input"
    fresh = _reopened(at, "decode")
    assert fresh.session_state[key] == "gradient_x_input"
    assert any(c["title"].startswith("Source tokens shaded by their Gradient × input") for c in charts(fresh))
    assert _drawn(fresh) == _drawn(at)


def test_an_encoder_only_decode_keeps_its_heads_off_and_the_prediction_explained(studio_env, hf_root, monkeypatch):
    monkeypatch.setenv("ATTENTION_STUDIO_HF_MODELS", str(hf_root))
    keys = LINK_PARAMS["decode"]
    at = open_app()
    at.selectbox(key=MODEL_KEY).set_value("hf:links-bert").run()
    at.switch_page("pages/decode.py").run()
    at.text_input(key=keys["text"]).input("a man in a [MASK] shirt sees the [MASK]").run()
    at.multiselect(key=keys["ablate"]).set_value(["enc:L1H1", "enc:L2H2"]).run()
    at.selectbox(key=keys["pred"]).set_value(1).run()
    assert_no_exception(at)
    params = dict(at.query_params)
    assert params["ablate"] == "enc.L1H1,enc.L2H2" and params["pred"] == "2"
    fresh = _reopened(at, "decode")
    assert fresh.session_state[keys["ablate"]] == ["enc:L1H1", "enc:L2H2"] and fresh.session_state[keys["pred"]] == 1
    assert [t for t in texts(fresh.markdown) if "with the heads off" in t] == \
        [t for t in texts(at.markdown) if "with the heads off" in t] != []
    assert _drawn(fresh) == _drawn(at)


def test_attention_keeps_its_words_merged(studio_env, hf_root, monkeypatch):
    monkeypatch.setenv("ATTENTION_STUDIO_HF_MODELS", str(hf_root))
    keys = LINK_PARAMS["attention"]
    at = open_app()
    at.selectbox(key=MODEL_KEY).set_value("hf:links-bert").run()
    at.switch_page("pages/attention.py").run()
    at.text_input(key=keys["text"]).input("the unbelievable dog runs").run()
    assert "words" not in dict(at.query_params)  # pieces as the tokenizer cut them: the default
    pieces = _drawn(at), [c["title"] for c in charts(at)]
    at.toggle(key=keys["words"]).set_value(True).run()
    assert_no_exception(at)
    assert dict(at.query_params)["words"] == "1"
    fresh = _reopened(at, "attention")
    assert fresh.session_state[keys["words"]] is True and _drawn(fresh) == _drawn(at)
    at.toggle(key=keys["words"]).set_value(False).run()
    assert "words" not in dict(at.query_params) and (_drawn(at), [c["title"] for c in charts(at)]) == pieces
