"""AppTest: the logit lens, sampling and the beam tree on Hugging Face models in the picker (an encoder-decoder and
a decoder-only model): each view opens without an exception and shows the library's figures for that model."""
from __future__ import annotations

import pytest

from tests.helpers.app_session import assert_no_exception, chart_titled, open_app, text_box
from tests.helpers.hf_causal_models import build as build_causal
from tests.helpers.hf_tiny_models import build as build_seq2seq
from transformer.analysis import every_step_lens
from transformer.decode import Sampling, beam_tree, greedy_decode
from transformer.store import open_model
from ui.models import MODEL_KEY
from ui.views import md_token

TEXT = "the red bird eats the fish"
MODELS = {"tiny-marian": build_seq2seq, "tiny-gpt2": build_causal}


@pytest.fixture(scope="module")
def hf_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf_models")
    for name, build in MODELS.items():
        build(name.split("-")[1], root / name)
    return root


@pytest.fixture
def hf_env(studio_env, hf_root, monkeypatch):
    monkeypatch.setenv("ATTENTION_STUDIO_HF_MODELS", str(hf_root))
    return hf_root


@pytest.mark.parametrize("name", list(MODELS))
def test_lens_sampling_and_beam_on_a_hugging_face_model(hf_env, name):
    adapter = open_model(str(hf_env / name))
    at = open_app()
    at.selectbox(key=MODEL_KEY).set_value(f"hf:{name}").run()
    at.switch_page("pages/decode.py").run()
    text_box(at, "decode_text").input(TEXT).run()
    at.session_state["decode_lens_open"] = True
    at.session_state["decode_beam_open"] = True
    at.run()
    assert_no_exception(at)
    lens = every_step_lens(adapter, greedy_decode(adapter, TEXT, residuals=True))[0]
    table = next(d.value for d in at.dataframe if "entropy (nats)" in d.value.columns)
    rank_column = next(c for c in table.columns if c.startswith("rank of"))
    assert list(table[rank_column]) == [p.rank for p in reversed(lens.layers)]
    tree = beam_tree(adapter, TEXT, 4)
    hypotheses = next(d.value for d in at.dataframe if "score" in d.value.columns)
    assert list(hypotheses["output"]) == [h.text for h in tree.hypotheses]
    assert chart_titled(at, "The beam tree")
    settings = Sampling(temperature=1.5, top_k=0, top_p=0.9, seed=3)
    at.number_input(key="decode_temperature").set_value(settings.temperature)
    at.number_input(key="decode_top_p").set_value(settings.top_p)
    at.number_input(key="decode_seed").set_value(settings.seed).run()
    assert_no_exception(at)
    sampled = greedy_decode(adapter, TEXT, sampling=settings)
    assert f"output ‹{md_token(sampled.steps[0].token)}›" in at.subheader[0].value
