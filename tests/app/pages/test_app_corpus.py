"""AppTest: the Attention page's "Head statistics over a corpus" reads the model's validation sentences in the
background and shows every head's statistics, sortable, equal to the library's over the same sentences, and the
clusters by Jensen-Shannon divergence; an encoder-only model gets the same section."""
from __future__ import annotations

import pytest

from tests.helpers.app_session import assert_no_exception, chart_titled, charts, only_frame, open_app, texts
from tests.helpers.hf_masked_models import build as build_masked
from transformer.analysis import corpus_statistics
from transformer.model import Head
from transformer.store import load_checkpoint, open_model
from ui.models import MODEL_KEY


def _compute(at):
    at.button(key="attention_corpus_run").click().run()
    assert_no_exception(at)
    return next(d.value for d in at.dataframe if "max_weight" in d.value.columns)


def test_statistics_of_the_validation_sentences_are_the_librarys(studio_env, tiny_checkpoint_dir):
    at = open_app()
    at.switch_page("pages/attention.py").run()
    assert_no_exception(at)
    table = _compute(at)
    ckpt = load_checkpoint(str(tiny_checkpoint_dir / "reverse"), load_optimizer=False)
    examples = [(r["source"], r["reference"]) for r in ckpt.metrics["examples"]]
    adapter = open_model(str(tiny_checkpoint_dir / "reverse"))
    want_stats = corpus_statistics(adapter, [s for s, _ in examples][:200])
    want = want_stats.ranked("max_weight")
    assert list(table["head"]) == [Head(k, la, h).label
                                   for k, la, h in zip(want["kind"], want["layer"], want["head"], strict=True)]
    assert table["entropy"].tolist() == pytest.approx(want["entropy"].tolist(), abs=1e-6)
    assert table["max_weight"].is_monotonic_decreasing
    at.selectbox(key="attention_corpus_sort").set_value("entropy").run()
    table = next(d.value for d in at.dataframe if "max_weight" in d.value.columns)
    assert table["entropy"].is_monotonic_decreasing
    chart_titled(at, "Jensen-Shannon divergence between heads")
    at.selectbox(key="attention_corpus_example_head").set_value("cross:L1H1").run()
    most, least = want_stats.examples("cross", 0, 0)
    sources = [s for s, _ in examples][:200]
    links = "\n".join(str(m.value) for m in at.markdown if "/attention?" in str(m.value))
    for i in [*most, *least]:
        assert f"[{sources[i]}](/attention?" in links
    assert "kind=cross&layer=1&head=1" in links


def test_an_encoder_only_model_gets_the_same_section(studio_env, tmp_path, monkeypatch):
    build_masked("bert", tmp_path / "models" / "tiny-bert")
    monkeypatch.setenv("ATTENTION_STUDIO_HF_MODELS", str(tmp_path / "models"))
    at = open_app()
    at.selectbox(key=MODEL_KEY).set_value("hf:tiny-bert").run()
    at.switch_page("pages/attention.py").run()
    assert_no_exception(at)
    table = _compute(at)
    adapter = open_model(str(tmp_path / "models" / "tiny-bert"))
    want = corpus_statistics(adapter, ["The house is small."]).ranked("max_weight")  # its example sentence
    assert set(table["kind"]) == {"Encoder self-attention"} and len(table) == len(want)
    assert table["special"].tolist() == pytest.approx(want["special"].tolist(), abs=1e-6)
    assert any("1 sentences" in t or "1 sentence " in t for t in texts(at.caption))


def test_the_head_overview_can_be_coloured_by_a_corpus_statistic(studio_env, tiny_checkpoint_dir):
    at = open_app()
    at.switch_page("pages/attention.py").run()
    assert not any("over the corpus" in o for o in at.selectbox(key="attention_overview_stat").options)
    _compute(at)
    at.run()  # the overview above the section now offers the corpus's statistics
    assert_no_exception(at)
    assert "first over the corpus" in at.selectbox(key="attention_overview_stat").options
    at.selectbox(key="attention_overview_stat").set_value("corpus:first").run()
    assert_no_exception(at)
    chart = next(c for c in charts(at) if c["title"].endswith("heads · first over the corpus"))
    kind = at.session_state["attention_kind"]
    adapter = open_model(str(tiny_checkpoint_dir / "reverse"))
    ckpt = load_checkpoint(str(tiny_checkpoint_dir / "reverse"), load_optimizer=False)
    want = corpus_statistics(adapter, [r["source"] for r in ckpt.metrics["examples"]][:200]).frame
    want = want[want["kind"] == kind].set_index(["layer", "head"])["first"]
    cells = only_frame(chart).set_index(["layer", "head"])["value"]
    assert len(cells) == len(want) and want.notna().all()
    for (layer, head), value in cells.items():
        assert value == pytest.approx(float(want.loc[(layer, head)]), abs=1e-6)


@pytest.mark.slow  # trains a tiny run
def test_a_run_with_snapshots_draws_each_heads_curve_over_training(studio_env):
    from tests.helpers.app_session import chart_titled as titled
    from transformer.cli import main

    run = studio_env / "snap-run"
    assert main(["train", "--task", "reverse", "--d-model", "16", "--heads", "2", "--d-ff", "32", "--batch-size",
                 "16", "--n-train", "200", "--n-valid", "10", "--eval-examples", "10", "--steps", "6",
                 "--keep-snapshots", "3", "--probe-frames", "0", "--out", str(run)]) == 0
    at = open_app()
    at.selectbox(key=MODEL_KEY).set_value("run:snap-run").run()
    at.switch_page("pages/attention.py").run()
    _compute(at)
    assert_no_exception(at)
    at.button(key="attention_corpus_snapshots_run").click().run()
    assert_no_exception(at)
    frame = only_frame(titled(at, "Head specialisation over training · Encoder self-attention · entropy"))
    assert sorted(set(frame["step"])) == [3, 6]
    sources = [e["source"] for e in load_checkpoint(str(run), load_optimizer=False).metrics["examples"]]
    want = corpus_statistics(open_model(str(run)), sources).frame
    want = want[want["kind"] == "encoder_self"]
    last = frame[frame["step"] == 6].set_index("head")["value"]
    assert len(last) == len(want)
    for layer, head, value in zip(want["layer"], want["head"], want["entropy"], strict=True):
        assert last[f"L{layer + 1}H{head + 1}"] == pytest.approx(float(value), abs=1e-6)
