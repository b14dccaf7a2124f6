"""Encoder-only masked language models (BERT, RoBERTa, DistilBERT, ModernBERT): the studio's predictions at each
mask are `AutoModelForMaskedLM`'s own, a sentence pair's segments are the tokenizer's, and `fill` says what is wrong
with bad input in one line."""
from __future__ import annotations

import json

import pytest
import torch

from tests.helpers.hf_masked_models import MASKED, build
from transformer.adapters import HFModelError, InspectableModel
from transformer.cli import main
from transformer.decode import InputError, fill_masks, greedy_decode
from transformer.model import ENCODER_ONLY
from transformer.store import open_model

TEXT = "a man in a blue shirt sees the dog"


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("masked")
    return {family: build(family, root / family) for family in MASKED}


@pytest.fixture(scope="module", params=MASKED)
def family(request):
    return request.param


@pytest.fixture(scope="module")
def adapter(folders, family) -> InspectableModel:
    return open_model(str(folders[family]))


def _reference(folder):
    from transformers import AutoModelForMaskedLM, AutoTokenizer
    return AutoTokenizer.from_pretrained(folder), AutoModelForMaskedLM.from_pretrained(folder).eval()


def test_the_model_opens_as_an_encoder_only_family(adapter):
    assert adapter.family is ENCODER_ONLY and not adapter.family.decodes
    assert set(adapter.head_counts()) == {"encoder_self"} == set(adapter.family.kinds)
    assert adapter.family.causal("encoder_self") is False


def test_predictions_at_the_masks_are_the_masked_lms_own(adapter, folders, family):
    text = f"a man in a {adapter.mask_token} shirt sees the {adapter.mask_token}"
    result = fill_masks(adapter, text, top_k=7)
    tok, ref = _reference(folders[family])
    enc = tok(text, return_tensors="pt")
    assert list(result.source.ids) == enc.input_ids[0].tolist()
    with torch.no_grad():
        probs = ref(**enc).logits[0].softmax(-1)
    positions = (enc.input_ids[0] == tok.mask_token_id).nonzero().flatten().tolist()
    assert [p.position for p in result.predictions] == positions and len(positions) == 2
    for p in result.predictions:
        want, ids = probs[p.position].topk(7)
        assert [i for _, i, _ in p.top_k] == ids.tolist()
        assert [v for _, _, v in p.top_k] == pytest.approx(want.tolist(), abs=1e-5)
        assert [t for t, _, _ in p.top_k] == tok.convert_ids_to_tokens(ids.tolist())


def test_masking_a_token_by_position_equals_typing_the_mask(adapter):
    plain = adapter.tokenize_source(TEXT)
    position = 3
    by_click = fill_masks(adapter, TEXT, mask_positions=[position], top_k=5)
    typed_ids = list(plain.ids)
    typed_ids[position] = adapter.mask_id
    assert list(by_click.source.ids) == typed_ids
    (prediction,) = by_click.predictions
    assert prediction.original == plain.tokens[position] and prediction.position == position
    with adapter.running():
        logits = adapter.forward(torch.tensor([typed_ids])).logits[0, position]
    assert prediction.prob == pytest.approx(float(logits.softmax(-1).max()), abs=1e-6)


def test_a_pair_has_the_tokenizers_segments_and_its_predictions(adapter, folders, family):
    result = fill_masks(adapter, f"a man {adapter.mask_token} the dog", "the dog runs", top_k=3)
    tok, ref = _reference(folders[family])
    enc = tok(f"a man {adapter.mask_token} the dog", "the dog runs", return_tensors="pt")
    assert list(result.source.ids) == enc.input_ids[0].tolist()
    if "token_type_ids" in enc:  # BERT: the tokenizer's own segments
        assert list(result.segments) == enc.token_type_ids[0].tolist()
    first_sep = list(result.source.ids).index(tok.sep_token_id)
    assert set(result.segments[: first_sep + 1]) == {0} and set(result.segments[first_sep + 1:]) == {1}
    with torch.no_grad():
        probs = ref(**enc).logits[0].softmax(-1)
    (p,) = result.predictions
    assert [v for _, _, v in p.top_k] == pytest.approx(probs[p.position].topk(3).values.tolist(), abs=1e-5)


