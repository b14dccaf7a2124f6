"""`decode MODEL -` (standard input) and `decode --input-file FILE` (UTF-8 or .gz): the whole text is one input, up
to the model's own context; a long decoder-only prompt is decoded with the attention store (its tokens are
`generate`'s), the flags that need maps are refused by name, a file that is not UTF-8 text is one clear line."""
from __future__ import annotations

import gzip
import io
import json

import pytest
import torch

from tests.helpers.hf_causal_models import SIZE, build, lines
from transformer.cli import main
from transformer.store import open_model

LONG = "\n".join(lines(80))  # line breaks kept; well above 1,024 tokens of the toy tokenizer


@pytest.fixture(scope="module")
def qwen(tmp_path_factory):
    return build("qwen2", tmp_path_factory.mktemp("long_cli") / "qwen2", size={**SIZE, "positions": 8192})


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def stdin(monkeypatch, data: bytes) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


def test_standard_input_is_one_long_input_decoded_as_generate_does(qwen, capsys, monkeypatch, tmp_path):
    stdin(monkeypatch, LONG.encode("utf-8"))
    path = tmp_path / "t.json"
    code, out, err = run(capsys, "decode", qwen, "-", "--max-steps", "4", "--trace-json", path)
    assert code == 0, err
    data = json.loads(path.read_text())
    adapter = open_model(str(qwen))
    prompt = adapter.decoder_prefix(adapter.tokenize_source(LONG))
    assert len(prompt) > 2048  # past the studio's old cap of 2,048 tokens
    ids = torch.tensor([prompt])
    with adapter.running():
        want = adapter.model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=4)
    assert [s["token_id"] for s in data["steps"]] == want[0, len(prompt):].tolist()
    assert out.strip() == adapter.detokenize(want[0, len(prompt):].tolist()).strip()


def test_an_input_file_gz_or_plain_is_the_same_input_as_standard_input(qwen, capsys, monkeypatch, tmp_path):
    plain, packed = tmp_path / "doc.txt", tmp_path / "doc.txt.gz"
    plain.write_text(LONG, encoding="utf-8")
    packed.write_bytes(gzip.compress(LONG.encode("utf-8")))
    outs = [run(capsys, "decode", qwen, "--input-file", f, "--max-steps", "2")[1] for f in (plain, packed)]
    stdin(monkeypatch, LONG.encode("utf-8"))
    outs.append(run(capsys, "decode", qwen, "-", "--max-steps", "2")[1])
    assert outs[0] == outs[1] == outs[2] and outs[0].strip()


def test_a_file_that_is_not_utf8_text_is_one_clear_line(qwen, capsys, tmp_path):
    bad = tmp_path / "latin1.txt"
    bad.write_bytes("Grüße aus Köln".encode("latin-1"))
    code, out, err = run(capsys, "decode", qwen, "--input-file", bad)
    assert code == 2 and not out and err.count("\n") == 1 and "is not UTF-8 text" in err


def test_flags_that_need_maps_are_refused_by_name_at_long_inputs(qwen, capsys, tmp_path):
    doc = tmp_path / "doc.txt"
    doc.write_text(LONG, encoding="utf-8")
    code, _, err = run(capsys, "decode", qwen, "--input-file", doc, "--lens")
    assert code == 2 and "--lens: not available above 1,024 prompt tokens" in err


def test_text_and_input_file_together_or_neither_are_usage_errors(qwen, capsys, tmp_path):
    doc = tmp_path / "doc.txt"
    doc.write_text("A dog runs.", encoding="utf-8")
    assert "not both" in run(capsys, "decode", qwen, "A dog", "--input-file", doc)[2]
    assert "TEXT (or --input-file FILE" in run(capsys, "decode", qwen)[2]
    assert "no such file" in run(capsys, "decode", qwen, "--input-file", tmp_path / "none.txt")[2]


def test_a_short_input_from_standard_input_decodes_as_text_does(qwen, capsys, monkeypatch):
    stdin(monkeypatch, "A dog runs on the grass.\n".encode("utf-8"))
    piped = run(capsys, "decode", qwen, "-", "--max-steps", "3")
    typed = run(capsys, "decode", qwen, "A dog runs on the grass.\n", "--max-steps", "3")
    assert piped == typed and piped[0] == 0


def test_keep_chooses_what_the_trace_holds_at_any_length(qwen, capsys, tmp_path):
    stored, maps = tmp_path / "store.json", tmp_path / "maps.json"
    text = "A dog runs on the grass."
    assert run(capsys, "decode", qwen, text, "--max-steps", "3", "--keep", "store", "--trace-json", stored)[0] == 0
    assert run(capsys, "decode", qwen, text, "--max-steps", "3", "--trace-json", maps)[0] == 0
    a, b = json.loads(stored.read_text()), json.loads(maps.read_text())
    assert [s["token_id"] for s in a["steps"]] == [s["token_id"] for s in b["steps"]]
    assert a["target_tokens"] == b["target_tokens"] and "attention" in b
    code, _, err = run(capsys, "decode", qwen, text, "--keep", "store", "--lens")
    assert code == 2 and "--lens: not available with --keep store" in err
    code, out, err = run(capsys, "decode", "checkpoints/toy-en-de", "a dog", "--keep", "store")  # an encoder-decoder
    assert code != 0 and not out and err.count("\n") == 1 and "not a decoder-only model" in err
