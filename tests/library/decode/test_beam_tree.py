"""The beam tree (`transformer.decode.beam_tree`) for every family: Hugging Face models' final hypotheses and scores
equal `generate(num_beams=W)`'s, ours equal `beam_search`'s (the GNMT penalty); the tree keeps every candidate with
the attention row that chose it."""
from __future__ import annotations

import pytest
import torch

from tests.helpers import ROOT
from tests.helpers.hf_causal_models import CAUSAL
from tests.helpers.hf_causal_models import build as build_causal
from tests.helpers.hf_tiny_models import FAMILIES, MORE_FAMILIES
from tests.helpers.hf_tiny_models import build as build_seq2seq
from tests.helpers.our_models import _ours
from transformer.decode import InputError, beam_search, beam_tree, read_source
from transformer.store import open_model

TEXT = "a man sees the dog"


@pytest.fixture(scope="module", params=[*FAMILIES, *MORE_FAMILIES, *CAUSAL])
def hf(request, tmp_path_factory):
    family = request.param
    build = build_causal if family in CAUSAL else build_seq2seq
    return open_model(str(build(family, tmp_path_factory.mktemp(family) / family)))


@pytest.mark.parametrize("width", [2, 4])
def test_hugging_face_hypotheses_equal_generates(hf, width):
    tree = beam_tree(hf, TEXT, width, max_steps=8)
    ids = torch.tensor([read_source(hf, TEXT).ids])
    with hf.running():
        out = hf.network.generate(ids, attention_mask=torch.ones_like(ids), num_beams=width, do_sample=False,
                                  num_return_sequences=width, max_new_tokens=8, return_dict_in_generate=True,
                                  output_scores=True)
    first = ids.shape[1] if hf.family.prompt_in_decoder else len(hf.start_ids)
    pad = hf.pad_id
    for hypothesis, sequence, score in zip(tree.hypotheses, out.sequences, out.sequences_scores, strict=True):
        generated = sequence[first:].tolist()
        while generated and generated[-1] == pad and len(generated) > len(hypothesis.token_ids):
            generated.pop()
        assert list(hypothesis.token_ids) == generated
        assert hypothesis.score == pytest.approx(float(score), abs=1e-4)
    assert len(tree.hypotheses) == width


@pytest.mark.parametrize("name", ["ours-pre", "ours-post"])
def test_our_hypotheses_equal_beam_search(name):
    adapter = _ours(name)
    tree = beam_tree(adapter, "abcdefg", 3, max_steps=10, length_penalty_alpha=0.6)
    expected = beam_search(adapter.model, adapter.src_tokenizer, adapter.tgt_tokenizer, "abcdefg", 3, 0.6, 10)
    ours = [(h.token_ids[:-1] if h.finished else h.token_ids, round(h.score, 4)) for h in tree.hypotheses]
    assert ours == [(h.token_ids, round(h.score, 4)) for h in expected]


def test_the_tree_keeps_every_candidate_and_its_attention():
    adapter = _ours("ours-pre")
    tree = beam_tree(adapter, "abcdefg", 2, max_steps=6)
    assert tree.nodes[0].status == "root"
    statuses = {n.status for n in tree.nodes}
    assert "pruned" in statuses and "kept" in statuses
    for node in tree.nodes[1:]:
        assert node.parent is not None and tree.nodes[node.parent].step == node.step - 1
        assert node.attention["cross"].shape[:2] == adapter.head_counts()["cross"]
        assert torch.allclose(node.attention["cross"].sum(-1), torch.ones(()), atol=1e-5)
    best = tree.hypotheses[0]
    assert [n.token_id for n in tree.path(best.node)][: len(best.token_ids)] == list(best.token_ids)
    data = tree.to_dict()
    on_best = {n.id for n in tree.path(best.node)}
    assert all(("attention" in d) == (d["id"] in {n.id for h in tree.hypotheses for n in tree.path(h.node)})
               for d in data["nodes"])
    assert on_best


@pytest.mark.parametrize("width", [0, 10**6, "4"])
def test_a_bad_width_gets_its_message(width):
    with pytest.raises(InputError, match="beam width"):
        beam_tree(_ours("ours-pre"), "abc", width)


def test_decode_beam_writes_the_tree_for_a_decoder_only_model(tmp_path, capsys):
    import json

    from transformer.cli import main
    model = str(ROOT / "checkpoints" / "reverse-decoder-only")
    path = tmp_path / "trace.json"
    assert main(["decode", model, "abcdefgh", "--beam", "3", "--trace-json", str(path)]) == 0
    data = json.loads(path.read_text())
    expected = beam_tree(open_model(model), "abcdefgh", 3, length_penalty_alpha=0.6)
    assert capsys.readouterr().out == expected.hypotheses[0].text + "\n"
    beam = data["beam"]
    assert beam["width"] == 3 and beam["rule"] == "gnmt" and len(beam["hypotheses"]) == 3
    assert [h["text"] for h in beam["hypotheses"]] == [h.text for h in expected.hypotheses]
    best = beam["nodes"][beam["hypotheses"][0]["node"]]
    assert "attention" in best and list(best["attention"]) == ["self"]
    assert any(n["status"] == "pruned" and "attention" not in n for n in beam["nodes"])


