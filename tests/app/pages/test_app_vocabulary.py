"""AppTest: an input with unknown tokens is answered with inputs the model knows and the whole vocabulary."""
from __future__ import annotations

from tests.helpers.app_session import assert_no_exception, open_app, texts
from transformer.store import load_checkpoint


def test_unknown_tokens_offer_examples_and_the_vocabulary(studio_env, tiny_checkpoint_dir):
    ckpt = load_checkpoint(tiny_checkpoint_dir / "reverse", load_optimizer=False)
    known = ckpt.src_tokenizer.tokens[ckpt.src_tokenizer.unk_id + 1:]
    at = open_app("decode")
    at.text_input(key="decode_text").input("hello world!").run()
    assert_no_exception(at)
    assert any("Not in the model's vocabulary" in t for t in texts(at.warning))
    hint = [t for t in texts(at.caption) if t.startswith("Inputs this model knows: *")]
    assert len(hint) == 1
    expander = [e for e in at.expander if e.label.startswith(f"The {len(known)} characters this model knows")]
    assert len(expander) == 1
    shown = expander[0].markdown[0].value
    assert all(ch in shown for ch in known) and "!" not in shown
    at.text_input(key="decode_text").input("hello").run()
    assert not [e for e in at.expander if "this model knows" in e.label]  # only when something is unknown
