"""The bad inputs of the robustness matrix, built once and fed to both the CLI and the app tests.

Each case names the issue's line it stands for and the words the user must see. A broken checkpoint is made by
copying a good one and damaging it; a bundle is that directory zipped the way a user would zip it.
"""
from __future__ import annotations

import gzip
import io
import json
import pickle
import shutil
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
from safetensors.torch import load_file, save_file

from transformer.data import TaskSpec, make_task
from transformer.model import default_configs
from transformer.store import bundle_bytes, save_checkpoint
from transformer.train import Trainer, checkpoint_from_trainer


class PickleBomb:
    """Unpickling this creates the file `marker`: proof that something executed the upload."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


# -- text typed into the app or passed to `decode` --------------------------------------------------------------
@dataclass(frozen=True)
class TextCase:
    """A hostile input: `refused` is the message when it cannot be decoded, else the token `unknown` is named."""

    text: str
    refused: str | None = None
    unknown: str | None = None
    app_refused: str | None = None  # where the app's message differs (its text boxes hold at most 10,000 chars)


TEXTS = {
    "empty": TextCase("", refused="The input is empty"),
    "whitespace only": TextCase(" \t \n  ", refused="The input is empty"),
    "200,000 characters": TextCase("x" * 200_000, refused="The input has 200,000 characters; this model reads at most",
                                   app_refused="The input has 10,000 characters; this model reads at most"),
    "outside the vocabulary": TextCase("ab1c", unknown="1"),
    "emoji": TextCase("ab😀c", unknown="😀"),
    "right-to-left": TextCase("abשלוםc", unknown="ש"),
    "control characters": TextCase("a\x1bb\u202ec\x07", unknown="\u202e"),
}


# -- broken checkpoints ----------------------------------------------------------------------------------------
def _edit_config(folder: Path, change: Callable[[dict], None]) -> None:
    config = json.loads((folder / "config.json").read_text())
    change(config)
    (folder / "config.json").write_text(json.dumps(config))


def _edit_weights(folder: Path, change: Callable[[dict], None]) -> None:
    tensors = load_file(folder / "model.safetensors")
    change(tensors)
    save_file(tensors, folder / "model.safetensors")


def _first(tensors: dict) -> str:
    return sorted(tensors)[0]


def _set_first(value: float) -> Callable[[dict], None]:
    return lambda t: t[_first(t)].view(-1).__setitem__(0, value)


def _pickle_model(folder: Path) -> None:
    (folder / "model.safetensors").write_bytes(pickle.dumps(PickleBomb(folder.parent / "PWNED")))


def _truncate_model(folder: Path) -> None:
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[: len(data) // 2])


def _scramble_model(folder: Path) -> None:
    data = bytearray((folder / "model.safetensors").read_bytes())
    data[8:40] = b"\xff" * 32  # the JSON header is garbage now
    (folder / "model.safetensors").write_bytes(bytes(data))


def _wrong_shape(folder: Path) -> None:
    _edit_weights(folder, lambda t: t.update({_first(t): torch.zeros(3, 3)}))


def _absurd_model(folder: Path) -> None:
    _edit_config(folder, lambda c: c["model_config"].update(d_model=10**7))


def _unknown_version(folder: Path) -> None:
    _edit_config(folder, lambda c: c.update(format_version=99))


def _malformed_records(folder: Path) -> None:
    _edit_config(folder, lambda c: c.update(metrics={"examples": 5, "loss": "low"}))
    (folder / "history.json").write_text(json.dumps({"history": [{"step": "x"}], "evals": []}))


BROKEN_CHECKPOINTS: dict[str, tuple[Callable[[Path], None], str]] = {
    "pickle disguised as model.safetensors": (_pickle_model, "model.safetensors: not a valid safetensors file"),
    "truncated weights": (_truncate_model, "model.safetensors: not a valid safetensors file"),
    "corrupt weights": (_scramble_model, "model.safetensors: not a valid safetensors file"),
    "shapes disagree with config.json": (_wrong_shape, "has shape [3, 3] but the model in config.json needs"),
    "absurd model (d_model 10^7)": (_absurd_model, "d_model must be between 1 and 1024, got 10000000"),
    "unknown format version": (_unknown_version, "format version 99 was written by a newer version"),
    "missing file": (lambda f: (f / "model.safetensors").unlink(), "model.safetensors: file is missing"),
    "malformed metrics and history": (_malformed_records, "metrics: loss must be a number, got 'low'"),
    "NaN weights": (lambda f: _edit_weights(f, _set_first(float("nan"))), "contains NaN or infinite values"),
    "inf weights": (lambda f: _edit_weights(f, _set_first(float("inf"))), "contains NaN or infinite values"),
}


def broken_checkpoint(good: Path, case: str, where: Path) -> Path:
    """A copy of checkpoint `good` under `where`, damaged as BROKEN_CHECKPOINTS[case] says."""
    folder = Path(shutil.copytree(good, where / "model"))
    BROKEN_CHECKPOINTS[case][0](folder)
    return folder


def zip_folder(folder: Path) -> bytes:
    """The checkpoint directory zipped as it is, damage included (bundle_bytes refuses broken ones)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(folder.iterdir()):
            zf.writestr(f"{folder.name}/{path.name}", path.read_bytes())
    return buffer.getvalue()