def test_a_long_row_is_drawn_as_a_window_around_where_the_heads_look():
    from transformer.charts import MAX_NODE_KEYS, beam_key_window, node_attention_chart
    weights = torch.zeros(2, 3, 600)
    weights[..., 500] = 1.0
    first, last = beam_key_window(weights)
    assert last - first == MAX_NODE_KEYS and first <= 500 < last
    assert node_attention_chart(weights, [f"t{i}" for i in range(600)]).to_dict()["width"] <= 1280
    assert beam_key_window(weights[..., :40]) == (0, 40)


def test_a_long_tree_is_drawn_through_a_window_of_steps_around_the_node_picked():
    from transformer.charts import beam_frame, beam_tree_chart, tree_window
    tree = beam_tree(_ours("ours-pre"), "abcdefghijklmnop", 2, max_steps=18)
    n_columns = max(n.step for n in tree.nodes) + 2
    last_node = max(tree.nodes, key=lambda n: n.step)
    first, last = tree_window(tree, last_node.id, 760)
    assert last - first < n_columns and first <= last_node.step + 1 < last
    spec = beam_tree_chart(tree, selected=last_node.id, max_width=760).to_dict()
    assert spec["width"] <= 760 - 120
    drawn = max((d for d in spec["datasets"].values() if d and "status" in d[0]), key=len)  # the nodes
    assert {r["step"] for r in drawn} == set(range(first, last)) & set(beam_frame(tree)["step"])
    assert tree_window(tree, None, 4000) == (0, n_columns)


def test_the_offline_replay_shows_the_beam_trace(tmp_path, capsys):
    import json
    import re

    from transformer.cli import main
    model = str(ROOT / "checkpoints" / "reverse")
    page = tmp_path / "replay.html"
    assert main(["decode", model, "abcdefgh", "--beam", "3", "--html", str(page)]) == 0
    expected = beam_tree(open_model(model), "abcdefgh", 3, length_penalty_alpha=0.6)
    text = page.read_text()
    block = re.search(r'<script type="application/json" id="replay-data">(.*?)</script>', text, re.S)
    data = json.loads(block.group(1).replace("\\u003c", "<").replace("\\u003e", ">").replace("\\u0026", "&"))
    assert [h["text"] for h in data["beam"]["hypotheses"]] == [h.text for h in expected.hypotheses]
    nodes = next(d for d in data["beam"]["spec"]["datasets"].values() if d and "status" in d[0])
    assert len(nodes) >= len(expected.nodes) - 1 and 'id="beam-box"' in text


def _rows_of_the_model(adapter, text: str, tree, node) -> dict[str, torch.Tensor]:
    """What the model's own teacher-forced forward attends to at the query that chose `node`: its parent's prefix."""
    source = read_source(adapter, text)
    prefix = [*adapter.decoder_prefix(source), *[n.token_id for n in tree.path(node.id)[:-1]]]
    with adapter.running():
        _, maps = adapter.forward(torch.tensor([source.ids]), torch.tensor([prefix]))
    return {kind: torch.stack([m[0, :, -1] for m in maps[kind]]) for kind in node.attention}


def _check_every_hypothesis_attention(adapter, text: str, width: int, steps: int) -> None:
    tree = beam_tree(adapter, text, width, max_steps=steps)
    on_final = {n.id for h in tree.hypotheses for n in tree.path(h.node)}
    pruned = [n for n in tree.nodes[1:] if n.id not in on_final][:3]
    for node in [*(tree.nodes[i] for i in sorted(on_final)), *pruned]:
        for kind, expected in _rows_of_the_model(adapter, text, tree, node).items():
            torch.testing.assert_close(node.attention[kind], expected, atol=2e-5, rtol=1e-4)


def test_each_hypothesis_attention_is_the_models_on_its_prefix(hf):
    """The per-hypothesis cache reordered by parent each step: every node's row is what the model attends to when
    fed that hypothesis's prefix whole."""
    _check_every_hypothesis_attention(hf, TEXT, 3, 5)


@pytest.mark.parametrize("name", ["ours-pre", "ours-post"])
def test_each_hypothesis_attention_is_the_models_on_its_prefix_ours(name):
    _check_every_hypothesis_attention(_ours(name), "abcdefg", 3, 6)


def test_each_hypothesis_attention_is_the_models_on_its_prefix_our_decoder_only():
    _check_every_hypothesis_attention(open_model(str(ROOT / "checkpoints" / "reverse-decoder-only")), "abcdefgh", 3, 6)
