"""The residual stream taken apart (analysis.residual_parts): for every family the parts (embeddings, positions,
each earlier head, each MLP, biases, every norm on the path frozen at this input) sum to the stream the model
computed, at every layer and position."""
from __future__ import annotations

import pytest
import torch

from tests.helpers.our_models import _inputs
from tests.helpers.path_models import PATH_FAMILIES, path_model
from transformer.adapters import InspectableModel, ResidualPathError
from transformer.analysis import capture_path, reading_parts, residual_parts


@pytest.fixture(scope="module", params=PATH_FAMILIES)
def adapter(request, tmp_path_factory) -> InspectableModel:
    return path_model(request.param, tmp_path_factory.mktemp(request.param))


def _capture(adapter: InspectableModel):
    src, tgt = _inputs(adapter)
    return capture_path(adapter, src, tgt if adapter.family.decodes else None)


def test_the_parts_sum_to_the_captured_residual_at_every_layer(adapter: InspectableModel):
    cap = _capture(adapter)
    for stack, streams in cap.insides.residual.items():
        everywhere = list(range(streams[0].shape[1]))
        for index, stream in enumerate(streams):
            parts = residual_parts(cap, stack, index, everywhere)
            want = stream[0].float()
            error = (parts.total() - want).norm(dim=-1) / want.norm(dim=-1)
            assert error.max() <= 1e-4, (stack, index)


def test_the_parts_are_named_as_the_cli_names_heads(adapter: InspectableModel):
    cap = _capture(adapter)
    stack = "encoder" if "encoder" in cap.insides.residual else "decoder"
    n = len(cap.insides.residual[stack]) - 1
    names = residual_parts(cap, stack, n, [0]).names
    assert names[:2] == ("bias", "embed")
    code = {"encoder_self": "enc", "decoder_self": "dec", "self": "self"}
    kind = next(k for k in adapter.family.kinds if k != "cross" and (stack == "encoder") == (k == "encoder_self"))
    assert f"{code[kind]}:L1H1" in names and f"{code[kind]}:L{n}.mlp" in names
    if adapter.family.cross_kind and stack == "encoder":
        assert "cross:L1H1" in residual_parts(cap, "decoder", 1, [0]).names


def test_what_a_head_reads_sums_to_its_normed_input(adapter: InspectableModel):
    """A pre-norm model's sublayer reads its norm of the stream: the frozen parts sum to the norm's output."""
    cap = _capture(adapter)
    kind = adapter.family.kinds[0]
    parts = reading_parts(cap, kind, 0, [0, 1])
    stack, s = cap.path.sublayer(kind, 0)
    stream = cap.insides.residual[stack][0][0, :2].float()
    norm = cap.path.stacks[stack].layers[0][s].norm
    with torch.no_grad():
        want = norm(stream) if cap.path.pre_norm and norm is not None else stream
    torch.testing.assert_close(parts.total(), want, atol=1e-4, rtol=1e-4)


def test_outside_positions_and_layers_are_one_clear_line(adapter: InspectableModel):
    cap = _capture(adapter)
    stack = next(iter(cap.insides.residual))
    with pytest.raises(ResidualPathError, match="outside"):
        residual_parts(cap, stack, 0, [999])
    with pytest.raises(ResidualPathError, match="no"):
        residual_parts(cap, stack, 99, [0])


def test_a_family_the_parts_do_not_cover_is_refused_in_one_line():
    from types import SimpleNamespace

    from transformer.adapters import hf_path
    with pytest.raises(ResidualPathError, match="mamba.*not taken apart into parts; the studio does this for"):
        hf_path(SimpleNamespace(config=SimpleNamespace(model_type="mamba")), "mamba")