def _zip(entries: list[tuple[str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries:
            zf.writestr(name, data)
    return buffer.getvalue()


def _with_entry(good: Path, name: str, data: bytes) -> bytes:
    files = zipfile.ZipFile(io.BytesIO(bundle_bytes(good)))
    return _zip([(n, files.read(n)) for n in files.namelist()] + [(name, data)])


def _zip_bomb(good: Path) -> bytes:
    files = zipfile.ZipFile(io.BytesIO(bundle_bytes(good)))
    bomb = b'{"history": [], "evals": []}' + b" " * (16 * 2**20)
    return _zip([(n, files.read(n)) for n in files.namelist() if not n.endswith("history.json")]
                + [(f"{good.name}/history.json", bomb)])


HOSTILE_BUNDLES: dict[str, tuple[Callable[[Path], bytes], str]] = {
    "zip with ../ paths": (lambda g: _with_entry(g, "../../escape.json", b"{}"), "points outside the bundle"),
    "zip with absolute paths": (lambda g: _with_entry(g, "/tmp/escape.json", b"{}"), "absolute"),
    "zip bomb": (_zip_bomb, "compressed suspiciously well"),
}


# -- corpora -----------------------------------------------------------------------------------------------------
CORPORA: dict[str, tuple[dict[str, bytes], str]] = {
    "ragged rows": ({"pairs.tsv": b"ich bin\ti am\ndu bist\tyou are\textra\n"}, "line 2: expected exactly 2 columns"),
    "single column": ({"pairs.tsv": b"ich bin\ti am\njust one column\n"}, "line 2: expected 'source"),
    "empty file": ({"pairs.tsv": b""}, "no sentence pairs found"),
    "not UTF-8": ({"pairs.tsv": "ich bin\ti am\nça va\tit goes\n".encode("latin-1")},
                  "line 2: not valid UTF-8 text"),
    "aligned files with different line counts": ({"src.txt": b"ich bin\ndu bist\ner ist\n",
                                                  "tgt.txt": b"i am\nyou are\n"},
                                                 "aligned files differ in length"),
    "corrupt gzip": ({"pairs.tsv.gz": gzip.compress(b"ich bin\ti am\n" * 50)[:20]}, "is it a valid gzip"),
}


def write_corpus(case: str, where: Path) -> list[Path]:
    """The files of CORPORA[case] written under `where`, in order."""
    paths = []
    for name, data in CORPORA[case][0].items():
        (where / name).write_bytes(data)
        paths.append(where / name)
    return paths


# -- a word-level model (for words outside the vocabulary) -------------------------------------------------------
WORD_PAIRS = "\n".join(f"{de}\t{en}" for de, en in [("ich mochte ein bier", "i want a beer"),
                                                    ("ich mochte ein cola", "i want a coke"),
                                                    ("du mochtest ein bier", "you want a beer")])


def build_word_checkpoint(path: Path) -> Path:
    """A tiny word-level checkpoint (typed German -> English pairs), trained for two steps."""
    task = make_task(TaskSpec(name="corpus", text=WORD_PAIRS, tokenizer="word"))
    model_cfg, train_cfg = default_configs("corpus", task.src_tokenizer.vocab_size, task.tgt_tokenizer.vocab_size,
                                           model_overrides=dict(d_model=16, n_heads=2, n_encoder_layers=1,
                                                                n_decoder_layers=1, d_ff=32, max_len=16),
                                           train_overrides=dict(batch_size=3, eval_examples=3, max_steps=2))
    trainer = Trainer(task, model_cfg, train_cfg)
    trainer.run()
    trainer.evaluate()
    return save_checkpoint(checkpoint_from_trainer(trainer), path)
