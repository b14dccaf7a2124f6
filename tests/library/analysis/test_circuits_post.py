"""Circuits of post-norm models (ours with `norm: post`, BART, BERT): with every norm after a sum frozen at the clean
run the graph forward gives the model's own logits; patching every edge gives the corrupted input run through the model
itself with those norms frozen at the clean run's scales (hooks on the model's norms, not the graph), none the clean
run; EAP-IG scores every edge and, with the corruption shrunk, equals single-edge patching (BART, BERT)."""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest
import torch
from torch import Tensor, nn

from tests.helpers.our_models import _inputs
from tests.helpers.path_models import path_model
from transformer.adapters import InspectableModel
from transformer.analysis.circuits import (
    Pair,
    agreement,
    baseline,
    edge_scores,
    graph_forward,
    pair_from_ids,
    pair_scores,
    patched_metric,
    shrunk,
)

pytestmark = pytest.mark.slow
CONTRAST = 3  # a fixed other token: the random models' answers need not change with the edit


def _pair(adapter: InspectableModel) -> Pair:
    """One token of the source changed; the target: the last decoder position, or a mask put in the source."""
    src, tgt = _inputs(adapter)
    corrupted = src.clone()
    corrupted[0, 1] = src[0, 2]
    if adapter.family.decodes:
        return pair_from_ids(adapter, (src, corrupted), (tgt, tgt), tgt.shape[1] - 1, contrast=CONTRAST)
    src[0, 3] = corrupted[0, 3] = adapter.mask_id  # type: ignore[attr-defined]
    return pair_from_ids(adapter, (src, corrupted), None, 3, contrast=CONTRAST)


def _stream_norms(pair: Pair) -> list[nn.LayerNorm]:
    path = pair.clean.cap.path
    found = [s.norm for stack in path.stacks.values() for layer in stack.layers for s in layer]
    assert found and all(isinstance(n, nn.LayerNorm) for n in found)
    return [n for n in found if isinstance(n, nn.LayerNorm)]


@contextmanager
def _norms_frozen(norms: list[nn.LayerNorm], clean: dict[int, Tensor]) -> Iterator[None]:
    """While inside, each norm records its input into `clean` (empty) or, once recorded, divides by the clean σ."""
    def hook(module: nn.Module, args: tuple, out: Tensor) -> Tensor | None:
        assert isinstance(module, nn.LayerNorm)
        x = args[0]
        if id(module) not in clean:
            clean[id(module)] = x.detach()
            return None
        sigma = (clean[id(module)].var(-1, unbiased=False, keepdim=True) + module.eps).sqrt()
        return (x - x.mean(-1, keepdim=True)) / sigma * module.weight + module.bias

    handles = [n.register_forward_hook(hook) for n in norms]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def _logits(adapter: InspectableModel, pair: Pair, plan) -> Tensor:
    with adapter.running():
        if plan.tgt is None:
            return adapter.teacher_logits(adapter.network, plan.src)[0, pair.position].float()
        return adapter.teacher_logits(adapter.network, plan.src, plan.tgt)[0, pair.position].float()


@pytest.mark.parametrize("family, one_by_one", [("ours-post", False), ("bart", True), ("bert", True)])
def test_a_post_norm_models_edges_patch_exactly_with_its_norms_frozen_at_the_clean_run(family: str, one_by_one: bool,
                                                                                       tmp_path: Path):
    adapter = path_model(family, tmp_path)
    pair = _pair(adapter)
    diff = lambda lg: float(lg[pair.answer] - lg[pair.contrast])  # noqa: E731
    with torch.no_grad():
        got = graph_forward(pair.clean).logits[0]
    want = _logits(adapter, pair, pair.clean)
    assert (got - want).abs().max() <= 1e-4 * want.abs().max()  # the recompute is the model's own run

    clean: dict[int, Tensor] = {}
    with _norms_frozen(_stream_norms(pair), clean):
        _logits(adapter, pair, pair.clean)  # records each norm's clean input
        frozen = _logits(adapter, pair, pair.corrupted)  # the corrupted input under the clean run's norm scales
    own = _logits(adapter, pair, pair.corrupted)
    assert (frozen - own).abs().max() > 1e-3  # the corrupted run's own norm scales differ: the hooks did something

    base, n = baseline([pair]), pair.clean.graph.n_edges
    assert base.clean_metric == pytest.approx(diff(want), abs=1e-4)
    assert base.corrupted_metric == pytest.approx(diff(frozen), abs=1e-4)
    assert patched_metric([pair], base, torch.zeros(n)) == pytest.approx(base.corrupted_metric, abs=1e-5)
    assert patched_metric([pair], base, torch.ones(n)) == pytest.approx(base.clean_metric, abs=1e-5)

    scores = pair_scores(pair, "eap-ig", 3)
    assert scores.shape == (n,) and bool(scores.isfinite().all()) and float(scores.abs().max()) > 0
    if one_by_one:  # EAP-IG and single-edge patching read the frozen norms alike: they agree as the corruption shrinks
        near = [shrunk(pair, 0.01)]
        found = agreement(near, edge_scores(near, "eap-ig"))
        assert len(found.edges) == 20 and found.spearman >= 0.95 and found.worst <= 0.03
