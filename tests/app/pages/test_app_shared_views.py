"""AppTest: sessions that open the same view share one decode, and one session's own state (heads it switched off,
a token it forced) never reaches another session's page."""
from __future__ import annotations

import pytest
import streamlit as st

from tests.helpers.app_session import assert_no_exception, charts, only_frame, open_app, texts
from transformer.adapters import adapter_for
from transformer.analysis import ablated_decode, parse_head
from transformer.decode import greedy_decode
from transformer.store import load_checkpoint
from ui.server.shared_cache import shared_cache
from ui.views.kit import inference

TEXT = "sharedview"
HEADS_A = ["cross:L1H1", "cross:L1H2"]
HEADS_B = ["cross:L2H1", "cross:L2H2", "enc:L1H1"]


@pytest.fixture(scope="module")
def adapter(tiny_checkpoint_dir):
    ckpt = load_checkpoint(tiny_checkpoint_dir / "reverse", load_optimizer=False)
    return adapter_for(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer)


def _session(heads: list[str]):
    at = open_app("decode")
    at.text_input(key="decode_text").input(TEXT).run()
    at.multiselect(key="decode_ablate").set_value(heads).run()
    assert_no_exception(at)
    return at


def _probabilities(at) -> dict[str, list[float]]:
    found = [c for c in charts(at) if "probability of the chosen token" in str(c["spec"])]
    assert found, "no intact-vs-ablated probability chart"
    by_run = only_frame(found[0]).pivot(index="step", columns="run", values="prob")
    return {run: by_run[run].dropna().tolist() for run in by_run.columns}


def test_two_sessions_share_the_decode_and_each_sees_its_own_ablation_and_forced_token(studio_env, adapter,
                                                                                       monkeypatch):
    st.cache_data.clear()
    shared_cache.clear()  # the decodes the sessions share
    decodes: list[str] = []
    queued = inference.queued_greedy

    def counted(model, text, **options):
        decodes.append(text)
        return queued(model, text, **options)

    monkeypatch.setattr(inference, "queued_greedy", counted)
    a, b = _session(HEADS_A), _session(HEADS_B)
    intact = greedy_decode(adapter, TEXT)
    for at, heads in ((a, HEADS_A), (b, HEADS_B)):
        ablated = ablated_decode(adapter, TEXT, [parse_head(label, adapter) for label in heads])
        probs = _probabilities(at)
        assert probs["intact"] == pytest.approx([s.prob for s in intact.steps], abs=1e-6)
        assert probs["ablated"] == pytest.approx([s.prob for s in ablated.steps], abs=1e-6)
    assert decodes.count(TEXT) == 1  # the intact decode both pages show: computed once, for the first session

    b.button(key="decode_next").click().run()  # B forces another token at step 2
    choice = b.selectbox(key="decode_force_token")
    choice.set_value(next(tok for tok, _ in intact.steps[1].top_k if tok != intact.steps[1].token)).run()
    b.button(key="decode_force").click().run()
    assert_no_exception(b)
    assert "**With the forced token**" in " ".join(texts(b.markdown))

    a.run()  # A's next run: its own ablation, no forced token
    assert_no_exception(a)
    assert "**With the forced token**" not in " ".join(texts(a.markdown))
    assert a.multiselect(key="decode_ablate").value == HEADS_A
    ablated_a = ablated_decode(adapter, TEXT, [parse_head(label, adapter) for label in HEADS_A])
    assert _probabilities(a)["ablated"] == pytest.approx([s.prob for s in ablated_a.steps], abs=1e-6)
    assert decodes.count(TEXT) == 1
