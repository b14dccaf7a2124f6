"""AppTest: the Features page (docs/dictionaries.md) on the induction model, whose shipped dictionary of resid:L2 it
lists: a link names the dictionary and the feature; its features read over the task's streams fill the finder, and
the feature's page shows its strongest activations with the token highlighted (a previous-token feature's examples
all follow the same token), the tokens it promotes and the heads that read it; an untrained dictionary says so; the
training form trains one in the background and saves it where the page finds it."""
from __future__ import annotations

import re
import shutil
from dataclasses import replace

import pytest

from tests.helpers import ROOT
from tests.helpers.app_session import assert_no_exception, charts, open_link, poll, texts
from tests.helpers.dictionaries import random_dictionary
from tests.helpers.hf_causal_models import build as build_causal
from tests.helpers.real_shapes import PAGE_PX
from transformer.dictionaries import (
    Report,
    Site,
    load_dictionary,
    place,
    save_dictionary,
    text_feature_sources,
    text_sources,
)
from transformer.store import open_model
from ui.views import LINK_PARAMS
from ui.views.features import dictionary_features

KEYS = LINK_PARAMS["dictionary"]
SHIPPED = "induction-resid-L2"
HIGHLIGHT = re.compile(r":orange-background\[\*\*(.+?)\*\*\]")

pytestmark = pytest.mark.slow  # the app on a shipped model, its activations over 300 streams


