"""A document's one-row views on the Decode page (a tiny Qwen2, ~1,300 tokens typed into the page's own box: above
STORE_ABOVE, decoded with the store), for the page's own layer, head and row: Inside one head's row equals the eager
head computation, the row grouped into sentences sums each sentence's tokens and the grouping is in the link, the
logit lens at the decode steps is there without a second pass (the decode kept the residual stream at the steps'
positions only) and equals the plain decode's, a second model's row at a step equals its eager weights, the patching
estimate at a step equals the model's whole-sequence estimate, and a window of the document opens as the page's own
input; nothing drawn is wider than 1280 px and nothing raises."""
from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from tests.helpers.app_session import assert_no_exception, charts, open_link, poll, texts
from tests.helpers.dictionaries import random_dictionary
from tests.helpers.document_views import decode_document, open_document, picked
from tests.helpers.hf_causal_models import SIZE, build, lines
from tests.helpers.real_shapes import point_app_at
from transformer.adapters import attention_store
from transformer.analysis import (
    HEADS,
    estimate_patching,
    every_step_lens,
    head_computation,
    head_row,
    lens_grid,
    pool_row,
    prepare_patching,
)
from transformer.decode import STORE_ABOVE, greedy_decode, group_sums, segment_groups
from transformer.dictionaries import Site, place, save_dictionary, text_feature_sources
from transformer.store import open_model
from ui.server.shared_cache import shared_cache
from ui.views import LINK_PARAMS

DOC = "\n".join(lines(32))  # about 1,300 tokens
NAME, OTHER = "qwen2-rows", "qwen2-rows-b"
GROUP = LINK_PARAMS["decode"]["group"]


@pytest.fixture
def app_root(monkeypatch, tmp_path):
    root = point_app_at(monkeypatch, tmp_path / "runs", tmp_path / "hf")
    build("qwen2", root / NAME, size={**SIZE, "positions": 2048})
    build("qwen2", root / OTHER, seed=1, size={**SIZE, "positions": 2048})  # the same tokenizer, other weights
    shared_cache.clear()
    yield root
    shared_cache.clear()


def _kept(name: str):
    """The library's result a background job kept in the shared cache (every session's): its first key names it."""
    return next(v for k, (v, _, _) in shared_cache()._items.items() if k[0] == name)


def _inside_table(at):
    return next(d.value for d in at.dataframe if "weight α" in d.value.columns)


def _decoded():
    return decode_document(open_document("decode", f"hf:{NAME}", DOC))


