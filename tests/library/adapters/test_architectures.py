"""One file per architecture (`transformer/adapters/architectures/`): every supported `model_type` is named only in
its file, each file declares the whole architecture, a model type without a file is refused in one line, and adding
an architecture is one file and one tiny test model (Starcoder2 here: its declaration is the one line a file would
hold, registered for the test)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch

import transformer
from tests.helpers.hf_causal_models import WINDOW, lines, tokenizer
from transformer.adapters import HFModelError, load_hf_model, registered, store_of_insides, supported
from transformer.adapters.architectures import REGISTRY
from transformer.adapters.architectures.llama import llama_like
from transformer.adapters.architectures.spec import (
    GROUPED,
    HALF_TABLES,
    LEARNED,
    RELATIVE_BUCKETS,
    ROTARY,
    ROTATE_HALF,
    SEPARATE,
    SEQUENTIAL,
    SINUSOIDAL,
    TERMS,
)
from transformer.adapters.architectures.spec import (
    WINDOW as WINDOW_TERM,
)
from transformer.adapters.hf_load import LOADABLE
from transformer.analysis import capture_path, residual_parts

ROOT = Path(transformer.__file__).parent
FOLDER = ROOT / "adapters" / "architectures"


def _string_literals(path: Path) -> set[str]:
    return {node.value for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)}


def test_every_supported_model_type_is_named_only_in_its_architecture_file():
    types = set(supported())
    outside = {str(path.relative_to(ROOT)): sorted(_string_literals(path) & types)
               for path in ROOT.rglob("*.py") if FOLDER not in path.parents}
    assert {k: v for k, v in outside.items() if v} == {}
    named = {path.stem: _string_literals(path) & types for path in FOLDER.glob("*.py")}
    assert named == {**{t.replace("-", "_"): {t} for t in types}, "__init__": set(), "spec": set()}  # its own only


@pytest.mark.parametrize("model_type", sorted(REGISTRY))
def test_each_file_declares_the_whole_architecture(model_type):
    arch = REGISTRY[model_type]
    assert arch.model_type == model_type and arch.family in LOADABLE
    assert arch.qkv.layout in (SEPARATE, SEQUENTIAL, GROUPED)
    assert arch.positions in (LEARNED, SINUSOIDAL, RELATIVE_BUCKETS, ROTARY)
    assert (arch.rope is not None) == (arch.positions == ROTARY) and arch.rope in (None, ROTATE_HALF, HALF_TABLES)
    assert arch.terms <= set(TERMS)
    assert {k.stack for k in arch.kinds.values()} == set(arch.stacks) == set(arch.mlp)
    assert (arch.masked_head is not None) == (arch.family == "encoder-only")


def _starcoder2(folder: Path) -> Path:
    """A tiny random Starcoder2 (Llama's layout with LayerNorms, biases and a sliding window) and its tokenizer."""
    from transformers import Starcoder2Config, Starcoder2ForCausalLM
    folder.mkdir(parents=True, exist_ok=True)
    tok = tokenizer("llama", lines())
    torch.manual_seed(0)
    config = Starcoder2Config(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                              num_key_value_heads=2, intermediate_size=64, max_position_embeddings=1100,
                              sliding_window=WINDOW, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    Starcoder2ForCausalLM(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def starcoder2(tmp_path_factory) -> Path:
    return _starcoder2(tmp_path_factory.mktemp("starcoder2") / "starcoder2")


def test_a_model_type_without_a_file_is_refused_in_one_line(starcoder2):
    with pytest.raises(HFModelError, match="no architecture file for 'starcoder2'") as refused:
        load_hf_model(str(starcoder2))
    assert "\n" not in str(refused.value) and "gpt_neox" in str(refused.value)


def test_adding_an_architecture_is_one_file_and_one_tiny_model(starcoder2):
    with registered(llama_like("starcoder2", terms=frozenset({WINDOW_TERM}))):  # the whole of starcoder2.py
        adapter = load_hf_model(str(starcoder2))
        ids = torch.tensor([adapter.tokenize_source(" ".join(lines(4))).ids])
        assert ids.shape[1] > 2 * WINDOW
        insides = adapter.insides(ids, ids)
        store = store_of_insides(adapter, insides)
        for layer in range(adapter.n_layers):  # the captured maps and the store's tiles are the eager weights
            eager = insides.attentions["self"][layer][0].float()
            assert torch.equal(insides.inputs["self"][layer].pattern()[0], eager)
            torch.testing.assert_close(store.tile("self", layer, None), eager.mean(0), atol=1e-5, rtol=0)
            assert store.layer("self", layer).rules.window == WINDOW
        cap = capture_path(adapter, ids, ids)  # the residual path the declaration names sums to the stream
        for index, stream in enumerate(cap.insides.residual["decoder"]):
            parts = residual_parts(cap, "decoder", index, list(range(ids.shape[1])))
            error = (parts.total() - stream[0].float()).norm(dim=-1) / stream[0].float().norm(dim=-1)
            assert error.max() <= 1e-4, index
    with pytest.raises(HFModelError, match="no architecture file"):  # unregistered again when the test is done
        load_hf_model(str(starcoder2))


def test_a_score_term_the_file_does_not_declare_is_refused_in_one_line(starcoder2):
    with registered(llama_like("starcoder2")):  # its sliding window left out of the declaration
        adapter = load_hf_model(str(starcoder2))
        ids = torch.tensor([adapter.tokenize_source("a man rides a bike").ids])
        with pytest.raises(HFModelError, match="adds window, which its architecture file does not declare") as no:
            adapter.insides(ids, ids)
    assert "\n" not in str(no.value)


@pytest.mark.parametrize("model_type", ["xlm-roberta", "camembert"])
def test_robertas_copies_open_through_their_own_files(model_type, tmp_path):
    """XLM-R and CamemBERT are RoBERTa's code under their own model types: a tiny RoBERTa saved as each opens, its
    captured weights are the eager ones, its residual parts sum to the stream and its output head gives its logits."""
    import json

    from tests.helpers.hf_masked_models import build as build_masked
    folder = build_masked("roberta", tmp_path / model_type)
    config = json.loads((folder / "config.json").read_text())
    classes = {"xlm-roberta": "XLMRobertaForMaskedLM", "camembert": "CamembertForMaskedLM"}
    (folder / "config.json").write_text(json.dumps(dict(config, model_type=model_type,
                                                        architectures=[classes[model_type]])))
    adapter = load_hf_model(str(folder))
    assert adapter.describe()["model_type"] == model_type and adapter.max_source_len == 600
    ids = torch.tensor([adapter.tokenize_source("a man rides a bike").ids])
    cap = capture_path(adapter, ids, None)
    for layer, weights in enumerate(cap.insides.attentions["encoder_self"]):
        assert torch.equal(cap.insides.inputs["encoder_self"][layer].pattern(), weights.float())
    for index, stream in enumerate(cap.insides.residual["encoder"]):
        parts = residual_parts(cap, "encoder", index, list(range(ids.shape[1])))
        torch.testing.assert_close(parts.total(), stream[0].float(), atol=1e-4, rtol=1e-4)
    with torch.no_grad():
        torch.testing.assert_close(adapter.output_head(cap.insides.residual["encoder"][-1]), cap.insides.logits,
                                   atol=1e-4, rtol=1e-4)
