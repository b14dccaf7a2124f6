"""Dictionaries (docs/dictionaries.md), best of runs: encoding a 512-token input with a 16,384-feature dictionary
on a 768-wide site (target <= 0.5 s), against the one (512 x 768) @ (768 x 16,384) product it is made of; a feature
QK table of a last-layer head of a random GPT-2 of gpt2's shape on a 60-token input once its path capture is kept
(target <= 1 s), against that capture and the plain QK table of the same cell; training a 512-feature dictionary on
the induction model's residual stream entering layer 2 to >= 0.9 explained variance (target <= 60 s), against
reading its activations.

Parts: `encode`, `qk`, `train`. `python -m bench.speed.dictionaries [part ...]`; one JSON line per part. Figures:
bench/README.md (the `speed/dictionaries` row).
"""
from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.common.measures import best_of  # noqa: E402
from transformer.adapters import HFCausalLM, adapter_for  # noqa: E402
from transformer.analysis import capture_path, qk_attribution  # noqa: E402
from transformer.dictionaries import (  # noqa: E402
    Dictionary,
    Site,
    TrainSettings,
    place,
    site_activations,
    task_texts,
    train_dictionary,
)
from transformer.model import Head  # noqa: E402
from transformer.store import open_model  # noqa: E402


def _random(site: Site, d_in: int, features: int, k: int | None = None) -> Dictionary:
    gen = torch.Generator().manual_seed(0)
    w_dec = torch.randn(features, d_in, generator=gen)
    w_dec /= w_dec.norm(dim=1, keepdim=True)
    return Dictionary(site, w_dec.T.contiguous(), torch.zeros(features) - 0.05, w_dec, torch.zeros(d_in),
                      "topk" if k else "relu", k)


def encode(folder: Path) -> dict:
    x = torch.randn(512, 768)
    out = {"part": "encode", "tokens": 512, "width": 768, "features": 16384}
    for activation, k in (("relu", None), ("topk", 64)):
        d = _random(Site.parse("resid:L6"), 768, 16384, k)
        _, seconds = best_of(lambda d=d: d.encode(x), 5)
        out[activation] = round(seconds, 4)
    _, product = best_of(lambda: x @ d.w_enc, 5)
    out.update(product_s=round(product, 4), vs_product=round(out["relu"] / product, 2))
    return out


def qk(folder: Path) -> dict:
    from transformers import GPT2Config, GPT2LMHeadModel

    from tests.helpers.hf_causal_models import build
    tiny = HFCausalLM.load(str(build("gpt2", folder)))
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=50257, n_embd=768, n_layer=12, n_head=12, n_positions=1024,
                                       attn_implementation="eager")).eval()
    adapter = adapter_for(model, tiny.tokenizer, name="random GPT-2, gpt2 shape")
    text = " ".join(["the big dog sees a red house near the small tree and"] * 5)
    ids = torch.tensor([adapter.tokenize_source(text).ids])
    cap, capture_s = best_of(lambda: capture_path(adapter, ids, ids), 1)
    head, n = Head("self", 11, 0), ids.shape[1]
    d = _random(Site.parse("resid:L12"), 768, 16384, 64)
    from transformer.dictionaries import feature_qk
    table, seconds = best_of(lambda: feature_qk(cap, head, n - 1, n // 2, [d]), 5)
    _, plain = best_of(lambda: qk_attribution(cap, head, n - 1, n // 2), 5)
    return {"part": "qk", "shape": "gpt2", "tokens": n, "features": 16384, "k": 64,
            "pairs": len(table.pairs()), "seconds": round(seconds, 4), "capture_s": round(capture_s, 3),
            "plain_qk_s": round(plain, 4), "vs_plain": round(seconds / plain, 2)}


def train(folder: Path) -> dict:
    adapter = open_model(str(ROOT / "checkpoints" / "induction"))
    where = place(Site.parse("resid:L2"), adapter)
    texts = task_texts(str(ROOT / "checkpoints" / "induction"), 1000)
    start = time.perf_counter()
    acts = site_activations(adapter, where, texts.texts)
    read_s = time.perf_counter() - start
    _, report = train_dictionary(acts.values, where.site, TrainSettings(512, k=8, steps=2000))
    return {"part": "train", "features": 512, "rows": len(acts), "read_s": round(read_s, 2),
            "train_s": round(report.seconds, 2), "explained_variance": round(report.explained_variance, 4),
            "l0": report.l0, "dead": report.dead, "vs_read": round(report.seconds / read_s, 2)}


PARTS = {"encode": encode, "qk": qk, "train": train}

if __name__ == "__main__":
    torch.set_grad_enabled(False)
    for name in sys.argv[1:] or list(PARTS):
        with tempfile.TemporaryDirectory() as tmp:
            with torch.enable_grad() if name == "train" else torch.no_grad():
                print(json.dumps(PARTS[name](Path(tmp) / name)), flush=True)