def test_inside_one_head_grouping_and_lens_at_a_long_input(app_root):
    at = _decoded()
    adapter = open_model(str(app_root / NAME))
    decode = _kept("document-decode")
    fed = [*adapter.decoder_prefix(adapter.tokenize_source(DOC)), *(s.token_id for s in decode.steps[:-1])]
    assert len(fed) > STORE_ABOVE
    layer, head, query = picked(at)
    row = head_row(decode.trace.store, "self", layer, head, query)  # the library's row for the row picked
    insides = adapter.insides(torch.tensor([fed]), torch.tensor([fed]))
    eager = head_computation(adapter, insides, "self", layer, head, query)
    torch.testing.assert_close(row.weights, eager.weights, atol=1e-5, rtol=0)
    torch.testing.assert_close(row.contributions, eager.contributions, atol=1e-5, rtol=1e-4)
    table = _inside_table(at)  # what the page shows: the top keys, their weights and contributions
    assert table["key"].tolist() == [j for j, _, _ in row.top(len(table))]
    assert table["weight α"].tolist() == pytest.approx(eager.weights[table["key"].tolist()].tolist(), abs=1e-5)
    assert any("Top contributions of row" in t for t in texts(at.caption))

    at.selectbox(key=GROUP).set_value("sentence").run()
    assert_no_exception(at)
    groups = segment_groups(decode.trace.decoder_input_tokens, "sentence")
    weights = decode.trace.store.tile("self", layer, head, [query])[0]
    sums = group_sums(weights, groups)
    torch.testing.assert_close(sums, torch.stack([weights[g].sum() for g in groups]), atol=1e-6, rtol=0)
    bars = next(c for c in charts(at) if c["title"].startswith(f"Row {query:,} over {len(groups):,} sentences"))
    drawn = next(iter(bars["frames"].values()))["weight"].tolist()  # the heaviest sentences, as drawn
    assert drawn == pytest.approx(torch.topk(sums, len(drawn)).values.tolist(), abs=1e-6)
    link = {k: (v[-1] if isinstance(v, list) else v) for k, v in at.query_params.items()}
    assert link["group"] == "sentence" and "doc" in link

    # the lens at the steps is there at once: the document's decode kept the residual stream at the steps only
    n_layers, width = len(adapter.residual_layers()["decoder"]), adapter.model.config.hidden_size
    assert decode.residuals.decoder.shape == (len(decode.steps), n_layers + 1, width)  # not one row per token
    grid = lens_grid(every_step_lens(adapter, decode))  # the library's grid of the document's decode
    lens = next(c for c in charts(at) if any("rank" in f.columns and "top" in f.columns
                                             for f in c["frames"].values()))  # drawn at once
    drawn = next(f for f in lens["frames"].values() if "rank" in f.columns)
    assert sorted(drawn["rank"].tolist()) == sorted(r for layer in grid.ranks for r in layer)
    plain = every_step_lens(adapter, greedy_decode(adapter, DOC, max_steps=len(decode.steps), residuals=True,
                                                   keep="maps"))
    assert grid.tokens == tuple(s.token for s in plain)
    assert grid.ranks == tuple(tuple(s.layers[i].rank for s in plain) for i in range(len(plain[0].layers)))
    for mine, theirs in zip(grid.probs, ([s.layers[i].prob for s in plain] for i in range(len(grid.probs))),
                            strict=True):
        assert list(mine) == pytest.approx(theirs, abs=1e-4)
    assert all(c["spec"].get("width", 0) <= 1280 for c in charts(at))

    # a dictionary feature of layer 2's attention output at the row: its sources through the decode's store
    where = place(Site.parse("attn:self:L2"), adapter)
    dictionary = replace(random_dictionary(where.site, where.width, 16, seed=4), model=str(app_root / NAME))
    save_dictionary(dictionary, app_root.parent / "runs" / "dictionaries" / "rows-attn-L2")
    steps = [s.token_id for s in decode.steps[:-1]]  # the decode's own inputs after the document
    expected = text_feature_sources(adapter, dictionary, DOC, 3, query=query, continuation=steps)
    assert expected.stored  # a document past the maps' threshold: the store, no n x n map
    at.session_state["document_feature_sources_open"] = True
    at.run()
    at.number_input(key="document_feature_sources_feature").set_value(3).run()
    at.button(key="document_feature_sources_run").click().run()
    assert poll(at, lambda a: any("read through the attention store" in t for t in texts(a.caption)))
    assert_no_exception(at)
    line = next(t for t in texts(at.caption) if "read through the attention store" in t)
    assert line.startswith(f"{len(expected.tokens):,} tokens") and f"at position {query + 1} " in line
    assert f"pre-activation {expected.sources.pre_activation:.2f} =" in line

    other = open_link("decode", link)  # the link: the document by its hash, grouped by sentences
    assert_no_exception(other)
    assert other.selectbox(key=GROUP).value == "sentence"
    assert any(c["title"].startswith("Row ") and "sentences" in c["title"] for c in charts(other))
    attention = open_link("attention", link)  # the same views under the Attention page's document
    assert_no_exception(attention)
    assert any(c["title"].startswith("Row ") and "sentences" in c["title"] for c in charts(attention))
    assert len(_inside_table(attention))  # Inside one head for the row, under the Attention page's document
    assert all(c["spec"].get("width", 0) <= 1280 for c in charts(attention))


def _eager_row(adapter, decode, layer: int, head: int, row: int) -> torch.Tensor:
    fed = [*adapter.decoder_prefix(adapter.tokenize_source(DOC)), *(s.token_id for s in decode.steps[:-1])]
    full = torch.tensor([fed])
    return attention_store(adapter, full, full).tile("self", layer, head, [row])[0][: row + 1]


