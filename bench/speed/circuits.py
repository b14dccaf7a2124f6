"""Circuits (issue 50): EAP on shipped models against one forward and backward of the model itself; EAP-IG with 5
steps at GPT-2 small's shape (random weights, 144 heads, a 20-token pair) and the faithfulness curve (MIB's grid of 10
edge counts plus the bisection to the smallest circuit at 0.8) against one forward and backward of the same model on
the same input; all in one run.

`python -m bench.speed.circuits` (both parts); `... circuits shipped` or `... circuits gpt2` for one.
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.common.measures import best_of  # noqa: E402
from transformer.adapters import InspectableModel, adapter_for  # noqa: E402
from transformer.analysis.circuits import (  # noqa: E402
    baseline,
    edge_scores,
    faithfulness,
    pair_from_ids,
    pair_from_text,
)
from transformer.analysis.circuits.target import Pair  # noqa: E402
from transformer.store import open_model  # noqa: E402

SHIPPED = (("reverse", "abcdefghij", "abcdefghik"), ("reverse-decoder-only", "abcdefghij", "abcdefghik"),
           ("sort", "hello", "hellz"))


def _forward_backward(adapter: InspectableModel, pair: Pair, repeats: int = 3) -> float:
    """The best of `repeats` of one forward and one backward of the model on the clean input (the metric's logits)."""
    best = float("inf")
    src, tgt = pair.clean.src, pair.clean.tgt
    for _ in range(repeats):
        start = time.perf_counter()
        with adapter.differentiable():
            logits = (adapter.teacher_logits(adapter.network, src, tgt) if tgt is not None else
                      adapter.insides(src, None).logits)[0, -1]
            (logits[pair.answer] - logits[pair.contrast]).backward()
        adapter.network.zero_grad(set_to_none=True)
        best = min(best, time.perf_counter() - start)
    return best


def shipped() -> None:
    for name, clean, corrupted in SHIPPED:
        adapter = open_model(str(ROOT / "checkpoints" / name))
        pair = pair_from_text(adapter, clean, corrupted)
        base = _forward_backward(adapter, pair)
        _, eap = best_of(lambda: edge_scores([pair], "eap"))  # noqa: B023
        _, ig = best_of(lambda: edge_scores([pair], "eap-ig"))  # noqa: B023
        print(f"{name:>22}: {pair.clean.graph.n_edges:>5} edges; EAP {eap:.3f} s ({eap / base:.1f}x one forward and "
              f"backward, {base * 1000:.1f} ms); EAP-IG 5 steps {ig:.3f} s ({ig / base:.1f}x)")


def gpt2() -> None:
    from transformers import GPT2Config, GPT2LMHeadModel

    from tests.helpers.hf_causal_models import build
    folder = Path(tempfile.mkdtemp())
    tiny = open_model(str(build("gpt2", folder / "gpt2")))
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12, n_head=12,
                                       attn_implementation="eager")).eval()
    adapter = adapter_for(model, tiny.tokenizer, name="random GPT-2, gpt2 small shape")  # type: ignore[attr-defined]
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(100, 8000, (1, 20), generator=gen)
    other = ids.clone()
    other[0, 10] = (other[0, 10] + 1) % 8000
    empty = torch.zeros(1, 0, dtype=torch.long)
    pair = pair_from_ids(adapter, (empty, empty), (ids, other), 19, contrast=int(ids[0, 5]))
    base = _forward_backward(adapter, pair)
    scores, ig = best_of(lambda: edge_scores([pair], "eap-ig"), repeats=2)
    _, eap = best_of(lambda: edge_scores([pair], "eap"), repeats=2)
    start = time.perf_counter()
    found = faithfulness([pair], scores, base=baseline([pair]))  # type: ignore[arg-type]
    curve = time.perf_counter() - start
    print(f"GPT-2 small shape, 20 tokens, {pair.clean.graph.n_edges:,} edges: one forward and backward "
          f"{base * 1000:.0f} ms; EAP {eap:.2f} s ({eap / base:.1f}x); EAP-IG 5 steps {ig:.2f} s ({ig / base:.1f}x; "
          f"target <= 20x, <= 60 s); faithfulness curve ({len(found.points) - 1} circuits run) {curve:.2f} s "
          f"({curve / ig:.2f}x EAP-IG; target <= 2x)")


if __name__ == "__main__":
    parts = sys.argv[1:] or ["shipped", "gpt2"]
    for part in parts:
        {"shipped": shipped, "gpt2": gpt2}[part]()
