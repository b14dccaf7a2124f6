"""`decode MODEL - --trace-json` on a long document: the trace keeps the store in its side file, and the decode
steps' rows recomputed from that file equal Hugging Face's own weights (an SDPA prefill, then eager one-query steps
that return their attention), every layer and head."""
from __future__ import annotations

import io
import json

import pytest
import torch
from transformers.cache_utils import DynamicCache

from tests.helpers.hf_causal_models import SIZE, build, lines
from transformer.cli import main
from transformer.decode import load_trace_json
from transformer.store import open_model

LONG = "\n".join(lines(80))  # ~3,200 tokens of the toy tokenizer: maps of 2 x 4 heads would be ~330 MB


@pytest.fixture(scope="module")
def qwen(tmp_path_factory):
    return build("qwen2", tmp_path_factory.mktemp("long_rows") / "qwen2", size={**SIZE, "positions": 8192})


def test_the_side_files_step_rows_are_hugging_faces_own(qwen, capsys, monkeypatch, tmp_path):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(LONG.encode("utf-8")), encoding="utf-8"))
    path = tmp_path / "t.json"
    assert main(["decode", str(qwen), "-", "--max-steps", "3", "--trace-json", str(path)]) == 0
    capsys.readouterr()
    data = json.loads(path.read_text())
    assert "attention" not in data and (tmp_path / data["store"]["file"]).is_file()
    back = load_trace_json(path)
    adapter = open_model(str(qwen))
    prompt = adapter.decoder_prefix(adapter.tokenize_source(LONG))
    fed = [*prompt, *(s.token_id for s in back.steps[:-1])]
    model, config = adapter.model, adapter.model.config
    before, tokens = config._attn_implementation, []
    try:
        with torch.no_grad():
            config._attn_implementation = "sdpa"
            cache = DynamicCache()
            model(input_ids=torch.tensor([prompt[:-1]]), past_key_values=cache, use_cache=True, logits_to_keep=1)
            config._attn_implementation = "eager"
            for position in range(len(prompt) - 1, len(fed)):
                out = model(input_ids=torch.tensor([[fed[position]]]), past_key_values=cache, use_cache=True,
                            output_attentions=True)
                tokens.append(int(out.logits[0, -1].argmax()))
                for layer, weights in enumerate(out.attentions):
                    for head in range(weights.shape[1]):
                        row = back.trace.store.tile("self", layer, head, [position])[0]
                        seen = weights.shape[-1]
                        torch.testing.assert_close(row[:seen], weights[0, head, 0].float(), atol=1e-6, rtol=1e-5)
                        assert not row[seen:].any()  # the keys after the row's position weigh nothing
    finally:
        config._attn_implementation = before
    assert tokens == [s.token_id for s in back.steps]
