"""The command line on Hugging Face folders: decode with a trace, eval on parallel files, and one `error:` line
(exit 2) for every folder or hub id the studio refuses."""
from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import pytest
import sacrebleu
import torch

from tests.helpers import ROOT
from tests.helpers.hf_tiny_models import SIZE, _fast_tokenizer, _model, build, corpus
from tests.helpers.hostile_inputs import PickleBomb
from transformer.adapters import HFSeq2Seq
from transformer.cli import main
from transformer.decode import greedy_decode

TEXT = "the cat walks under the big tree"


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("hf")
    return {family: build(family, root / family) for family in ("marian", "bart")}


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_decode_prints_the_output_and_writes_the_trace_of_an_hf_folder(folders, capsys, tmp_path):
    trace = tmp_path / "trace.json"
    code, out, err = run(capsys, "decode", str(folders["marian"]), TEXT, "--max-steps", "10",
                         "--trace-json", str(trace))
    assert code == 0, err
    expected = greedy_decode(HFSeq2Seq.load(str(folders["marian"])), TEXT, max_steps=10)
    assert out.strip() == expected.output_text.strip()
    data = json.loads(trace.read_text())
    assert data["source_tokens"] == list(expected.trace.source_tokens) and data["source_tokens"][0].startswith("▁")
    assert data["output_tokens"] == list(expected.output_tokens)
    assert len(data["attention"]["cross"]) == 2 and len(data["attention"]["cross"][0]) == 2  # layers, heads


def test_eval_scores_any_model_on_parallel_files_like_sacrebleu(folders, capsys, tmp_path):
    lines = corpus(12, seed=3)
    (tmp_path / "s.txt").write_text("\n".join(lines) + "\n")
    (tmp_path / "t.txt").write_text("\n".join(reversed(lines)) + "\n")
    code, out, err = run(capsys, "eval", str(folders["bart"]), "--data", str(tmp_path / "s.txt"),
                         str(tmp_path / "t.txt"))
    assert code == 0, err
    scores = json.loads(out)
    adapter = HFSeq2Seq.load(str(folders["bart"]))
    hyps = [greedy_decode(adapter, line).output_text for line in lines]  # batched eval = one sentence at a time
    assert scores["n"] == 12
    assert scores["chrf"] == pytest.approx(sacrebleu.corpus_chrf(hyps, [list(reversed(lines))]).score)


def test_eval_of_an_hf_folder_without_data_says_what_to_give(folders, capsys):
    code, _, err = run(capsys, "eval", str(folders["bart"]))
    assert code == 2 and err.startswith("error: ") and "--data SRC TGT" in err and err.count("\n") == 1


def _copy(folders, name: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(folders[name], tmp_path / name))


def _pickled_weights(folder: Path) -> None:
    (folder / "model.safetensors").unlink()
    (folder / "pytorch_model.bin").write_bytes(pickle.dumps(PickleBomb(folder / "PWNED")))


def _edit_config(change):
    def edit(folder: Path) -> None:
        config = json.loads((folder / "config.json").read_text())
        change(config)
        (folder / "config.json").write_text(json.dumps(config))
    return edit


def _no_tokenizer(folder: Path) -> None:
    for name in ("source.spm", "target.spm", "vocab.json", "tokenizer_config.json", "tokenizer.json"):
        (folder / name).unlink(missing_ok=True)


def _small_vocab_model(folder: Path) -> None:
    for p in folder.iterdir():
        p.unlink()
    _model("bart", 10, SIZE).save_pretrained(folder)
    _fast_tokenizer("bart", corpus()).save_pretrained(folder)


REFUSED = {
    "pickle weights only": (_pickled_weights, "safetensors"),
    "remote code": (_edit_config(lambda c: c.update(auto_map={"AutoModel": "x.Y"})), "custom code"),
    "gpt2 config over other weights": (_edit_config(lambda c: c.update(model_type="gpt2")), "do not match"),
    "image model vit": (_edit_config(lambda c: c.update(model_type="vit")), "'vit' is not a text"),
    "bert config over other weights": (_edit_config(lambda c: c.update(model_type="bert")), "do not match"),
    "corrupt config": (lambda f: (f / "config.json").write_text("{ not json"), "not valid JSON"),
    "missing tokenizer": (_no_tokenizer, "no usable tokenizer"),
    "vocabulary mismatch": (_small_vocab_model, "do not belong together"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_each_bad_folder_is_refused_in_one_line(case, folders, capsys, tmp_path, monkeypatch):
    spoil, message = REFUSED[case]
    folder = _copy(folders, "marian", tmp_path)
    spoil(folder)
    capsys.readouterr()
    monkeypatch.setattr(torch, "load", lambda *a, **k: pytest.fail("torch.load was called"))
    code, out, err = run(capsys, "decode", str(folder), TEXT)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith("error: ") and message in err
    assert not (folder / "PWNED").exists()


def test_a_model_above_the_size_cap_is_refused_with_its_memory(folders, capsys):
    code, _, err = run(capsys, "decode", str(folders["marian"]), TEXT, "--max-params", "1000")
    assert code == 2 and "parameters" in err and "GiB" in err and "raise the cap" in err


def test_a_hub_id_that_is_not_cached_while_offline_gets_one_line(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    code, _, err = run(capsys, "decode", "nobody-here/no-such-model", TEXT)
    assert code == 2 and err.count("\n") == 1 and "offline" in err and "cache" in err


@pytest.mark.slow  # a fresh Python process imports torch and transformers: seconds
def test_a_marian_folder_refuses_an_over_long_input_in_one_line_without_library_noise(folders):
    """Only our own line reaches the terminal: no "Recommended: pip install sacremoses" when the Marian tokenizer
    loads, no tokenizer log line about a sequence longer than the model's maximum (we measure it and refuse)."""
    import subprocess
    import sys

    root = ROOT
    argv = [sys.executable, "-m", "transformer", "decode", str(folders["marian"]), " ".join([TEXT] * 100)]
    long = subprocess.run(argv, capture_output=True, text=True, cwd=root, timeout=120)
    assert long.returncode == 2 and long.stderr.startswith("error: The input has ") and long.stderr.count("\n") == 1
