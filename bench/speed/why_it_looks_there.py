"""Why it looks there at real sizes (docs/why-it-looks-there.md), random models of real shapes with the tiny test
tokenizer, a 20-word input, best of repeated runs: one QK table (a score taken apart) once the decode's path capture is
kept, for a last-layer head of each kind at bart-large's shape (target <= 0.5 s); the composition scores of every
earlier -> later pair and encoder -> cross at bart-large's shape (target <= 30 s); one step's route graph at
opus-mt's shape once the capture is kept (target <= 1 s). The baseline, measured in the same run: the 20-step greedy
decode with its path capture (what the kept capture costs once).

Parts: `qk`, `composition`, `routes`. `python -m bench.speed.why_it_looks_there [part ...]`; one JSON line per part.
Figures: bench/README.md, "Why it looks there".
"""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.common.measures import best_of  # noqa: E402
from bench.common.shapes import bart_large_shape, opus_size_marian  # noqa: E402
from transformer.analysis import composition_scores, decode_parts, qk_attribution, step_route  # noqa: E402
from transformer.model import Head  # noqa: E402

STEPS = 20
TEXT = "the big dog sees a red house near the small tree and the green bird eats a fish under the blue sky"


def qk(folder: Path) -> dict:
    adapter = bart_large_shape(folder)
    parts, capture_s = best_of(lambda: decode_parts(adapter, TEXT, max_steps=STEPS), 1)
    n_src, n_dec = len(parts.source_tokens), len(parts.decoder_tokens)
    out = {"part": "qk", "shape": "bart-large", "source_tokens": n_src, "decoder_tokens": n_dec,
           "capture_s": round(capture_s, 3), "capture_mb": round(parts.capture.insides.nbytes() / 2 ** 20, 1)}
    for head, query, key in ((Head("cross", 11, 0), n_dec - 1, n_src // 2), (Head("decoder_self", 11, 0), n_dec - 1, 1),
                             (Head("encoder_self", 11, 0), n_src - 1, n_src // 2)):
        table, seconds = best_of(lambda head=head, query=query, key=key: qk_attribution(parts.capture, head, query,
                                                                                          key), 5)
        out[head.label] = {"seconds": round(seconds, 4), "pairs": len(table.pairs()),
                           "vs_capture": round(seconds / capture_s, 4)}
    return out


def composition(folder: Path) -> dict:
    """The scores, against the 20-step decode with its capture and against one (1024 x 1024) @ (1024 x 1024) fp32
    product (the unit the scores are made of: one per writing layer, reading layer and type)."""
    adapter = bart_large_shape(folder)
    _, decode_s = best_of(lambda: decode_parts(adapter, TEXT, max_steps=STEPS), 1)
    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    _, gemm_s = best_of(lambda: a @ b, 5)
    frame, seconds = best_of(lambda: composition_scores(adapter), 1)
    products = sum(frame[m].notna().sum() for m in ("q", "k", "v")) // 256  # 16 x 16 heads a product
    return {"part": "composition", "shape": "bart-large", "pairs": len(frame), "seconds": round(seconds, 2),
            "decode_and_capture_s": round(decode_s, 2), "vs_decode": round(seconds / decode_s, 2),
            "products": int(products), "product_s": round(gemm_s, 4),
            "vs_products": round(seconds / (products * gemm_s), 2)}


def routes(folder: Path) -> dict:
    adapter = opus_size_marian(folder)
    parts, capture_s = best_of(lambda: decode_parts(adapter, TEXT, max_steps=STEPS), 1)
    step = parts.n_steps
    (found, _), seconds = best_of(lambda: step_route(parts, step), 3)  # a fresh graph each time: nothing reused
    return {"part": "routes", "shape": "opus-mt", "step": step, "edges": len(found.edges), "nodes": len(found.nodes),
            "seconds": round(seconds, 3), "capture_s": round(capture_s, 3), "vs_capture": round(seconds / capture_s, 3)}


PARTS = {"qk": qk, "composition": composition, "routes": routes}

if __name__ == "__main__":
    torch.set_grad_enabled(False)
    for name in sys.argv[1:] or list(PARTS):
        with tempfile.TemporaryDirectory() as tmp:
            print(json.dumps(PARTS[name](Path(tmp) / name)), flush=True)
