"""AppTest: a Hugging Face folder in the models directory is in the picker; Decode and Attention work on it, with
spinners that name it and chart/trace downloads that hold its own tokens; a bad name typed in the sidebar gets a
message and the current model stays; the Train page says it is imported."""
from __future__ import annotations

import html
import json

import pytest
import torch

from tests.helpers.app_session import (
    assert_no_exception,
    capture_downloads,
    capture_spinners,
    chart_titled,
    charts,
    only_frame,
    open_app,
    texts,
)
from tests.helpers.fake_hub import use_fake_hub
from tests.helpers.hf_tiny_models import build
from transformer.adapters import HFSeq2Seq
from transformer.analysis import ablated_decode, attribute_step, output_ids, parse_head, sweep_heads
from transformer.decode import KIND_TITLES, greedy_decode
from ui.models import MODEL_KEY
from ui.views import md_token

TEXT = "the red bird eats the fish"


@pytest.fixture(scope="module")
def hf_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf_models")
    build("marian", root / "tiny-marian")
    return root


@pytest.fixture
def hf_env(studio_env, hf_root, monkeypatch):
    monkeypatch.setenv("ATTENTION_STUDIO_HF_MODELS", str(hf_root))
    return hf_root


def _open(page: str, hf_root, text_key: str):
    at = open_app()
    option = "hf:tiny-marian"
    assert "tiny-marian  ·  Hugging Face" in at.selectbox(key=MODEL_KEY).options  # listed from the models directory
    at.selectbox(key=MODEL_KEY).set_value(option).run()
    at.switch_page(f"pages/{page}.py").run()
    at.text_input(key=text_key).input(TEXT).run()
    assert_no_exception(at)
    return at


def test_decode_page_steps_through_an_hf_model(hf_env):
    expected = greedy_decode(HFSeq2Seq.load(str(hf_env / "tiny-marian")), TEXT)
    at = _open("decode", hf_env, "decode_text")
    n = len(expected.steps)
    start = md_token(expected.trace.decoder_input_tokens[0])
    assert at.subheader[0].value.startswith(f"Step 1 of {n}: input ‹{start}› → "
                                            f"output ‹{md_token(expected.steps[0].token)}›")
    assert any("imported, not trained here" in t for t in texts(at.sidebar.markdown))


def test_attention_page_shows_the_cross_attention_of_an_hf_model(hf_env):
    trace = greedy_decode(HFSeq2Seq.load(str(hf_env / "tiny-marian")), TEXT).trace
    at = _open("attention", hf_env, "attention_text")
    at.radio(key="attention_kind").set_value("cross").run()
    chart = chart_titled(at, f"{KIND_TITLES['cross']} · layer 2 · mean of {trace.n_heads} heads")
    frame = only_frame(chart)
    assert set(frame["key_token"]) <= set(trace.source_tokens) and "▁bird" in set(frame["key_token"])
    assert frame.sort_values(["query_index", "key_index"])["weight"].tolist() == pytest.approx(
        trace.matrix("cross", 1).flatten().tolist(), abs=1e-6)
def test_a_bad_name_is_a_message_and_the_current_model_stays(hf_env, tmp_path):
    at = open_app()
    before = at.selectbox(key=MODEL_KEY).value
    (tmp_path / "vit").mkdir()  # an image model: refused by name (encoder-only and causal language models open)
    (tmp_path / "vit" / "config.json").write_text('{"model_type": "vit"}')
    at.text_input(key="sidebar_hf_name").input(str(tmp_path / "vit")).run()
    at.button(key="sidebar_hf_load").click().run()
    assert_no_exception(at)
    assert any("not a text" in t for t in texts(at.sidebar.error))
    assert at.selectbox(key=MODEL_KEY).value == before


def test_train_page_says_an_imported_model_is_not_trained_here(hf_env):
    at = open_app()
    at.selectbox(key=MODEL_KEY).set_value("hf:tiny-marian").run()
    at.switch_page("pages/train.py").run()
    assert_no_exception(at)
    assert any("not trained here" in t for t in texts(at.info))
    assert not [b for b in at.button if b.key == "train_continue"]  # nothing to continue


def test_the_word_merge_switch_shows_words_instead_of_pieces(hf_env):
    at = _open("attention", hf_env, "attention_text")
    at.radio(key="attention_kind").set_value("encoder_self").run()
    at.toggle(key="attention_merge_words").set_value(True).run()
    assert_no_exception(at)
    frame = only_frame(chart_titled(at, f"{KIND_TITLES['encoder_self']} · layer 2 · mean of 2 heads"))
    assert "red" in set(frame["key_token"]) and "r" not in set(frame["key_token"])  # ▁ r e d became one word
    assert frame.groupby("query_index")["weight"].sum().tolist() == pytest.approx([1.0] * 7, abs=1e-5)


def test_unknown_pieces_of_an_hf_model_are_named_without_a_word_list(hf_env):
    at = _open("decode", hf_env, "decode_text")
    at.text_input(key="decode_text").input("the bird € eats").run()
    assert_no_exception(at)
    assert any("read as unknown" in t for t in texts(at.warning))


