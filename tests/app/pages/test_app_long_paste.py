"""A paste longer than a text box's limit keeps the box's first 10,000 characters and says so, on every box whose text
a model reads (Home, Decode's input and reference, Attention, Compare, Compare's edit, Learn, the masked pages);
before, the box ignored the paste and said nothing."""
from __future__ import annotations

import pytest

from tests.helpers.app_session import assert_no_exception, open_app
from tests.helpers.hf_masked_models import build
from transformer.decode import MAX_INPUT_CHARS, fit_input
from ui.models import MODEL_KEY

PASTE = "abc " * 5_000  # 20,000 characters
NOTE = f"The pasted text has 20,000 characters; the first {MAX_INPUT_CHARS:,} are kept"


def _pasted(at, key: str) -> None:
    """Paste PASTE into the box `key` as a browser would send it, and check what the box and the page say."""
    at.text_input(key=key).input(PASTE).run()
    assert_no_exception(at)
    assert at.text_input(key=key).value == PASTE[:MAX_INPUT_CHARS]
    assert any(NOTE in info.value for info in at.info), [info.value for info in at.info]


def test_the_limit_is_one_function_of_the_text_and_the_limit():
    assert fit_input("abc", 3) == ("abc", None)
    kept, note = fit_input("abcdef", 4)
    assert kept == "abcd" and note == "The pasted text has 6 characters; the first 4 are kept (the limit is 4)."


@pytest.mark.parametrize(("page", "key"), [(None, "home_text"), ("decode", "decode_text"),
                                           ("decode", "decode_reference"), ("attention", "attention_text"),
                                           ("compare", "compare_text"), ("learn", "learn_text")])
def test_an_overlong_paste_keeps_the_first_characters_and_says_so(studio_env, page, key):
    at = open_app(page)
    _pasted(at, key)
    at.text_input(key=key).input("abc").run()  # a short text again: the note goes
    assert not any(NOTE in info.value for info in at.info)


def test_compares_edited_input_keeps_the_first_characters_and_says_so(studio_env):
    at = open_app("compare")
    at.radio(key="compare_mode").set_value("edit").run()
    _pasted(at, "compare_edit")


def test_the_masked_pages_boxes_keep_the_first_characters_and_say_so(studio_env, tmp_path, monkeypatch):
    build("bert", tmp_path / "tiny-bert")
    monkeypatch.setenv("ATTENTION_STUDIO_HF_MODELS", str(tmp_path))
    at = open_app()
    at.selectbox(key=MODEL_KEY).set_value("hf:tiny-bert").run()
    at.switch_page("pages/decode.py").run()
    _pasted(at, "decode_pair")