def test_the_trace_holds_every_layer_and_head_of_the_one_kind(adapter):
    result = fill_masks(adapter, f"the {adapter.mask_token} runs")
    trace = result.trace
    n_layers, n_heads = adapter.head_counts()["encoder_self"]
    assert trace.kinds == ("encoder_self",) and trace.family_name == "encoder-only"
    assert tuple(trace.weights("encoder_self").shape) == (n_layers, n_heads, len(result.source.ids),
                                                          len(result.source.ids))
    assert trace.labels("encoder_self") == (result.source.tokens, result.source.tokens)
    torch.testing.assert_close(trace.weights("encoder_self").sum(-1), torch.ones(n_layers, n_heads,
                                                                                 len(result.source.ids)))
    assert not trace.masked("encoder_self").any()  # bidirectional: nothing is masked


def test_bad_input_is_one_clear_message(adapter):
    with pytest.raises(InputError, match="empty"):
        fill_masks(adapter, "   ")
    with pytest.raises(InputError, match="special token"):
        fill_masks(adapter, TEXT, mask_positions=[0])
    with pytest.raises(InputError, match="does not exist"):
        fill_masks(adapter, TEXT, mask_positions=[500])
    with pytest.raises(InputError, match="reads at most"):
        fill_masks(adapter, " ".join(["dog"] * 700), "the cat")
    assert fill_masks(adapter, TEXT).predictions == ()  # no mask: nothing predicted, the maps are there
    with pytest.raises(HFModelError, match="does not decode"):
        greedy_decode(adapter, TEXT)


def test_fill_cli_prints_the_top_k_as_json(folders, family, capsys):
    adapter = open_model(str(folders[family]))
    assert main(["fill", str(folders[family]), f"the dog {adapter.mask_token} the cat", "--top-k", "4", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    (p,) = data["predictions"]
    assert len(p["top_k"]) == 4 and p["masked"] is None
    expected = fill_masks(adapter, f"the dog {adapter.mask_token} the cat", top_k=4).predictions[0]
    assert [t["id"] for t in p["top_k"]] == [i for _, i, _ in expected.top_k]
    assert [t["prob"] for t in p["top_k"]] == pytest.approx([v for _, _, v in expected.top_k], abs=1e-6)


def test_fill_cli_writes_the_maps_and_refuses_text_without_a_mask(folders, tmp_path, capsys):
    folder = str(folders["bert"])
    out = tmp_path / "fill.json"
    assert main(["fill", folder, "the dog runs", "--pair", "a man sees", "--mask-token", "2",
                 "--trace-json", str(out)]) == 0
    data = json.loads(out.read_text())
    n = len(data["source_tokens"])
    assert data["segments"].count(1) > 0 and data["predictions"][0]["masked"] == "dog"
    assert len(data["attention"]["encoder_self"]) == 3 and len(data["attention"]["encoder_self"][0][0]) == n
    capsys.readouterr()
    assert main(["fill", folder, "the dog runs"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "[MASK]" in err and err.count("\n") == 1


def test_the_notebook_decodes_an_encoder_only_model_at_its_masks(folders):
    from transformer import notebook
    result = notebook.decode(str(folders["bert"]), "the dog [MASK] the cat", top_k=3)
    expected = fill_masks(open_model(str(folders["bert"])), "the dog [MASK] the cat", top_k=3)
    assert result.mode == "masked" and len(result.steps) == 1
    assert [p for _, p in result.steps[0].top_k] == pytest.approx([v for _, _, v in expected.predictions[0].top_k])
    assert notebook.trace(str(folders["bert"]), "the dog runs").kinds == ("encoder_self",)


def test_decode_and_fill_say_which_command_fits_the_family(folders, capsys):
    assert main(["decode", str(folders["bert"]), "the dog runs"]) == 2
    assert "(fill)" in capsys.readouterr().err
    assert main(["fill", "checkpoints/reverse", "abc"]) == 2
    err = capsys.readouterr().err
    assert "is an encoder-decoder model" in err and "need an encoder-only model" in err
