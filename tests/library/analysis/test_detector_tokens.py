"""`detect_heads` reports the tokens the model read, and scores the heads on them: the ids reaching the model's
embedding are `Detection.tokens`, and the previous-token and induction scores recomputed from the model's own
weights over what it read (the repeat found from the tokens themselves) equal the detector's, for our decoder-only
models (whose prompt lives in the decoder inputs) and Hugging Face causal ones (one with a BOS token, one without).
On the shipped induction model `heads --long-range` and the finder name its previous-token and induction heads alike."""
from __future__ import annotations

import json
from functools import cache

import pytest
import torch

from tests.helpers import ROOT
from tests.helpers.hf_causal_models import build
from transformer.adapters import adapter_for
from transformer.analysis import corpus_statistics, detect_heads, head_finder_frame, long_range_heads
from transformer.cli import main
from transformer.model import Head
from transformer.store import load_checkpoint, open_model


@cache
def shipped(name: str):
    ckpt = load_checkpoint(ROOT / "checkpoints" / name, load_optimizer=False)
    return adapter_for(ckpt.model, ckpt.src_tokenizer, ckpt.tgt_tokenizer, name=name)


def _read(adapter) -> tuple[list[int], object]:
    """(the ids that reached the model's embedding during `detect_heads`, its Detection)."""
    network, seen = adapter.network, []
    if hasattr(network, "embed"):  # ours: JointEmbedding(ids, n_source), the prompt's part through src_embed
        module = network.embed
    else:
        module = network.get_input_embeddings()
    hook = module.register_forward_hook(lambda m, args, out: seen.append(args[0][0].tolist()))
    try:
        found = detect_heads(adapter)
    finally:
        hook.remove()
    (ids,) = seen
    return ids, found


def _weights(adapter, ids: list[int]) -> torch.Tensor:
    """(L, H, T, T) of the model's own forward over `ids`, outside the adapter."""
    network, x = adapter.network, torch.tensor([ids])
    with torch.no_grad():
        if hasattr(network, "embed"):
            maps = network.full(x[:, :0], x, True)[1]
        else:
            maps = network(input_ids=x, output_attentions=True).attentions
    return torch.stack([w[0] for w in maps]).float()


def _scores(ids: list[int], w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(previous-token, induction) per (L, H) from the read ids alone: the repeat starts at the first id that
    occurs again; the induction key of a second-copy query is right after that id's first occurrence."""
    start = next(p for p, i in enumerate(ids) if i in ids[p + 1:])
    n = (len(ids) - start) // 2
    assert ids[start:start + n] == ids[start + n:], "the detector's input is r r after its prefix"
    rows = torch.arange(start + 1, len(ids))
    previous = w[:, :, rows, rows - 1].mean(-1)
    queries = list(range(start + n, len(ids) - 1))
    keys = [ids.index(ids[q]) + 1 for q in queries]
    return previous, w[:, :, queries, keys].mean(-1)


def _check(adapter) -> object:
    ids, found = _read(adapter)
    assert list(found.tokens) == adapter.ids_to_tokens(ids)
    previous, induction = _scores(ids, _weights(adapter, ids))
    heads = found.frame[found.frame["head"] >= 0]
    for column, want in (("previous_token", previous), ("induction", induction)):
        got = torch.tensor([[float(heads[(heads["layer"] == layer) & (heads["head"] == head)][column].iloc[0])
                             for head in range(want.shape[1])] for layer in range(want.shape[0])])
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4)
    return found


@pytest.mark.parametrize("name", ["induction", "reverse-decoder-only"])
def test_our_decoder_only_models_read_the_tokens_the_detector_reports(name):
    _check(shipped(name))


def test_on_the_induction_model_its_named_heads_score_highest():
    found = _check(shipped("induction"))
    heads = found.frame[found.frame["head"] >= 0]
    best = {column: Head(found.kind, int(heads.loc[heads[column].idxmax(), "layer"]),
                         int(heads.loc[heads[column].idxmax(), "head"])).label
            for column in ("previous_token", "induction")}
    assert best == {"previous_token": "self:L1H2", "induction": "self:L2H2"}
    assert found.tokens[0] == "<s>" and len(found.tokens) == 1 + 2 * 24
    assert heads["induction"].max() >= 0.99  # on the right alignment the induction head is near certain


@pytest.mark.parametrize("family", ["llama", "gpt2"])  # a BOS in front, none
def test_hugging_face_causal_models_read_the_tokens_the_detector_reports(family, tmp_path):
    _check(open_model(str(build(family, tmp_path / family))))


def test_the_cli_and_the_finder_name_the_induction_models_heads_alike(capsys):
    folder = str(ROOT / "checkpoints" / "induction")
    assert main(["heads", folder, "--long-range", "--json"]) == 0
    detectors = json.loads(capsys.readouterr().out)["detectors"]
    assert detectors["induction_sequence"] == "random tokens repeated twice, 24 per copy"
    assert {name: best["label"] for name, best in detectors["best"].items()
            if name in ("previous_token", "induction")} == {"previous_token": "self:L1H2", "induction": "self:L2H2"}
    pattern = {h["label"]: h["pattern"] for h in detectors["pattern"]["heads"]}
    assert pattern["self:L1H2"] == "previous-token" and pattern["self:L2H2"] == "induction"
    adapter = shipped("induction")
    frame = head_finder_frame(corpus_statistics(adapter, ["A3t7 A3t7", "xq9 xq9"]),
                              long_range=long_range_heads(adapter))
    top = frame.loc[frame["induction"].idxmax()]
    assert top["label"] == "self:L2H2" and top["pattern"] == "induction"
    assert frame.set_index("label").loc["self:L1H2", "pattern"] == "previous-token"