def test_a_second_models_row_at_a_step_and_a_window_as_the_pages_input(app_root):
    at = _decoded()
    at.selectbox(key="decode_model_b").set_value(f"hf:{OTHER}").run()
    at.button(key="decode_model_b_job_run").click().run()
    assert poll(at, lambda a: any(c["title"].endswith("row in each model over its keys (max per bin)")
                                  for c in charts(a)), seconds=180)
    at.number_input(key="decode_model_b_step").set_value(2).run()
    assert_no_exception(at)
    layer, head, _ = picked(at)  # B's layer and head: the same (this tiny Qwen2 has as many)
    mine, theirs = _kept("document-decode"), _kept("model-b-decode")
    ra, rb = mine.trace.step_offset + 1, theirs.trace.step_offset + 1  # step 2's rows
    wa = mine.trace.store.tile("self", layer, head, [ra])[0][: ra + 1]
    wb = theirs.trace.store.tile("self", layer, head, [rb])[0][: rb + 1]
    a, b = open_model(str(app_root / NAME)), open_model(str(app_root / OTHER))
    torch.testing.assert_close(wa, _eager_row(a, mine, layer, head, ra), atol=1e-5, rtol=0)
    torch.testing.assert_close(wb, _eager_row(b, theirs, layer, head, rb), atol=1e-5, rtol=0)
    both = next(c for c in charts(at) if c["title"].startswith("Step 2's row in each model"))
    drawn = next(iter(both["frames"].values()))
    for name, row in (("A: ", wa), ("B: ", wb)):  # each line: the library's row, the max of each bin
        shown = drawn[drawn["model"].str.startswith(name)]["weight"].tolist()
        assert shown == pytest.approx(pool_row(row).tolist(), abs=1e-6)
    titles = [c["title"] for c in charts(at)]
    assert any(t.startswith("Step 2's row in each model") for t in titles) and any("B − A" in t for t in titles)
    assert any("activation patching" in t for t in texts(at.caption))

    at.button(key="decode_window_open").click().run()
    assert_no_exception(at)
    text = at.text_area(key=LINK_PARAMS["decode"]["text"]).value  # the page's own input: the window
    assert 0 < len(a.decoder_prefix(a.tokenize_source(text))) <= STORE_ABOVE and text.strip() in DOC
    assert not [b for b in at.button if b.key == "decode_window_open"]  # a short input: the page's own views
    assert "doc" not in at.query_params and at.query_params["text"]  # its link carries the window's text


def test_the_patching_estimate_at_a_step_equals_the_models_whole_estimate(app_root):
    at = _decoded()
    at.text_input(key="decode_patch_find").input(" man ").run()
    at.text_input(key="decode_patch_with").input(" dog ").run()
    at.number_input(key="decode_patch_step").set_value(2).run()
    at.button(key="decode_patch_job_run").click().run()
    assert poll(at, lambda a: any(c["title"].startswith("Step 2 (") for c in charts(a)), seconds=180)
    assert_no_exception(at)
    edited = DOC.replace(" man ", " dog ", 1)
    found = _kept("step-patching")  # the library's estimate the job kept for every session
    adapter = open_model(str(app_root / NAME))
    decode = next(v for k, (v, _, _) in shared_cache()._items.items() if k[0] == "document-decode")
    setup = prepare_patching(adapter, DOC, edited, step=1, output=[s.token_id for s in decode.steps])
    whole = estimate_patching(adapter, setup, (HEADS,)).frame
    merged = whole.merge(found.frame, on=["site", "layer", "head"], suffixes=("_whole", "_step"))
    assert len(merged) == len(whole) == 8
    assert merged["estimate_step"].tolist() == pytest.approx(merged["estimate_whole"].tolist(), abs=1e-4, rel=1e-3)
    grid = next(c for c in charts(at) if c["title"].startswith("Step 2 ("))
    drawn = next(iter(grid["frames"].values()))  # the map the page draws: each head's estimate
    assert sorted(drawn["estimate"].tolist()) == pytest.approx(sorted(merged["estimate_whole"].tolist()), abs=1e-4,
                                                               rel=1e-3)
    assert any("Largest estimates" in t for t in texts(at.caption))
