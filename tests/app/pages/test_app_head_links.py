"""AppTest: a head's page links its composition partners (each score the model's own, each link that head's page),
a model where no head reads another says so; the Attention and Decode pages' head pickers and the head overview link
the picked head's page; the finder takes the one-pass ablation estimate over the corpus's first sentences and, for a
run with weight snapshots, a slider over training; the head page opens in presenter mode on the shipped models."""
from __future__ import annotations

from urllib.parse import parse_qs

import pytest

from tests.app.pages.test_app_head_page import SHIPPED, assert_within_page, open_with_statistics
from tests.helpers import ROOT
from tests.helpers.app_session import assert_no_exception, open_link, texts
from transformer.analysis import composition_scores, corpus_estimate
from transformer.data import TaskSpec, make_task
from transformer.model import Head, default_configs
from transformer.store import open_model, save_checkpoint
from transformer.train import Trainer, checkpoint_from_trainer
from ui.views import LINK_PARAMS

KEYS = LINK_PARAMS["head"]
TEXT = "a b c d"


def head_links(at) -> list[tuple[str, dict[str, str]]]:
    """Every link to a head's page: its label and query parameters."""
    return [(link.proto.label, {k: v[0] for k, v in parse_qs(link.proto.query_string).items()})
            for link in at.get("page_link") if link.proto.page == "head"]


def test_the_head_page_links_its_composition_partners_with_the_models_scores(shipped_env):
    head = Head("cross", 0, 0)  # reads the encoder (K, V) and the decoder's self-attention (Q); the last layer
    at = open_link("head", {"model": "shipped:reverse", "kind": head.kind, "layer": "1", "head": "1"})
    assert_no_exception(at)
    assert "Composition partners" in texts(at.subheader)
    frame = composition_scores(open_model(str(ROOT / "checkpoints" / "reverse")))
    links = [(label, params) for label, params in head_links(at) if "·" in label]
    assert len(links) == 5 and "No later head reads this head's output." in texts(at.caption)
    for label, params in links:
        partner, score = label.split(" · ")
        mode, value = score.split()
        other = Head.parse(partner)
        pair = (frame["to"] == head.label) & (frame["from"] == partner) | \
               (frame["from"] == head.label) & (frame["to"] == partner)
        assert abs(float(frame.loc[pair, mode.lower()].iloc[0]) - float(value)) < 0.006, label
        assert params == {"model": "shipped:reverse", "kind": other.kind, "layer": str(other.layer + 1),
                          "head": str(other.head + 1)}
    opened = open_link("head", links[0][1])
    assert_no_exception(opened)
    other = Head.parse(links[0][0].split(" · ")[0])
    assert (opened.session_state[KEYS["kind"]], opened.session_state[KEYS["layer"]],
            opened.session_state[KEYS["head"]]) == (other.kind, other.layer, other.head)


def test_a_model_where_no_head_reads_another_says_so(monkeypatch, tmp_path):
    task = make_task(TaskSpec(name="reverse", n_train=40, n_valid=5, min_len=4, max_len=8))
    cfg, train = default_configs("reverse", task.src_tokenizer.vocab_size, task.tgt_tokenizer.vocab_size,
                                 model_overrides=dict(d_model=16, d_ff=32, n_heads=2, n_decoder_layers=1, max_len=32,
                                                      architecture="decoder-only"),
                                 train_overrides=dict(batch_size=8, max_steps=1, max_seconds=None, eval_every=1000))
    trainer = Trainer(task, cfg, train)
    trainer.run(max_steps=1)
    save_checkpoint(checkpoint_from_trainer(trainer), tmp_path / "ckpt" / "one-layer")
    monkeypatch.setenv("ATTENTION_STUDIO_CHECKPOINTS", str(tmp_path / "ckpt"))
    monkeypatch.setenv("ATTENTION_STUDIO_RUNS", str(tmp_path / "runs"))
    monkeypatch.delenv("ATTENTION_STUDIO_DEFAULT", raising=False)
    at = open_link("head", {"model": "shipped:one-layer"})
    assert_no_exception(at)
    assert any("No composition partners" in t and "no head reads another head's output" in t for t in texts(at.info))


def test_the_attention_pickers_and_overview_link_the_picked_heads_page(studio_env):
    at = open_link("attention", {"text": TEXT, "kind": "cross", "layer": "2", "head": "2"})
    assert_no_exception(at)
    links = dict(head_links(at))
    assert links["Open this head's page"] == {"model": "shipped:reverse", "kind": "cross", "layer": "2", "head": "2"}
    assert links["Open cross:L2H2's page (the head picked)"]["kind"] == "cross"  # the head overview's
    opened = open_link("head", links["Open this head's page"])
    assert (opened.session_state[KEYS["kind"]], opened.session_state[KEYS["layer"]],
            opened.session_state[KEYS["head"]]) == ("cross", 1, 1)
    mean = open_link("attention", {"text": TEXT, "kind": "cross", "layer": "2", "head": "mean"})
    assert [link.proto.disabled for link in mean.get("page_link") if link.proto.label == "Open this head's page"] \
        == [True]


def test_the_decode_head_picker_links_the_picked_heads_page(studio_env):
    at = open_link("decode", {"text": TEXT, "layer": "1", "head": "2"})
    assert_no_exception(at)
    links = dict(head_links(at))
    assert links["Open this head's page"] == {"model": "shipped:reverse", "kind": "cross", "layer": "1", "head": "2"}


