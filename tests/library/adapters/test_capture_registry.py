"""The one capture of a Hugging Face model (`adapter.capturing`, the registered `studio` kernel): a capture records
only the calls of the thread that opened it, another thread's call on the same model runs plain eager attention
meanwhile, and the one recorder registry is empty again after the capture, an error inside it included."""
from __future__ import annotations

import threading

import pytest
import torch

from tests.helpers.hf_causal_models import build
from transformer.adapters import load_hf_model
from transformer.adapters.hf_capture import _CALLS, STUDIO


@pytest.fixture(scope="module")
def adapter(tmp_path_factory):
    return load_hf_model(str(build("gpt2", tmp_path_factory.mktemp("gpt2") / "gpt2")))


def _ids(adapter) -> torch.Tensor:
    return torch.tensor([adapter.tokenize_source("A man in a blue shirt is riding a bike").ids])


def test_a_capture_records_only_its_own_threads_calls(adapter):
    ids = _ids(adapter)
    with torch.no_grad():
        plain = adapter.model(input_ids=ids, output_attentions=True).attentions
    other: list = []
    with torch.no_grad(), adapter.capturing() as found:
        worker = threading.Thread(target=lambda: other.append(
            adapter.model(input_ids=ids, output_attentions=True).attentions))
        worker.start()
        worker.join()
        assert found["self"] == [None, None]  # the other thread's call was not recorded
        mine = adapter.model(input_ids=ids, output_attentions=True).attentions
    assert all(a is not None for a in found["self"])
    for layer in range(len(plain)):  # both calls computed the eager weights, bit for bit
        assert torch.equal(other[0][layer], plain[layer]) and torch.equal(mine[layer], plain[layer])
        assert torch.equal(found["self"][layer].pattern(), plain[layer].float())
    assert adapter.model.config._attn_implementation == STUDIO and _CALLS == {}


def test_the_registry_is_emptied_when_a_capture_fails(adapter):
    with pytest.raises(RuntimeError, match="inside"), adapter.capturing():
        assert threading.get_ident() in _CALLS
        raise RuntimeError("inside")
    assert _CALLS == {}
    with adapter.capturing(), pytest.raises(RuntimeError, match="already running"), adapter.capturing():
        pass  # one capture per thread at a time
    assert _CALLS == {}