@pytest.fixture
def shipped_env(monkeypatch, tmp_path):
    folder = tmp_path / "checkpoints"
    (folder / "dictionaries").mkdir(parents=True)
    (folder / "induction").symlink_to(ROOT / "checkpoints" / "induction")
    shutil.copytree(ROOT / "checkpoints" / "dictionaries" / SHIPPED, folder / "dictionaries" / SHIPPED)
    monkeypatch.setenv("ATTENTION_STUDIO_CHECKPOINTS", str(folder))
    monkeypatch.setenv("ATTENTION_STUDIO_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("ATTENTION_STUDIO_HF_MODELS", str(tmp_path / "hf"))
    monkeypatch.delenv("ATTENTION_STUDIO_DEFAULT", raising=False)
    return folder


def _previous_token_feature() -> int:
    """The shipped dictionary's key feature at the known induction cell (X = `3`): it fires right after `3`."""
    return 385


def test_a_link_opens_a_features_page_with_its_examples_promoted_tokens_and_readers(shipped_env):
    feature = _previous_token_feature()
    at = open_link("dictionary", {"model": "shipped:induction", "dict": SHIPPED, "feature": str(feature)})
    assert_no_exception(at)
    assert at.session_state[KEYS["dict"]] == SHIPPED and at.session_state[KEYS["feature"]] == feature
    at.button(key="dictionary_features_run").click().run()
    assert poll(at, lambda a: any(f"Feature #{feature}" in t for t in texts(a.subheader)))
    assert_no_exception(at)
    lines = [t for t in texts(at.markdown) if HIGHLIGHT.search(t)]
    highlighted = [m for t in lines for m in HIGHLIGHT.findall(t)]
    assert len(highlighted) >= 10
    # its top decile's highlighted tokens all follow `3` (the token just left of the highlight)
    assert lines[0].startswith("*decile 10 of 10*")
    top = [re.search(r"(\S+) :orange-background", line) for line in lines[0].split("  \n")[1:]]
    assert top and all(m is not None and m[1] == "3" for m in top), lines[0]
    frames = [f.value for f in at.dataframe]
    assert any("top_tokens" in f.columns for f in frames)  # the finder
    assert any("logit rise" in f.columns for f in frames)  # the tokens it promotes
    readers = next(f for f in frames if "head" in f.columns and "key" in f.columns)
    assert readers["head"].iloc[0] == "self:L2H2"  # the induction head's keys read the previous token most
    assert any("by activation decile" in c["title"] for c in charts(at))
    assert all(c["spec"].get("width", 0) <= PAGE_PX for c in charts(at) if isinstance(c["spec"].get("width"), int))
    assert "feature=385" in "&".join(f"{k}={v}" for k, v in at.query_params.items()) or \
        at.query_params.get("feature") in ("385", ["385"])


def test_the_form_trains_a_dictionary_the_page_lists_it_with_its_sources_and_an_untrained_one_says_so(shipped_env,
                                                                                                   monkeypatch):
    shipped = load_dictionary(shipped_env / "dictionaries" / SHIPPED)
    untrained = random_dictionary(Site.parse("resid:L2"), shipped.d_in, 64, "topk")
    save_dictionary(replace(untrained, model=shipped.model), shipped_env / "dictionaries" / "untrained")
    at = open_link("dictionary", {"model": "shipped:induction", "dict": "untrained"})
    assert_no_exception(at)
    assert any("it is untrained" in t for t in texts(at.warning))
    # the model's stream read by its last layer's heads preselected (the entry beside the model's card opens this
    # form on this page: tests/e2e/test_e2e_features.py)
    assert at.text_input(key="dictionary_train_site").value == "resid:L2"
    # the form: a dictionary on layer 1's attention output (hook_z), trained in the background and saved
    at.text_input(key="dictionary_train_site").input("attn:self:L1")
    at.number_input(key="dictionary_train_features").set_value(32)
    at.number_input(key="dictionary_train_steps").set_value(50)
    at.number_input(key="dictionary_train_texts").set_value(60).run()  # the button then asks for these
    at.button(key="dictionary_train_run").click().run()
    assert poll(at, lambda a: any("Saved to" in t for t in texts(a.success)), seconds=120)
    assert_no_exception(at)
    name = "induction-attn-self-L1-32"
    saved = load_dictionary(shipped_env.parent / "runs" / "dictionaries" / name)
    assert saved.trained and saved.n_features == 32 and saved.site.label == "attn:self:L1"
    at.run()
    monkeypatch.setattr(dictionary_features, "PAGE_TEXTS", 60)  # its features read over 60 streams, not 300
    at.selectbox(key=KEYS["dict"]).set_value(name).run()
    # an attention-output feature's page: which sources wrote its strongest activation, the shares summing with
    # the constant no source writes to its pre-activation
    at.button(key="dictionary_features_run").click().run()
    assert poll(at, lambda a: any("Which sources wrote it" in t for t in texts(a.markdown)))
    assert_no_exception(at)
    shares = next(f["share"] for c in charts(at) for f in c["frames"].values() if "share" in f.columns)
    line = next(t for t in texts(at.caption) if t.startswith("By head:"))
    constant = float(re.search(r"writes ([+-][\d.]+)", line)[1])
    pre = float(re.search(r"pre-activation ([\d.-]+)", line)[1])
    assert abs(float(shares.sum()) + constant - pre) <= 0.02


def test_the_encoder_decoders_dictionary_opens_on_its_encoder_output(monkeypatch, tmp_path):
    # the other shipped dictionary: the toy English->German model's encoder output (what its cross-attention keys
    # read), read over its sentences with their references; an encoder's site promotes no tokens, and its readers
    # are the cross-attention heads' keys
    monkeypatch.setenv("ATTENTION_STUDIO_CHECKPOINTS", str(ROOT / "checkpoints"))
    monkeypatch.setenv("ATTENTION_STUDIO_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("ATTENTION_STUDIO_HF_MODELS", str(tmp_path / "hf"))
    monkeypatch.delenv("ATTENTION_STUDIO_DEFAULT", raising=False)
    at = open_link("dictionary", {"model": "shipped:toy-en-de", "dict": "toy-en-de-enc-out"})
    at.button(key="dictionary_features_run").click().run()
    assert poll(at, lambda a: any(t.startswith("Feature #") for t in texts(a.subheader)))
    assert_no_exception(at)
    assert any("no tokens promoted" in t for t in texts(at.caption))
    readers = next(f.value for f in at.dataframe if "head" in f.value.columns and "key" in f.value.columns)
    assert readers["head"].iloc[0].startswith("cross:")


def test_beside_the_card_on_another_page_a_dictionary_job_shows_its_progress_cancel_and_saved_folder(shipped_env):
    # the session's dictionary training, seen from the Train page: the card shows how far it got and Cancel (which
    # stops the job), then the folder it saved
    from ui.views.kit.background import JOB_KEY, BackgroundJob

    at = open_link("train", {"model": "shipped:induction"})
    job = BackgroundJob("Training 32 features at resid:L2", ("dictionary-train", "induction"), fraction=0.4)
    at.session_state[JOB_KEY] = job
    at.run()
    assert_no_exception(at)
    assert [p.proto.text for p in at.sidebar.get("progress")] == ["Training 32 features at resid:L2: 40%"]
    at.sidebar.button(key="sidebar_dictionary_cancel").click().run()
    assert job.cancel.is_set()
    folder = shipped_env.parent / "runs" / "dictionaries" / "induction-resid-L2-32"
    job.result = (folder, Report(0.9, 4.0, 1, 1000, steps=20, cancelled=True))
    job.done.set()
    at.run()
    assert any("Dictionary cancelled, kept: `induction-resid-L2-32`" in t for t in texts(at.sidebar.caption))
    assert not at.sidebar.get("progress") and at.sidebar.button(key="sidebar_dictionary_train")


def test_a_hugging_face_models_attention_feature_takes_a_documents_sources_through_the_store(shipped_env, monkeypatch):
    # a dictionary the CLI trained on a Hugging Face folder names it by its path; the app lists it under the
    # folder's name, reads its features over the model's one validation sentence, and takes the feature's sources
    # over a text of the user's, a document past the maps' threshold (lowered here to 8 tokens), through the store
    folder = build_causal("qwen2", shipped_env.parent / "hf" / "tiny-qwen2")
    adapter = open_model(str(folder))
    where = place(Site.parse("attn:self:L2"), adapter)
    dictionary = replace(random_dictionary(where.site, where.width, 16, seed=2), model=str(folder))
    save_dictionary(dictionary, shipped_env / "dictionaries" / "qwen2-attn-L2")
    at = open_link("dictionary", {"model": "hf:tiny-qwen2", "dict": "qwen2-attn-L2"})
    assert_no_exception(at)
    at.button(key="dictionary_features_run").click().run()
    assert poll(at, lambda a: any("Which sources wrote it" in t for t in texts(a.markdown)))
    feature = at.session_state[KEYS["feature"]]
    text = "the cat sat on the mat and the dog sat on the log"
    expected = text_feature_sources(adapter, dictionary, text, feature, keep="store").sources
    monkeypatch.setattr(text_sources, "STORE_ABOVE", 8)
    at.text_area(key="dictionary_features_sources_text").input(text).run()
    at.button(key="dictionary_features_text_run").click().run()
    assert poll(at, lambda a: any("read through the attention store" in t for t in texts(a.caption)))
    assert_no_exception(at)
    line = next(t for t in texts(at.caption) if "read through the attention store" in t)
    assert f"at position {expected.query + 1} " in line and f"activation {expected.activation:.2f}," in line
    number = r"([+-]?\d+\.\d+)"
    pre, shares, constant = (float(x) for x in re.search(
        rf"pre-activation {number} = the sources' shares {number} \+ a constant {number}", line).groups())
    assert abs(shares + constant - pre) <= 0.02
