"""AppTest: sampling on the Decode page. The page draws the library's sample for the seed, Prev/Next walk it, each
step shows what it was drawn from, the settings are in the link and a shared link replays the same sample."""
from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.helpers.app_session import APP, assert_no_exception, charts, open_app, texts
from transformer.adapters import adapter_for
from transformer.decode import Sampling, greedy_decode
from transformer.store import load_checkpoint
from ui.views import md_token, visible
from ui.views.kit.widgets import token_chips

TEXT = "abcdefg"
SETTINGS = Sampling(temperature=3.0, top_k=6, top_p=0.95, seed=11)
DRAWN = "was drawn at temperature"


@pytest.fixture(scope="module")
def adapter(tiny_checkpoint_dir):
    ckpt = load_checkpoint(tiny_checkpoint_dir / "reverse", load_optimizer=False)
    return adapter_for(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer, name="reverse")


def _sampling_page():
    at = open_app("decode")
    at.text_input(key="decode_text").input(TEXT).run()
    at.number_input(key="decode_temperature").set_value(SETTINGS.temperature)
    at.number_input(key="decode_sample_top_k").set_value(SETTINGS.top_k)
    at.number_input(key="decode_top_p").set_value(SETTINGS.top_p)
    at.number_input(key="decode_seed").set_value(SETTINGS.seed).run()
    assert_no_exception(at)
    return at


def _heading(at) -> str:
    return at.subheader[0].value


def test_the_page_walks_the_librarys_sample(studio_env, adapter):
    expected = greedy_decode(adapter, TEXT, sampling=SETTINGS)
    assert expected.output_tokens != greedy_decode(adapter, TEXT).output_tokens  # a sample, not the greedy output
    at = _sampling_page()
    assert _heading(at).startswith(f"Step 1 of {len(expected.steps)}:")
    assert f"output ‹{md_token(expected.steps[0].token)}›" in _heading(at)
    drawn = [c for c in charts(at) if DRAWN in c["title"]]
    assert drawn and "seed 11" in drawn[0]["title"]
    caption = next(t for t in texts(at.caption) if "tokens survived" in t)
    sample = expected.samples[0]
    assert f"{sample.kept:,} tokens survived" in caption and f"ranked {sample.rank:,}" in caption
    at.button(key="decode_next").click().run()
    assert f"output ‹{md_token(expected.steps[1].token)}›" in _heading(at)
    assert_no_exception(at)
    at.session_state["decode_lens_open"] = True  # the lens follows the sample, not the greedy decode
    at.run()
    assert_no_exception(at)
    assert not [w for w in texts(at.warning) if "differs" in w]
    table = next(d.value for d in at.dataframe if "entropy (nats)" in d.value.columns)
    rank_column = next(c for c in table.columns if c.startswith("rank of"))
    assert rank_column == f"rank of {visible(expected.steps[1].token)}"
    assert table[rank_column].iloc[0] == expected.samples[1].rank  # the last layer ranks the draw as the model did


def test_one_seed_gives_the_same_tokens_in_the_app_the_cli_and_the_notebook(studio_env, adapter, tiny_checkpoint_dir,
                                                                             capsys):
    from transformer import notebook
    from transformer.cli import main
    from ui.views.kit.widgets import token_chips
    expected = greedy_decode(adapter, TEXT, sampling=SETTINGS)
    at = _sampling_page()
    at.session_state["decode_step"] = len(expected.steps)  # the last step: the whole output so far
    at.run()
    assert_no_exception(at)
    assert _heading(at).startswith(f"Step {len(expected.steps)} of {len(expected.steps)}:")
    shown = token_chips(expected.output_tokens, highlight=len(expected.steps) - 1, caption="output so far")
    assert shown in texts(at.markdown)
    assert main(["decode", str(tiny_checkpoint_dir / "reverse"), TEXT, "--temperature", "3", "--sample-top-k", "6",
                 "--top-p", "0.95", "--seed", "11"]) == 0
    assert capsys.readouterr().out == expected.output_text + "\n"
    assert notebook.decode(adapter, TEXT, sampling=SETTINGS).output_tokens == expected.output_tokens


def test_the_settings_are_in_the_link_and_the_link_replays_the_sample(studio_env, adapter):
    at = _sampling_page()
    params = dict(at.query_params)
    assert (params["temperature"], params["sample_topk"], params["top_p"], params["seed"]) == ("3.0", "6", "0.95", "11")
    assert params.get("topk", "5") == "5"  # how many candidates a step shows: a different setting
    fresh = AppTest.from_file(str(APP), default_timeout=90)
    fresh.switch_page("pages/decode.py")
    fresh.query_params = params
    fresh.run()
    assert_no_exception(fresh)
    assert _heading(fresh) == _heading(at)
    assert fresh.number_input(key="decode_seed").value == 11
    expected = greedy_decode(adapter, TEXT, sampling=SETTINGS)
    assert f"output ‹{md_token(expected.steps[0].token)}›" in _heading(fresh)


def test_the_output_card_says_it_shows_the_sample(studio_env, adapter):
    """With sampling on, the card above the step-through shows the sampled output under a label that says so (the
    greedy label would claim tokens the model did not pick greedily); back at temperature 0 it is greedy again."""
    expected, plain = greedy_decode(adapter, TEXT, sampling=SETTINGS), greedy_decode(adapter, TEXT)
    assert expected.output_tokens != plain.output_tokens
    at = _sampling_page()
    shown = texts(at.markdown)
    assert "**Sampled (T=3, top-k 6, top-p 0.95, seed 11)**" in shown
    assert "**Free-running (greedy)**" not in shown
    assert token_chips(expected.output_tokens, caption="output") in shown
    assert token_chips(plain.output_tokens, caption="output") not in shown
    assert any("turn sampling off for the greedy output" in c for c in texts(at.caption))
    at.number_input(key="decode_temperature").set_value(0.0).run()
    assert_no_exception(at)
    shown = texts(at.markdown)
    assert "**Free-running (greedy)**" in shown and not [m for m in shown if m.startswith("**Sampled")]
    assert token_chips(plain.output_tokens, caption="output") in shown


def test_greedy_leaves_no_sampling_in_the_link(studio_env):
    at = open_app("decode")
    at.text_input(key="decode_text").input(TEXT).run()
    assert not {"temperature", "sample_topk", "top_p", "seed"} & set(at.query_params)
    assert not [c for c in charts(at) if DRAWN in c["title"]]


def test_a_bad_link_value_gets_a_note_not_a_traceback(studio_env):
    at = AppTest.from_file(str(APP), default_timeout=90)
    at.switch_page("pages/decode.py")
    at.query_params = {"text": TEXT, "temperature": "-2", "top_p": "1.5", "sample_topk": "999999"}
    at.run()
    assert_no_exception(at)
    shown = " ".join(texts(at.warning) + texts(at.caption) + texts(at.info) + texts(at.markdown))
    assert "temperature='-2' ignored" in shown and "top_p='1.5' ignored" in shown
    assert "Top-k 999999 is outside" in shown  # past this model's vocabulary: the largest is used