@pytest.mark.parametrize("name", SHIPPED)
def test_the_head_page_opens_in_presenter_mode_on_the_shipped_models(shipped_env, name):
    at = open_link("head", {"model": f"shipped:{name}", "present": "1"})
    assert_no_exception(at)
    assert [h for h in at.get("html") if "presenter mode" in str(h.proto.body)]
    assert "Composition partners" in texts(at.subheader)  # from the weights, before any statistics
    at = open_with_statistics({"model": f"shipped:{name}", "present": "1"}, 30)  # an upload where no validation set
    assert [h for h in at.get("html") if "presenter mode" in str(h.proto.body)]
    assert "Composition partners" in texts(at.subheader) and "Strongest rows, by decile of the peak weight" in \
        texts(at.subheader)
    assert_within_page(at)


def test_the_finder_takes_the_one_pass_estimate_over_the_first_sentences_once_computed(studio_env,
                                                                                        tiny_checkpoint_dir):
    at = open_link("attention", {"text": TEXT})
    at.button(key="attention_corpus_run").click().run()
    assert_no_exception(at)
    assert any("ablation estimate is n/a until estimated over the first" in t for t in texts(at.caption))
    at.number_input(key="attention_finder_estimate_n").set_value(3).run()
    at.button(key="attention_finder_estimate_run").click().run()
    assert_no_exception(at)
    sources, refs = at.session_state["corpus_latest_sentences"][1:]
    assert any("estimate: the one-pass ablation estimate, mean over the corpus's first 3 sentences" in t
               for t in texts(at.caption))
    table = next(d.value for d in at.dataframe if "estimate" in d.value.columns and "label" in d.value.columns)
    model = corpus_estimate(open_model(str(tiny_checkpoint_dir / "reverse")), sources, refs, n=3)
    assert model.sentences == 3
    shown = table.set_index("label")["estimate"]
    assert len(shown) == len(model.frame) and shown.notna().all()
    for label, value in zip(model.frame["label"], model.frame["estimate"], strict=True):
        assert abs(shown[label] - value) < 1e-4, label
    at.session_state["attention_finder_x"] = "estimate"
    at.run()
    assert_no_exception(at)


def test_the_finders_estimate_on_our_decoder_only_model(shipped_env):
    at = open_link("attention", {"model": "shipped:reverse-decoder-only", "text": "abcdef"})
    at.number_input(key="attention_corpus_cap").set_value(6).run()
    at.button(key="attention_corpus_run").click().run()
    at.number_input(key="attention_finder_estimate_n").set_value(2).run()
    at.button(key="attention_finder_estimate_run").click().run()
    assert_no_exception(at)
    sources, refs = at.session_state["corpus_latest_sentences"][1:]
    table = next(d.value for d in at.dataframe if "estimate" in d.value.columns and "label" in d.value.columns)
    model = corpus_estimate(open_model(str(ROOT / "checkpoints" / "reverse-decoder-only")), sources, refs, n=2)
    shown = table.set_index("label")["estimate"]
    assert len(shown) == len(model.frame) and any("first 2 sentences" in t for t in texts(at.caption))
    for label, value in zip(model.frame["label"], model.frame["estimate"], strict=True):
        assert abs(shown[label] - value) < 1e-4, label


@pytest.mark.slow  # trains a tiny run
def test_a_slider_over_training_moves_the_finders_points_to_each_snapshots_statistics(studio_env):
    from tests.helpers.app_session import open_app
    from transformer.analysis import corpus_statistics
    from transformer.cli import main
    from transformer.store import list_snapshots, load_checkpoint
    from ui.models import MODEL_KEY

    run = studio_env / "snap-run"
    assert main(["train", "--task", "reverse", "--d-model", "16", "--heads", "2", "--d-ff", "32", "--batch-size",
                 "16", "--n-train", "200", "--n-valid", "10", "--eval-examples", "10", "--steps", "6",
                 "--keep-snapshots", "3", "--probe-frames", "0", "--out", str(run)]) == 0
    at = open_app()
    at.selectbox(key=MODEL_KEY).set_value("run:snap-run").run()
    at.switch_page("pages/attention.py").run()
    at.button(key="attention_corpus_run").click().run()
    at.button(key="attention_corpus_snapshots_run").click().run()
    assert_no_exception(at)
    sources = [e["source"] for e in load_checkpoint(str(run), load_optimizer=False).metrics["examples"]]
    snapshots = list_snapshots(run)
    assert [step for step, _ in snapshots] == [3, 6]
    for step, folder in snapshots:
        at.select_slider(key="attention_finder_step").set_value(step).run()
        assert_no_exception(at)
        assert any(f"Statistics at step {step:,}" in t for t in texts(at.caption))
        table = next(d.value for d in at.dataframe if "label" in d.value.columns and "entropy" in d.value.columns)
        shown = table.set_index("label")["entropy"]
        want = corpus_statistics(open_model(str(folder)), sources).frame
        assert len(shown) == len(want)
        for kind, layer, head, value in zip(want["kind"], want["layer"], want["head"], want["entropy"], strict=True):
            assert shown[Head(kind, layer, head).label] == pytest.approx(float(value), abs=1e-6)
