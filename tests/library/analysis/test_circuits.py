"""Circuits (analysis.circuits): the graph forward reproduces every family's logits (post-norm ones and Gemma 3 with
their stream norms frozen at the clean run, OLMo 2 with its query and key norms too); edge patching is exact at both
ends; a node's out-edges patched equal the model's own activation patching of that head; EAP-IG agrees with exact edge
patching on a tiny Gemma 2 whose logits' cap is active (the shipped models: test_circuits_agreement.py)."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.helpers.hf_causal_models import build_new
from tests.helpers.our_models import _inputs
from tests.helpers.path_models import path_model
from transformer.adapters import InspectableModel
from transformer.adapters.patching import HEAD, Patch, patch_points, patching, recording_activations
from transformer.analysis.circuits import (
    LOGITS,
    agreement,
    baseline,
    edge_scores,
    find_circuit,
    graph_forward,
    make_plan,
    pair_from_ids,
    pair_from_text,
    pair_scores,
    patched_metric,
)
from transformer.decode import InputError
from transformer.store import open_model

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[3]
GRAPHED = ("ours-pre", "ours-decoder-only-pre", "ours-encoder-only-pre", "t5", "gpt2", "llama", "qwen3", "modernbert",
           "ours-decoder-only-post", "ours-encoder-only-post", "marian", "mbart", "roberta", "distilbert")


def _plan(adapter: InspectableModel):
    src, tgt = _inputs(adapter)
    tgt = tgt if adapter.family.decodes else None
    position = (src if tgt is None else tgt).shape[1] - 1
    with adapter.running():
        return make_plan(adapter, src, tgt, position)


@pytest.mark.parametrize("family", GRAPHED)
def test_the_graph_forward_gives_the_models_own_logits(family: str, tmp_path: Path):
    adapter = path_model(family, tmp_path)
    plan = _plan(adapter)
    with torch.no_grad():
        got = graph_forward(plan).logits[0]
    want = plan.cap.insides.logits[0, plan.position].float()
    assert (got - want).abs().max() <= 1e-4 * want.abs().max()
    kinds = {i.input for i in plan.graph.inputs}
    assert {"q", "k", "v", "mlp", LOGITS} <= kinds
    if family == "qwen3":  # grouped-query: keys and values go to the shared key/value head
        assert any(i.node.endswith("KV1") and i.input == "k" for i in plan.graph.inputs)
    src, tgt = plan.src, plan.tgt
    pair = pair_from_ids(adapter, (src, src), None if tgt is None else (tgt, tgt), plan.position, contrast=3)
    scores = pair_scores(pair, "eap-ig", 2)  # the gradient reaches every input (RoPE tables, masks, weights)
    assert scores.shape == (plan.graph.n_edges,) and bool(scores.isfinite().all())


@pytest.mark.parametrize("family", ["gemma3_text", "olmo2"])
def test_norms_on_each_sublayers_output_and_over_every_heads_query_are_frozen_at_the_clean_run(family: str,
                                                                                              tmp_path: Path):
    """Gemma 3 and OLMo 2 norm each sublayer's output before it joins the stream, and OLMo 2 every head's query (and
    key) at once: frozen at the clean run, the logits come back, patching every edge gives the graph's corrupted run
    and none the clean one, and EAP-IG scores every edge."""
    adapter = open_model(str(build_new(family, tmp_path / family)))
    src, tgt = _inputs(adapter)
    corrupted = tgt.clone()
    corrupted[0, 2] = tgt[0, 3]
    pair = pair_from_ids(adapter, (src, src), (tgt, corrupted), tgt.shape[1] - 1, contrast=3)
    plan = pair.clean
    assert any(s.out_norm is not None for layer in plan.cap.path.stacks["decoder"].layers for s in layer)
    with torch.no_grad():
        got = graph_forward(plan).logits[0]
    want = plan.cap.insides.logits[0, plan.position].float()
    assert (got - want).abs().max() <= 1e-4 * want.abs().max()
    base, n = baseline([pair]), plan.graph.n_edges
    assert abs(base.gap) > 1e-3
    assert patched_metric([pair], base, torch.zeros(n)) == pytest.approx(base.corrupted_metric, abs=1e-5)
    assert patched_metric([pair], base, torch.ones(n)) == pytest.approx(base.clean_metric, abs=1e-5)
    scores = pair_scores(pair, "eap-ig", 2)
    assert scores.shape == (n,) and bool(scores.isfinite().all())


def test_gemma_2s_soft_capped_logits_are_the_metrics_and_its_edges_agree_with_real_patching(tmp_path: Path):
    """Gemma 2 caps its logits (cap * tanh(logits / cap)): the graph's logits node reads the stream through the cap, the
    metric is read on the capped logits the model returns, both ends patch exactly and EAP-IG ranks the top edges as
    exact edge patching does."""
    adapter = open_model(str(build_new("gemma2", tmp_path / "gemma2", final_logit_softcapping=3.0)))
    src, tgt = _inputs(adapter)
    corrupted = tgt.clone()
    corrupted[0, 2] = tgt[0, 3]
    pair = pair_from_ids(adapter, (src, src), (tgt, corrupted), tgt.shape[1] - 1, contrast=3)
    plan, n = pair.clean, pair.clean.graph.n_edges
    want = plan.cap.insides.logits[0, plan.position].float()  # the model's own logits, capped
    with torch.no_grad():
        got = graph_forward(plan).logits[0]
        last = plan.cap.insides.residual["decoder"][-1][0, plan.position]
        uncapped = adapter.model.get_output_embeddings()(adapter.model.model.norm(last))
    assert float(uncapped.abs().max()) > 6.0 and float(want.abs().max()) < 3.0  # the cap matters here
    assert (got - want).abs().max() <= 1e-4 * want.abs().max()
    base = baseline([pair])
    assert base.clean_metric == pytest.approx(float(want[pair.answer] - want[3]), abs=1e-5)
    assert patched_metric([pair], base, torch.zeros(n)) == pytest.approx(base.corrupted_metric, abs=1e-5)
    assert patched_metric([pair], base, torch.ones(n)) == pytest.approx(base.clean_metric, abs=1e-5)
    found = agreement([pair], edge_scores([pair], "eap-ig"))  # the edges that matter, ranked (docs/circuits.md)
    assert len(found.edges) == 20 and found.spearman >= 0.8


def test_an_encoder_only_pair_of_two_lengths_is_aligned_as_patching_aligns_them():
    """A word deleted before the mask: the corrupted embeddings move onto the clean positions by the edit-distance
    alignment, the contrast is the corrupted input's own answer at its mask, both ends patch exactly; an edit that
    removes the mask is refused in one line."""
    adapter = open_model(str(ROOT / "checkpoints" / "toy-en-de-encoder-only"))
    pair = pair_from_text(adapter, "a man drinks a <mask>", "a man drinks <mask>")
    assert pair.aligned == {"encoder": ((0, 0), (1, 1), (2, 2), (4, 3), (5, 4))}  # "a" deleted; the mask moves
    corrupted_logits = pair.corrupted.cap.insides.logits[0, 3]
    assert pair.contrast == int(corrupted_logits.argmax()) != pair.answer
    base, n = baseline([pair]), pair.clean.graph.n_edges
    assert abs(base.gap) > 1e-3
    assert patched_metric([pair], base, torch.zeros(n)) == pytest.approx(base.corrupted_metric, abs=1e-5)
    assert patched_metric([pair], base, torch.ones(n)) == pytest.approx(base.clean_metric, abs=1e-5)
    with pytest.raises(InputError, match="removes the mask") as refused:
        pair_from_text(adapter, "a man drinks a <mask>", "a man drinks a")
    assert "\n" not in str(refused.value)


@pytest.fixture(scope="module")
def reverse():
    adapter = open_model(str(ROOT / "checkpoints" / "reverse"))
    return adapter, pair_from_text(adapter, "abcdefghij", "abcdefghik")


def test_patching_every_edge_gives_the_corrupted_run_and_none_the_clean(reverse):
    adapter, pair = reverse
    base = baseline([pair])
    n = pair.clean.graph.n_edges
    with adapter.running():
        logits = [adapter.teacher_logits(adapter.network, *_ids(p))[0, -1] for p in (pair.clean, pair.corrupted)]
    model = [float(lg[pair.answer] - lg[pair.contrast]) for lg in logits]
    assert base.clean_metric == pytest.approx(model[0], abs=1e-4)
    assert base.corrupted_metric == pytest.approx(model[1], abs=1e-4)
    assert patched_metric([pair], base, torch.ones(n)) == pytest.approx(base.clean_metric, abs=1e-5)
    assert patched_metric([pair], base, torch.zeros(n)) == pytest.approx(base.corrupted_metric, abs=1e-5)


def _ids(plan):
    return plan.src, plan.tgt


def test_a_heads_out_edges_patched_equal_the_models_own_head_patching(reverse):
    """Every edge out of cross:L1H2 from the corrupted run = the model run on the clean input with that head's output
    replaced by the corrupted run's (the model's own modules, `adapters.patching`)."""
    adapter, pair = reverse
    graph, base = pair.clean.graph, baseline([pair])
    keep = torch.tensor([0.0 if u == "cross:L1H2" else 1.0 for u, _ in graph.edges()])
    ours = patched_metric([pair], base, keep)
    points = patch_points(adapter)
    with adapter.running():
        with recording_activations(points) as corrupted:
            adapter.teacher_logits(adapter.network, *_ids(pair.corrupted))
        z = corrupted.heads["cross"][0][0]  # (T, H * Dh)
        width = z.shape[-1] // 4
        patch = Patch(HEAD, "cross", 0, tuple(range(z.shape[0])), z[:, width:2 * width], head=1)
        with patching(points, [patch], {"cross": 4}):
            logits = adapter.teacher_logits(adapter.network, *_ids(pair.clean))[0, -1]
    assert ours == pytest.approx(float(logits[pair.answer] - logits[pair.contrast]), abs=1e-4)
    assert abs(ours - base.clean_metric) > 0.1  # the head matters here: the check is not vacuous


def test_the_circuit_keeps_what_its_curve_says(reverse):
    _, pair = reverse
    result = find_circuit([pair], method="eap")
    f = result.faithfulness
    circuit = result.circuit()
    assert circuit and len(circuit) == f.n and f.reached and f.points[f.n] >= 0.8
    assert all(f.points[n] < 0.8 for n in f.points if n < f.n)
    out = result.as_json()
    assert len(out["edges"]) == pair.clean.graph.n_edges and set(out["edges"][0]) == {"from", "to", "input", "score"}
    assert {r["input"] for r in out["edges"]} == {"q", "k", "v", "mlp", "logits"}
    assert any(r["from"] == "enc:emb" and r["to"].startswith("cross:") and r["input"] == "k" for r in out["edges"])


def test_inputs_of_two_lengths_are_aligned_as_patching_aligns_them(reverse):
    """A deleted letter: the corrupted embeddings move onto the clean positions by the alignment; its own answer is
    the contrast; patching every edge gives that aligned run, none the clean one."""
    adapter, _ = reverse
    pair = pair_from_text(adapter, "abcdefghij", "abcdefghi")
    assert adapter.id_to_token(pair.answer) == "j" and adapter.id_to_token(pair.contrast) == "i"
    assert pair.aligned is not None and len(pair.aligned["encoder"]) == 10  # 9 letters and </s> have partners
    emb = pair.corrupted_embeddings()["encoder"]
    assert emb.shape == pair.clean.embeddings()["encoder"].shape
    base, n = baseline([pair]), pair.clean.graph.n_edges
    assert patched_metric([pair], base, torch.zeros(n)) == pytest.approx(base.corrupted_metric, abs=1e-5)
    assert patched_metric([pair], base, torch.ones(n)) == pytest.approx(base.clean_metric, abs=1e-5)
    assert base.corrupted_metric < base.clean_metric  # the unaligned "j" keeps its clean embedding: a smaller gap


def test_a_contrast_that_is_the_answer_is_refused(reverse):
    adapter, _ = reverse
    with pytest.raises(InputError, match="contrast"):
        pair_from_text(adapter, "abcdefghij", "abcdefghik", contrast="j")