def test_ablation_sweep_and_attribution_work_on_an_hf_model(hf_env):
    adapter = HFSeq2Seq.load(str(hf_env / "tiny-marian"))
    intact = greedy_decode(adapter, TEXT)
    ablated = ablated_decode(adapter, TEXT, [parse_head("cross:L2H1", adapter), parse_head("enc:L1H2", adapter)])
    at = _open("decode", hf_env, "decode_text")
    at.multiselect(key="decode_ablate").set_value(["cross:L2H1", "enc:L1H2"]).run()
    assert_no_exception(at)
    probs = next(only_frame(c) for c in charts(at) if "probability of the chosen token" in str(c["spec"]))
    by_run = probs.pivot(index="step", columns="run", values="prob")
    assert by_run["ablated"].dropna().tolist() == pytest.approx([s.prob for s in ablated.steps], abs=1e-5)
    assert by_run["intact"].dropna().tolist() == pytest.approx([s.prob for s in intact.steps], abs=1e-5)
    at.session_state["decode_attr_open"] = True  # the user opens the attribution expander
    at.run()
    expected = attribute_step(adapter, TEXT, output_ids(intact), 0)
    strip = only_frame(chart_titled(at, "Source tokens shaded by their Integrated Gradients attribution to step 1"))
    assert strip["weight"].tolist() == pytest.approx(expected.source_share(), abs=1e-5)
    at = _open("attention", hf_env, "attention_text")
    at.button(key="attention_sweep_run").click().run()
    assert_no_exception(at)
    sweep = sweep_heads(adapter, TEXT, output_ids(intact)).frame
    table = next(d.value for d in at.dataframe if "drop" in d.value.columns)
    assert len(table) == len(sweep) == 3 * 2 * 2
    assert table["drop"].tolist() == pytest.approx(sweep["drop"].tolist(), abs=1e-4)


def test_loading_and_decoding_an_hf_model_show_a_spinner_naming_it(hf_env, monkeypatch):
    from ui.models import loading_message
    spinners = capture_spinners(monkeypatch)
    at = _open("decode", hf_env, "decode_text")
    at.text_input(key="decode_text").input("the small cat walks under the tree").run()  # not decoded before
    assert_no_exception(at)
    assert loading_message(str(hf_env / "tiny-marian")) in spinners
    assert "Decoding with tiny-marian…" in spinners


def test_chart_and_trace_downloads_of_an_hf_model_hold_its_own_tokens(hf_env, monkeypatch):
    downloads = capture_downloads(monkeypatch)
    trace = greedy_decode(HFSeq2Seq.load(str(hf_env / "tiny-marian")), TEXT).trace
    at = _open("attention", hf_env, "attention_text")
    at.radio(key="attention_kind").set_value("cross").run()
    assert_no_exception(at)
    saved = json.loads(downloads["attention_trace.json"]())
    assert saved["source_tokens"] == list(trace.source_tokens) and "▁bird" in saved["source_tokens"]
    assert saved["target_tokens"] == list(trace.decoder_input_tokens)
    torch.testing.assert_close(torch.tensor(saved["attention"]["cross"]), trace.cross, atol=1e-6, rtol=0)
    assert downloads["cross_layer2_mean.png"]().startswith(b"\x89PNG")
    assert "▁bird" in html.unescape(downloads["cross_layer2_mean.svg"]())  # the map names its tokens
    svg = downloads["cross_all_heads.svg"]()  # the grid's panels are images: it names its panels
    assert svg.lstrip().startswith("<svg") and "L1 H1" in html.unescape(svg)


def test_a_hub_id_typed_in_the_sidebar_loads_and_decodes(hf_env, tmp_path, monkeypatch):
    fake = use_fake_hub(monkeypatch, hf_env / "tiny-marian", tmp_path / "snapshots")
    name = "studio-tests/tiny-marian-by-name"
    at = open_app()
    at.text_input(key="sidebar_hf_name").input(name).run()
    at.button(key="sidebar_hf_load").click().run()
    assert_no_exception(at)
    assert len(fake.asked) == 1 and f"Loaded {name}." in texts(at.sidebar.success)
    assert at.selectbox(key=MODEL_KEY).value == f"hf:{name}"
    at.switch_page("pages/decode.py").run()
    at.text_input(key="decode_text").input(TEXT).run()
    assert_no_exception(at)
    expected = greedy_decode(HFSeq2Seq.load(str(hf_env / "tiny-marian")), TEXT)
    assert at.subheader[0].value.startswith(f"Step 1 of {len(expected.steps)}: ")


def test_compare_puts_an_hf_model_beside_our_checkpoint(hf_env):
    at = _open("compare", hf_env, "compare_text")
    at.selectbox(key="compare_model").set_value("shipped:reverse").run()
    at.text_input(key="compare_text").input("the bird").run()  # short enough for the character-level model B
    assert_no_exception(at)
    captions = texts(at.markdown)
    assert any(c.startswith("**A** · tiny-marian") and "imported, not trained here" in c for c in captions)
    assert any(c.startswith("**B** · reverse") for c in captions)
    assert len(charts(at)) >= 2  # a map of each model


def test_the_home_page_opens_with_an_hf_model_picked(hf_env):
    at = open_app()
    at.selectbox(key=MODEL_KEY).set_value("hf:tiny-marian").run()
    at.switch_page("pages/home.py").run()
    assert_no_exception(at)
    assert any("imported, not trained here" in t for t in texts(at.sidebar.markdown))


def test_a_link_to_a_folder_of_the_models_directory_names_it_not_its_path_and_restores_it(hf_env):
    from tests.helpers.app_session import open_link
    at = _open("attention", hf_env, "attention_text")
    link = dict(at.query_params)
    assert link["model"] == "hf:tiny-marian" and str(hf_env) not in str(link)
    again = open_link("attention", link)  # a fresh session opens the link
    assert again.session_state[MODEL_KEY] == "hf:tiny-marian"
    assert not [t for t in texts(again.info) if t.startswith("Parts of this link")]
    assert chart_titled(again, "Cross-attention · layer")
